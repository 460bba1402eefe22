// The arithmetic of the 16-point random Hadamard transform (docs/NUMERICS.md §3.19) on a chunk of
// 16 BF16 values, as its canonical definition: the exact sum of 16 products, one rounding to
// binary32, then RNE to BF16. No tensor cores, whose accumulation rounding is unspecified. The
// kernels (hadamard.cu, hadamard_quantize.cu) sum the chunks of two adjacent columns at a time.
//
// Exactness. A finite BF16 x[k] = m * 2^q (|m| < 2^8); the butterflies sum the signed inputs
// s_k * H[k][n] * x[k] unscaled and multiply each sum T by 0.25, which is exact (T is a multiple
// of 2^-133, 0.25 * T of 2^-135, above binary32's 2^-149). When the nonzero inputs' exponents span
// at most S binades, every partial sum of up to 16 signed inputs is a multiple of 2^qmin below
// 2^(qmax+12) in magnitude: at most S + 12 significant bits. So a butterfly is exact in binary32
// for S <= 12 (24 bits; and no partial sum overflows while |x| < 2^124, BF16 exponent field <= 250),
// which holds for almost every chunk of real tensors, and in binary64 for S <= 41 (53 bits), where
// one conversion to binary32 is the single rounding of the exact sum. For 12 < S <= 25 two binary32
// butterflies, over the inputs of the top 13 fields and over the others (each spans at most 12),
// sum exactly, and one binary32 addition of the two sums is that single rounding; normal data has
// a value below 2^-12 of its chunk's largest in about 1 % of chunks (Rht16Binary32Bound in
// tests/hadamard_test.cpp checks both bounds against binary64, and that 13 binades or field 251 can
// fail). A wider span (or an infinity) takes the fixed-point path: the sum in units of 2^-135 in 9
// 32-bit limbs (it needs 265 bits), rounded to binary32 by hand. The binary32 paths are inlined;
// the binary64 and fixed-point ones are not, and run after a thread's loop, so that the kernels
// stay small and the loop keeps its registers. An exact zero takes its sign from the products
// (-0.0 only when every product is -0.0): a chunk of zeros takes it from its signs alone
// (zero_chunk); in any other chunk a zero sum is +0.0, although the butterfly's grouping,
// (a) - (b + c), can give -0.0. A NaN input makes every output NaN, on every path.
//
// [knob RHT] MMA_SM90, the sums of one BF16 tensor-core instruction (a framework's x @ H), takes
// rht16_mma on every chunk: the kernels send all chunks down their out-of-line path then.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

#include "device/kernels/element_io.cuh"
#include "device/kernels/mma_chain.cuh"
#include "reference/arith.h"
#include "reference/half_float.h"
#include "reference/profile.h"

