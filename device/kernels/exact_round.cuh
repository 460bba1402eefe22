// The one rounding of an EXACT GEMM result on the device (NUMERICS.md §3.20.3):
// RN(α·T·2^-20 + β·C) for the integer block sum T, with the special values of §3.20.3. Written
// apart from the reference's Boost version (reference/exact_round.cpp) on purpose: the
// differential test compares two independent roundings. The argument is in docs/design/gemm-kernel.md.
#pragma once

#include <cstdint>

#include "reference/arith.h"

namespace nvfp4::device::exact {

// An unsigned integer of L 64-bit limbs, least significant first.
template <int L>
struct UInt {
  std::uint64_t w[L];
};

template <int L>
__device__ __forceinline__ UInt<L> uint_of(std::uint64_t lo, std::uint64_t hi) {
  UInt<L> r{};
  r.w[0] = lo;
  r.w[1] = hi;
  return r;
}

// x << s and x >> s for 0 <= s < 64·L (bits shifted out are dropped). Whole limbs move in a
// logarithmic cascade with constant indices, so that x stays in registers (a runtime limb index
// would put it in local memory).
template <int L>
__device__ __forceinline__ UInt<L> shl(UInt<L> x, int s) {
#pragma unroll
  for (int limbs = 1; limbs < L; limbs *= 2)
    if (s & (64 * limbs)) {
#pragma unroll
      for (int i = L - 1; i >= 0; --i) x.w[i] = i >= limbs ? x.w[i - limbs] : 0;
    }
  if (const int b = s & 63) {
#pragma unroll
    for (int i = L - 1; i > 0; --i) x.w[i] = (x.w[i] << b) | (x.w[i - 1] >> (64 - b));
    x.w[0] <<= b;
  }
  return x;
}

template <int L>
__device__ __forceinline__ UInt<L> shr(UInt<L> x, int s) {
#pragma unroll
  for (int limbs = 1; limbs < L; limbs *= 2)
    if (s & (64 * limbs)) {
#pragma unroll
      for (int i = 0; i < L; ++i) x.w[i] = i + limbs < L ? x.w[i + limbs] : 0;
    }
  if (const int b = s & 63) {
#pragma unroll
    for (int i = 0; i + 1 < L; ++i) x.w[i] = (x.w[i] >> b) | (x.w[i + 1] << (64 - b));
    x.w[L - 1] >>= b;
  }
  return x;
}

template <int L>
__device__ __forceinline__ UInt<L> add(const UInt<L>& a, const UInt<L>& b) {
  UInt<L> r;
  std::uint64_t carry = 0;
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const std::uint64_t s = a.w[i] + b.w[i];
    r.w[i] = s + carry;
    carry = (s < a.w[i]) | (r.w[i] < s);
  }
  return r;
}

// a - b for a >= b.
template <int L>
__device__ __forceinline__ UInt<L> sub(const UInt<L>& a, const UInt<L>& b) {
  UInt<L> r;
  std::uint64_t borrow = 0;
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const std::uint64_t d = a.w[i] - b.w[i];
    r.w[i] = d - borrow;
    borrow = (a.w[i] < b.w[i]) | (d < borrow);
  }
  return r;
}

template <int L>
__device__ __forceinline__ bool less(const UInt<L>& a, const UInt<L>& b) {
#pragma unroll
  for (int i = L - 1; i >= 0; --i)
    if (a.w[i] != b.w[i]) return a.w[i] < b.w[i];
  return false;
}

// Index of the most significant set bit; -1 for zero.
template <int L>
__device__ __forceinline__ int msb(const UInt<L>& x) {
#pragma unroll
  for (int i = L - 1; i >= 0; --i)
    if (x.w[i]) return 64 * i + 63 - __clzll(static_cast<long long>(x.w[i]));
  return -1;
}

template <int L>
__device__ __forceinline__ bool equal(const UInt<L>& a, const UInt<L>& b) {
  bool same = true;
#pragma unroll
  for (int i = 0; i < L; ++i) same &= a.w[i] == b.w[i];
  return same;
}

