// The GEMM's MMA accumulation modes (NUMERICS.md §3.20.6) on the GPU, in the EXACT kernel's
// integers: a group term is T_j = P_j·n_a·n_b in units of 2^-20 (n = |f8|·2^9 = m·2^u, with the
// significand m < 16 and u = e + 6 ∈ [0, 14]), so its exponent in the model is u_a + u_b − 12 and
// it is a multiple of 2^(u_a + u_b). The accumulator, a sum of such terms truncated and rounded
// toward zero, is itself a multiple of 2^-20 and is held as an integer of those units. The proof
// of the fast path: docs/design/gemm-kernel.md, "MMA modes". Written apart from the reference's
// model (reference/mma.cpp) on purpose, in other terms: tests/mma_chain_test.cpp compares the two.
#pragma once

#include <cstdint>

#include "reference/arith.h"

namespace nvfp4::device::mma {

constexpr int kUnitExponent = -20;  // the integers' unit, 2^-20

// u of n = m·2^u (m < 16): the scale's exponent plus 6; n < 16 is a subnormal or an exponent-1 byte.
__device__ __forceinline__ int scale_u(std::int32_t n) { return n < 16 ? 0 : 31 - __clz(n) - 3; }

// |x| rounded toward zero to 24 significant bits: binary32's RZ of an integer far inside its range,
// by the conversion instructions, whose pipe the main loop leaves idle (on an H200 the integer
// masks they replaced measured 44.8 TFLOP-equivalent, these 70.1: docs/performance.md).
__device__ __forceinline__ long long keep_24_bits(long long x) { return __float2ll_rz(__ll2float_rz(x)); }

// Whether the chunk ahead can be summed exactly (no term has a bit below the adder's F fraction
// bits): then the instruction's result is keep_24_bits(acc + Σ T_j). acc: the accumulator before the
// chunk; u_min, u_max: the least and the largest u_a + u_b over the chunk's groups with nonzero
// scales (u_max < 0: there is none). The largest exponent is at most max(e_acc, u_max − 12), the cut
// lies 2^(e − F) below it, and every term is a multiple of 2^(u_a + u_b) in units of 2^-20.
__device__ __forceinline__ bool chunk_is_exact(long long acc, int u_min, int u_max, int fraction_bits) {
  const unsigned long long a = acc < 0 ? 0ull - static_cast<unsigned long long>(acc) : static_cast<unsigned long long>(acc);
  const int e_acc = a ? 63 - __clzll(a) + kUnitExponent : -1000;
  const int e = max(e_acc, u_max - 12);
  const int cut = e - fraction_bits - kUnitExponent;  // the cut in units of 2^-20
  return cut <= 0 || (u_min >= cut && (a & ((1ull << cut) - 1)) == 0);
}

// s · 2^exponent rounded toward zero to binary32 (gradual underflow, ±inf above the range); a zero,
// exact or truncated, is +0.0.
__device__ __forceinline__ float toward_zero(long long s, int exponent) {
  if (s == 0) return 0.0f;
  const std::uint32_t sign = s < 0 ? 0x80000000u : 0u;
  const unsigned long long u = s < 0 ? 0ull - static_cast<unsigned long long>(s) : static_cast<unsigned long long>(s);
  const int top = 63 - __clzll(u), e = top + exponent;
  if (e > 127) return float_of(sign | 0x7F800000u);
  unsigned long long bits;
  if (e >= -126) {
    const unsigned long long m = top > 23 ? u >> (top - 23) : u << (23 - top);
    bits = (static_cast<unsigned long long>(e + 127) << 23) | (m & 0x7FFFFFull);
  } else {
    const int shift = exponent + 149;
    bits = shift >= 0 ? u << shift : (-shift >= 64 ? 0ull : u >> -shift);
    if (bits == 0) return 0.0f;
  }
  return float_of(sign | static_cast<std::uint32_t>(bits));
}

// trunc(x · 2^shift), toward zero.
__device__ __forceinline__ long long shifted_toward_zero(long long x, int shift) {
  if (shift >= 0) return x << shift;
  if (shift <= -63) return 0;
  const long long m = (x < 0 ? -x : x) >> -shift;
  return x < 0 ? -m : m;
}

// One modelled instruction, whatever the operands: c ⊕ the groups' terms t[g] (units of 2^-20)
// with exponents e[g] (zero_exponent for a zero term), F fraction bits, the sum rounded toward zero.
// c is finite here (the chain starts at +0 and NaN rows are handled apart).
__device__ __forceinline__ float fused_dot_add(float c, const long long* t, const int* e, int groups, int fraction_bits,
                                               int zero_exponent) {
  const std::uint32_t cb = bits_of(c);
  const int biased = int(cb >> 23) & 0xFF;
  const long long cm = static_cast<long long>(biased ? (cb & 0x7FFFFFu) | 0x800000u : cb & 0x7FFFFFu);
  const int ce = cm == 0 ? zero_exponent : biased ? biased - 127 : -126;
  int e_max = ce;
  for (int g = 0; g < groups; ++g) e_max = max(e_max, e[g]);
  long long sum = shifted_toward_zero(cb >> 31 ? -cm : cm, ce - 23 - e_max + fraction_bits);
  for (int g = 0; g < groups; ++g) sum += shifted_toward_zero(t[g], kUnitExponent - e_max + fraction_bits);
  return toward_zero(sum, e_max - fraction_bits);
}

// The MMA modes' epilogue: RN(α·acc), then fma32(β, C, ·) when C is read; NaN rows give NaN.
__device__ __forceinline__ float epilogue(bool nan_operand, float acc, float alpha, bool has_c, float beta, float c) {
  if (nan_operand) return canonical_nan();
  const float t = mul_rn(alpha, acc);
  return has_c ? fma_rn(beta, c, t) : t;
}

}  // namespace nvfp4::device::mma