// The out-of-line paths (round_limbs, exact_output, rht16_wide, rht16_mma, rht_pair_wide) are static: each
// kernel translation unit keeps its own internal copy.
namespace nvfp4::device::hadamard {

constexpr std::uint16_t kBf16Nan = 0x7FFF;  // RNbf16 of the canonical NaN
constexpr int kSpanForBinary32 = 12;        // the exactness bounds above
constexpr int kMaxFieldForBinary32 = 250;
constexpr int kSpanForBinary64 = 41;
constexpr int kLimbs = 9;                // 288 bits >= 265
constexpr int kFixedLsbExponent = -135;  // the fixed-point unit: 2^-133 (BF16 subnormal step) * 0.25

// The BF16 exponent field with subnormals counted as 1: values of one field share a 2^q grid.
__device__ __forceinline__ int grid_exponent(std::uint16_t b) { return max(int((b >> 7) & 0xFF), 1); }

__device__ __forceinline__ bool coefficient_negative(int k, int n, std::uint16_t mask) {
  return ((__popc(k & n) & 1) != 0) != (((mask >> k) & 1) != 0);
}

// RN to binary32 of the 288-bit two's-complement fixed-point number `limb` (units of 2^-135).
static __device__ float round_limbs(std::uint32_t (&limb)[kLimbs], bool negative) {
  if (negative) {  // negate: invert and add one
    std::uint64_t carry = 1;
    for (int l = 0; l < kLimbs; ++l) {
      const std::uint64_t v = std::uint64_t(~limb[l]) + carry;
      limb[l] = std::uint32_t(v);
      carry = v >> 32;
    }
  }
  int top = kLimbs - 1;
  while (top >= 0 && limb[top] == 0) --top;
  if (top < 0) return 0.0f;
  const int p = 32 * top + 31 - __clz(limb[top]);  // the most significant set bit
  // w: the 64 bits whose top bit is bit p; sticky: whether any bit below them is set.
  const int shift = p - 63;
  std::uint64_t w = 0;
  bool sticky = false;
  auto bit_range = [&](int lo) {  // bits [lo, lo + 64) for lo >= 0
    std::uint64_t r = 0;
    for (int b = 0; b < 3; ++b) {
      const int l = lo / 32 + b;
      if (l >= kLimbs) break;
      const int at = 32 * l - lo;  // where limb l's bit 0 lands in r
      if (at >= 64) break;
      r |= at >= 0 ? std::uint64_t(limb[l]) << at : std::uint64_t(limb[l]) >> -at;
    }
    return r;
  };
  if (shift >= 0) {
    w = bit_range(shift);
    for (int l = 0; l < shift / 32; ++l) sticky |= limb[l] != 0;
    sticky |= (limb[shift / 32] & ((1u << (shift % 32)) - 1u)) != 0;
  } else {
    w = bit_range(0) << -shift;
  }
  std::uint32_t mant = std::uint32_t(w >> 40);  // 24 bits with the leading one at bit 23
  const std::uint64_t rest = w & ((std::uint64_t(1) << 40) - 1), half = std::uint64_t(1) << 39;
  int exponent = p - 23 + kFixedLsbExponent;
  if (rest > half || (rest == half && (sticky || (mant & 1u)))) {
    if (++mant == (1u << 24)) {
      mant >>= 1;
      ++exponent;
    }
  }
  const float v = scalbnf(float(mant), exponent);  // exact, or +inf past FLT_MAX
  return negative ? -v : v;
}

// Output n of the chunk by the fixed-point path (any span, infinities), for a chunk with a nonzero input.
static __device__ float exact_output(const std::uint16_t (&x)[16], int n, std::uint16_t mask) {
  std::int64_t acc[kLimbs] = {};
  bool plus_inf = false, minus_inf = false;
  for (int k = 0; k < 16; ++k) {
    const std::uint16_t b = x[k];
    const bool negative = coefficient_negative(k, n, mask) != ((b >> 15) != 0);
    const int e = (b >> 7) & 0xFF;
    const std::uint32_t f = b & 0x7F;
    if (e == 0xFF) {  // infinity (NaN was handled by the caller)
      (negative ? minus_inf : plus_inf) = true;
      continue;
    }
    if ((b & 0x7FFF) == 0) continue;
    const std::uint64_t m = e == 0 ? f : (f | 0x80u);
    const int sh = e == 0 ? 0 : e - 1;  // |product| = m * 2^sh units
    const std::uint64_t v = m << (sh % 32);
    const int l = sh / 32;
    const std::int64_t lo = std::int64_t(v & 0xFFFFFFFFu), hi = std::int64_t(v >> 32);
    acc[l] += negative ? -lo : lo;
    if (hi) acc[l + 1] += negative ? -hi : hi;
  }
  if (plus_inf && minus_inf) return canonical_nan();
  if (plus_inf || minus_inf) return plus_inf ? INFINITY : -INFINITY;
  std::uint32_t limb[kLimbs];
  std::int64_t carry = 0;
  bool zero = true;
  for (int l = 0; l < kLimbs; ++l) {
    const std::int64_t v = acc[l] + carry;
    limb[l] = std::uint32_t(v);
    carry = v >> 32;  // arithmetic: -1 carries a borrow
    zero = zero && limb[l] == 0;
  }
  if (zero && carry == 0) return 0.0f;  // some input is nonzero (zero chunks never come here): +0.0
  return round_limbs(limb, carry < 0);
}

// s_k * x for input k: the butterflies below sum the signed inputs and multiply the sums by 0.25.
template <class T>
__device__ __forceinline__ T signed_input(T x, int k, std::uint16_t mask) {
  return ((mask >> k) & 1) ? -x : x;
}

__device__ __forceinline__ float sum_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float difference_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sum_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double difference_rn(double a, double b) { return __dsub_rn(a, b); }

// Fast Walsh-Hadamard butterfly in Sylvester order: d[n] = sum_k (-1)^popcount(k&n) d[k], each
// addition rounded in T (exact within the bounds above).
template <class T>
__device__ __forceinline__ void butterfly16(T (&d)[16]) {
#pragma unroll
  for (int h = 1; h < 16; h *= 2)
#pragma unroll
    for (int i = 0; i < 16; ++i)
      if ((i & h) == 0) {
        const T a = d[i], b = d[i + h];
        d[i] = sum_rn(a, b);
        d[i + h] = difference_rn(a, b);
      }
}

// A chunk's 16 BF16 values (inputs or outputs) as pairs: word i holds value 2i in its low half and
// 2i + 1 in its high half, the order of memory. Passed by value to the out-of-line paths, so that
// the common path keeps it in registers.
struct Bf16x16 {
  std::uint32_t pair[8];
  __device__ __forceinline__ std::uint16_t bits(int k) const { return std::uint16_t(pair[k / 2] >> (16 * (k % 2))); }
  __device__ __forceinline__ float value(int k) const { return bf16_half_of_word(pair[k / 2], k % 2); }
  __device__ __forceinline__ void unpack(std::uint16_t (&v)[16]) const {
#pragma unroll
    for (int k = 0; k < 16; ++k) v[k] = bits(k);
  }
  __device__ __forceinline__ std::uint32_t signs() const {  // bit k: the sign of value k
    std::uint32_t s = 0;
#pragma unroll
    for (int k = 0; k < 16; ++k) s |= std::uint32_t(bits(k) >> 15) << k;
    return s;
  }
};

// The outputs of a chunk of zeros from their sign bits (bit k: x[k]'s). Output n is -0.0 exactly
// when every product is -0.0, that is when bit k of signs ^ ~mask is parity(k & n) for every k;
// these parity rows differ for different n, so at most one output is -0.0: the n whose row is that
// of bits 1, 2, 4, 8 (parity(2^b & n) is bit b of n).
__device__ __forceinline__ Bf16x16 zero_chunk(std::uint32_t signs, std::uint16_t mask) {
  const std::uint32_t p = (signs ^ ~std::uint32_t(mask)) & 0xFFFFu;
  const int n = int((p >> 1) & 1u) | int((p >> 2) & 1u) << 1 | int((p >> 4) & 1u) << 2 | int((p >> 8) & 1u) << 3;
  const std::uint32_t row = (n & 1 ? 0xAAAAu : 0u) ^ (n & 2 ? 0xCCCCu : 0u) ^ (n & 4 ? 0xF0F0u : 0u) ^ (n & 8 ? 0xFF00u : 0u);
  Bf16x16 y;
#pragma unroll
  for (int i = 0; i < 8; ++i) y.pair[i] = p == row && n / 2 == i ? 0x8000u << (16 * (n % 2)) : 0u;
  return y;
}

// The 16 outputs of the chunk x by the binary64 or the fixed-point path.
static __device__ __noinline__ Bf16x16 rht16_wide(Bf16x16 x, std::uint16_t mask) {
  std::uint16_t v[16], y[16];
  x.unpack(v);
  bool nan = false, inf = false;
  int lo = 0xFF, hi = 0;
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const bool special = ((v[k] >> 7) & 0xFF) == 0xFF;
    nan |= special && (v[k] & 0x7F) != 0;
    inf |= special && (v[k] & 0x7F) == 0;
    if ((v[k] & 0x7FFF) != 0) {
      lo = min(lo, grid_exponent(v[k]));
      hi = max(hi, grid_exponent(v[k]));
    }
  }
  if (hi == 0) return zero_chunk(x.signs(), mask);
  if (nan) {
#pragma unroll
    for (int n = 0; n < 16; ++n) y[n] = kBf16Nan;
  } else if (!inf && hi - lo <= kSpanForBinary64) {
    double d[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) d[k] = signed_input(double(bf16_to_float(v[k])), k, mask);
    butterfly16(d);
    // 0.25 * T is exact; some input is nonzero, so an exact-zero sum is +0.0, which adding +0.0 gives.
#pragma unroll
    for (int n = 0; n < 16; ++n) y[n] = float_to_bf16(__double2float_rn(__fma_rn(d[n], 0.25, 0.0)));
  } else {
#pragma unroll 1
    for (int n = 0; n < 16; ++n) y[n] = float_to_bf16(exact_output(v, n, mask));
  }
  Bf16x16 out;
#pragma unroll
  for (int i = 0; i < 8; ++i) out.pair[i] = y[2 * i] | std::uint32_t(y[2 * i + 1]) << 16;
  return out;
}