// ±mag·2^exp, exactly.
template <int L>
struct Dyadic {
  bool negative;
  UInt<L> mag;
  int exp;
};

// RN(±mag·2^exp) to binary32: RNE, gradual underflow, overflow to ±inf. A zero magnitude is
// +0.0 (an exact zero result, §3.20.3); a nonzero value that underflows keeps its sign.
// The shift to the last significand bit must stay below 64·L (the callers' ranges keep it so).
template <int L>
__device__ __forceinline__ float round_to_binary32(const Dyadic<L>& v) {
  const int top = msb(v.mag);
  if (top < 0) return 0.0f;
  // Exponent of the result's last significand bit: 24 significant bits, or the subnormal step.
  const int lsb = max(top + v.exp - 23, -149);
  const int shift = lsb - v.exp;
  std::uint64_t q;
  if (shift <= 0) {
    q = v.mag.w[0] << -shift;  // exact: fewer than 24 bits
  } else {
    const UInt<L> kept = shr(v.mag, shift - 1);  // the significand and the round bit
    q = kept.w[0] >> 1;                          // below 2^24 by the choice of lsb
    const bool half = (kept.w[0] & 1u) != 0, sticky = !equal(shl(kept, shift - 1), v.mag);
    if (half && ((q & 1u) || sticky)) ++q;
  }
  // q·2^lsb as binary32 bits: a carry out of the significand moves into the exponent field, and a
  // subnormal (lsb = -149, q < 2^23) gets exponent field 0.
  std::uint64_t bits = (std::uint64_t(lsb + 149) << 23) + q;
  if (bits >= 0x7F800000u) bits = 0x7F800000u;
  return float_of(std::uint32_t(bits) | (v.negative ? 0x80000000u : 0u));
}

// A finite binary32 x = ±m·2^e with the integer significand m < 2^24.
struct FloatParts {
  bool negative;
  std::uint32_t m;
  int e;
};
__device__ __forceinline__ FloatParts parts_of(float x) {
  const std::uint32_t b = bits_of(x), field = (b >> 23) & 0xFFu, f = b & 0x7FFFFFu;
  return {(b >> 31) != 0, field ? f | 0x800000u : f, field ? int(field) - 150 : -149};
}

// α·T·2^-20 for finite α: at most 24 + 63 bits.
__device__ __forceinline__ Dyadic<2> alpha_times(float alpha, long long t) {
  const FloatParts a = parts_of(alpha);
  const std::uint64_t mt = t < 0 ? 0ull - std::uint64_t(t) : std::uint64_t(t);
  return {a.negative != (t < 0), uint_of<2>(mt * a.m, __umul64hi(mt, a.m)), a.e - 20};
}

// x + y exactly when their unit exponents differ by at most kWindow, else the tiny term replaced
// by a sticky stand-in (docs/design/gemm-kernel.md): the rounding of the sum is the same.
__device__ __forceinline__ Dyadic<4> exact_sum(Dyadic<4> x, Dyadic<4> y) {
  constexpr int kWindow = 160, kStandIn = 30;
  if (msb(x.mag) < 0) return y;
  if (msb(y.mag) < 0) return x;
  if (x.exp < y.exp) {  // x: the larger unit exponent
    const Dyadic<4> t = x;
    x = y;
    y = t;
  }
  if (x.exp - y.exp > kWindow) {  // |y| < 2^(x.exp - 73): below every boundary spacing near x
    y.mag = uint_of<4>(1, 0);
    y.exp = x.exp - kStandIn;
  }
  x.mag = shl(x.mag, x.exp - y.exp);  // < 2^(87 + 160)
  if (x.negative == y.negative) return {x.negative, add(x.mag, y.mag), y.exp};
  if (less(x.mag, y.mag)) return {y.negative, sub(y.mag, x.mag), y.exp};
  return {x.negative, sub(x.mag, y.mag), y.exp};
}