// The 16 outputs of the chunk x with [knob RHT] MMA_SM90 (NUMERICS.md §3.19), MMA-Sim's model of
// one sm_90 BF16 MMA from a +0.0 accumulator: product k is m_k * 2^(G_k - 136) (m_k the 8-bit
// significand, G_k the grid exponent); aligned to the largest nonzero one's field G, each keeps 25
// fraction bits below 2^(G - 129), so it is trunc(m_k * 2^(18 - (G - G_k))) units of 2^(G - 154)
// (below 2^26); their exact sum is rounded toward zero to binary32, then to nearest even BF16. A
// zero sum is +0.0, a chunk of zeros included; NaN and infinities as IEEE sums give.
constexpr int kMmaUnitShift = 18;   // 25 fraction bits less the significand's 7
constexpr int kMmaUnitBias = -154;  // the unit's exponent less G
static __device__ __noinline__ Bf16x16 rht16_mma(Bf16x16 x, std::uint16_t mask) {
  std::uint16_t v[16], y[16];
  x.unpack(v);
  bool nan = false, inf = false;
  int hi = 0;
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const bool special = ((v[k] >> 7) & 0xFF) == 0xFF;
    nan |= special && (v[k] & 0x7F) != 0;
    inf |= special && (v[k] & 0x7F) == 0;
    if ((v[k] & 0x7FFF) != 0) hi = max(hi, grid_exponent(v[k]));
  }
#pragma unroll 1
  for (int n = 0; n < 16; ++n) {
    bool plus_inf = false, minus_inf = false;
    long long sum = 0;  // units of 2^(hi - 154)
    for (int k = 0; k < 16; ++k) {
      const std::uint16_t b = v[k];
      const bool negative = coefficient_negative(k, n, mask) != ((b >> 15) != 0);
      if (((b >> 7) & 0xFF) == 0xFF) {
        (negative ? minus_inf : plus_inf) = true;
        continue;
      }
      if ((b & 0x7FFF) == 0) continue;
      const int e = (b >> 7) & 0xFF;
      const long long m = e == 0 ? (b & 0x7F) : ((b & 0x7F) | 0x80);
      sum += mma::shifted_toward_zero(negative ? -m : m, kMmaUnitShift - (hi - grid_exponent(b)));
    }
    const float s = nan || (plus_inf && minus_inf) ? canonical_nan()
                    : inf                          ? (plus_inf ? INFINITY : -INFINITY)
                                                   : mma::toward_zero(sum, hi + kMmaUnitBias);
    y[n] = nan ? kBf16Nan : float_to_bf16(s);
  }
  Bf16x16 out;
#pragma unroll
  for (int i = 0; i < 8; ++i) out.pair[i] = y[2 * i] | std::uint32_t(y[2 * i + 1]) << 16;
  return out;
}