// RN(α·T·2^-20) in binary64 for finite α, when that decides it (else false, and the caller
// rounds exactly): 0 < |T| < 2^53, so T and α are binary64 numbers; p = RN64(α·T) and the error
// e = α·T − p is exact (one FMA; the product is far above binary64's underflow). Every binary32
// rounding boundary (a midpoint between neighbours, the overflow threshold) in binary32's normal
// range is a binary64 number whose bits below binary32's last significand bit are 100…0. RN64 is
// monotone and |e| is at most half a binary64 step, so unless y = p·2^-20 is such a boundary (with
// e ≠ 0), the exact value and y lie strictly on the same side of every boundary and round to
// the same binary32, which the hardware conversion gives. With e = 0, y is exact. Results below
// 2^-126 (binary32's subnormal range, where boundaries sit elsewhere) are left to the exact path.
__device__ __forceinline__ bool round_product_fast(float alpha, long long t, float& out) {
  constexpr long long kExact = 1ll << 53;
  if (t == 0 || t >= kExact || t <= -kExact) return false;
  const double a = double(alpha), x = __ll2double_rn(t);
  const double p = __dmul_rn(a, x), e = __fma_rn(a, x, -p);
  const double y = __dmul_rn(p, 0x1p-20);  // exact: |y| >= 2^-169
  const std::uint64_t b = std::uint64_t(__double_as_longlong(y)) & 0x7FFFFFFFFFFFFFFFull;
  if (b < (std::uint64_t(1023 - 126) << 52)) return false;
  if (e != 0.0 && (b & 0x1FFFFFFFull) == 0x10000000ull) return false;  // y is a boundary
  out = __double2float_rn(y);
  return true;
}

// D_EXACT of one output (§3.20.3), always by exact integer arithmetic. has_c: β is given and
// nonzero (otherwise C is never read and `c` is ignored). Not inlined: callers inline only
// gemm_value's binary64 path, which decides almost every output, and call this for the rest.
__device__ __noinline__ float gemm_value_exact(bool nan_operand, long long t, float alpha, bool has_c, float beta, float c) {
  if (nan_operand || is_nan(alpha)) return canonical_nan();
  const float inf = float_of(0x7F800000u);
  bool infinite = false, negative_inf = false;  // an infinite term so far, IEEE rules
  if (abs_f(alpha) == inf) {
    if (t == 0) return canonical_nan();  // inf · 0
    infinite = true;
    negative_inf = sign_bit(alpha) != (t < 0);
  }
  if (has_c && (is_nan(beta) || is_nan(c))) return canonical_nan();
  if (has_c && (abs_f(beta) == inf || abs_f(c) == inf)) {
    if (beta == 0.0f || c == 0.0f) return canonical_nan();  // inf · 0
    const bool neg = sign_bit(beta) != sign_bit(c);
    if (infinite && neg != negative_inf) return canonical_nan();  // inf - inf
    infinite = true;
    negative_inf = neg;
  }
  if (infinite) return negative_inf ? -inf : inf;
  const Dyadic<2> product = alpha_times(alpha, t);
  if (!has_c) return round_to_binary32(product);
  const FloatParts b = parts_of(beta), cc = parts_of(c);
  const Dyadic<4> bc{b.negative != cc.negative, uint_of<4>(std::uint64_t(b.m) * cc.m, 0), b.e + cc.e};
  return round_to_binary32(exact_sum({product.negative, uint_of<4>(product.mag.w[0], product.mag.w[1]), product.exp}, bc));
}

// D_EXACT of one output (§3.20.3): the common case (no C, finite α, no NaN operand) in binary64
// where that decides it, everything else exactly.
__device__ __forceinline__ float gemm_value(bool nan_operand, long long t, float alpha, bool has_c, float beta, float c) {
  float fast;
  if (!nan_operand && !has_c && abs_f(alpha) < float_of(0x7F800000u) && round_product_fast(alpha, t, fast)) return fast;
  return gemm_value_exact(nan_operand, t, alpha, has_c, beta, c);
}

}  // namespace nvfp4::device::exact