// Row k of a chunk of two adjacent columns c, c + 1 as one 32-bit load gives it: column c in the
// low half of row[k], column c + 1 in the high half. A warp's load of one row is 128 contiguous
// bytes; a thread keeps 16 loads in flight.
struct ColumnPair {
  std::uint32_t row[16];
  template <int kHalf>
  __device__ __forceinline__ float value(int k) const {
    return bf16_half_of_word(row[k], kHalf);
  }
  template <int kHalf>
  __device__ __forceinline__ Bf16x16 column() const {
    Bf16x16 v;
#pragma unroll
    for (int i = 0; i < 8; ++i) v.pair[i] = __byte_perm(row[2 * i], row[2 * i + 1], kHalf == 0 ? 0x5410 : 0x7632);
    return v;
  }
};

// Rows 16 * chunk .. 16 * chunk + 15 of columns c and c + 1 (c even, N a multiple of 16, x 4-byte
// aligned: the launchers check).
__device__ __forceinline__ ColumnPair load_pair(const std::uint16_t* __restrict__ x, std::int64_t N, std::int64_t c,
                                                std::int64_t chunk) {
  const std::uint32_t* p = reinterpret_cast<const std::uint32_t*>(x + 16 * chunk * N + c);
  ColumnPair v;
#pragma unroll
  for (int k = 0; k < 16; ++k) v.row[k] = __ldg(p + k * (N / 2));
  return v;
}

// How a column of a pair is summed exactly: a chunk of zeros by its signs alone; a span of at most
// 12 binades by one binary32 butterfly; a span of at most 25 by two, over the inputs at most 12
// binades below the largest and over the rest (each spans at most 12), whose exact sums one binary32
// addition rounds once, as the binary64 path's conversion does; anything else by the wide paths.
enum class SumPath { kZeros, kBinary32, kSplit, kWide };

// The spans of both columns of a pair, lane by lane in 16-bit lanes (lane h: column c + h), from
// the packed rows: `largest` holds 0x7FFF + the largest |x| bits (0x7FFF for a column of zeros),
// `high` the field of the largest |x| and `low` that of the smallest nonzero |x| (subnormals share
// field 1's grid, so both are at least 1; a column of zeros has 1 and 1), so that the span
// high - low never borrows across lanes; `over` has bit 15 of a lane set where the span exceeds 12,
// `wide` where it exceeds 25 or high exceeds 250.
struct PairSpans {
  std::uint32_t largest, high, over, wide;
  __device__ __forceinline__ SumPath path(int h) const {
    if (((largest >> (16 * h)) & 0xFFFFu) == 0x7FFFu) return SumPath::kZeros;
    if ((wide >> (16 * h + 15)) & 1u) return SumPath::kWide;
    return (over >> (16 * h + 15)) & 1u ? SumPath::kSplit : SumPath::kBinary32;
  }
  __device__ __forceinline__ int high_field(int h) const { return int((high >> (16 * h)) & 0xFFFFu); }
  __device__ __forceinline__ bool binary32() const { return wide == 0; }
};

__device__ __forceinline__ PairSpans pair_spans(const ColumnPair& x) {
  std::uint32_t largest = 0x7FFF7FFFu, smallest = 0x7FFF7FFFu;
#pragma unroll
  for (int k = 0; k < 16; k += 2) {
    // Per lane (sign bit set, less one: no borrow crosses lanes): 0x7FFF + |x|.
    const std::uint32_t a = (x.row[k] | 0x80008000u) - 0x00010001u, b = (x.row[k + 1] | 0x80008000u) - 0x00010001u;
    largest = __vimax3_u16x2(largest, a, b);
    smallest = __vimin3_s16x2(smallest, a, b);  // as int16 a zero (0x7FFF) is the largest
  }
  // Less 0x7FFF per lane: |x| (the smallest nonzero; 0 for a column of zeros); >> 7: the field.
  constexpr std::uint32_t kOnes = 0x00010001u, kFields = 0x00FF00FFu;
  const std::uint32_t high = __vmaxu2(((largest - 0x7FFF * kOnes) >> 7) & kFields, kOnes);
  const std::uint32_t low = __vmaxu2(((smallest - 0x7FFF * kOnes) >> 7) & kFields, kOnes);
  const std::uint32_t span = high - low;
  return {largest, high, span + (0x8000 - kSpanForBinary32 - 1) * kOnes,
          ((span + (0x8000 - 2 * kSpanForBinary32 - 2) * kOnes) | (high + (0x8000 - kMaxFieldForBinary32 - 1) * kOnes)) &
              0x80008000u};
}

// RN32(T[n]), T[n] = sum_k (-1)^popcount(k&n) s_k x[k], for column kHalf on its kBinary32 path
// (the butterfly is exact) or its kSplit path (two exact butterflies, one rounding): output n of
// the transform is then RN_bf16(0.25 * RN32(T[n])).
template <int kHalf>
__device__ __forceinline__ void binary32_sums(const ColumnPair& x, const PairSpans& spans, std::uint16_t mask, float (&t)[16]) {
#pragma unroll
  for (int k = 0; k < 16; ++k) t[k] = signed_input(x.value<kHalf>(k), k, mask);
  if (spans.path(kHalf) == SumPath::kBinary32) {
    butterfly16(t);
    return;
  }
  // The inputs of the top 13 fields stay in t, the rest move to low.
  const float threshold = float_of(std::uint32_t(spans.high_field(kHalf) - kSpanForBinary32) << 23);
  float low[16];
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const bool high = fabsf(t[k]) >= threshold;
    low[k] = high ? 0.0f : t[k];
    t[k] = high ? t[k] : 0.0f;
  }
  butterfly16(t);
  butterfly16(low);
#pragma unroll
  for (int n = 0; n < 16; ++n) t[n] = __fadd_rn(t[n], low[n]);
}

// The transform's outputs from RN32(T): 0.25 * RN32(T[n]) is exact, and the hardware conversion
// rounds it to BF16 two at a time (RNE, as float_to_bf16). The chunk has a nonzero input, so an
// exact-zero sum is +0.0, which adding +0.0 gives (the butterfly may have left -0.0).
__device__ __forceinline__ Bf16x16 outputs_of_sums(const float (&t)[16]) {
  Bf16x16 y;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(__fmaf_rn(t[2 * i], 0.25f, 0.0f), __fmaf_rn(t[2 * i + 1], 0.25f, 0.0f));
    y.pair[i] = *reinterpret_cast<const std::uint32_t*>(&pair);  // low half: output 2i
  }
  return y;
}

// The 16 outputs of column kHalf of a pair that binary32() accepts.
template <int kHalf>
__device__ __forceinline__ Bf16x16 binary32_outputs(const ColumnPair& x, const PairSpans& spans, std::uint16_t mask) {
  if (spans.path(kHalf) == SumPath::kZeros) return zero_chunk(x.column<kHalf>().signs(), mask);
  float t[16];
  binary32_sums<kHalf>(x, spans, mask, t);
  return outputs_of_sums(t);
}

// Both columns' outputs by the wide paths, for a pair that the binary32 butterfly may not sum
// exactly, or by rht16_mma for MMA_SM90. Out of line, with the pair passed by value, so that the common path keeps its registers.
struct PairOutputs {
  Bf16x16 y[2];
};
static __device__ __noinline__ PairOutputs rht_pair_wide(ColumnPair x, std::uint16_t mask, RhtSum sum) {
  if (sum == RhtSum::MMA_SM90) return {{rht16_mma(x.column<0>(), mask), rht16_mma(x.column<1>(), mask)}};
  return {{rht16_wide(x.column<0>(), mask), rht16_wide(x.column<1>(), mask)}};
}

// The largest |y| of outputs that are not NaN: non-negative BF16 bits order as their values.
__device__ __forceinline__ float finite_amax(const Bf16x16& y) {
  std::uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < 8; i += 2) m = __vimax3_u16x2(m, y.pair[i] & 0x7FFF7FFFu, y.pair[i + 1] & 0x7FFF7FFFu);
  return float_of(max(m & 0xFFFFu, m >> 16) << 16);
}

}  // namespace nvfp4::device::hadamard
