// FP4 E2M1 (element) decoding and the encoder variants of NUMERICS.md §2.1 and §4.2.6.
#pragma once

#include <cmath>

#include "reference/constants.h"
#include "reference/half_float.h"

namespace nvfp4 {

// The encoder variants a profile can select ([knob E2M1]).
enum class E2M1Encoder : std::uint8_t {
  HW,            // cvt.rn.satfinite.e2m1x2.f32 / cuda_fp4.h: -0 -> 0x8, NaN -> 0x7
  TABLE_TE,      // TE PyTorch reference threshold table: -0 -> 0x0, NaN -> 0x0 (no bin matches)
  SEARCHSORTED,  // modelopt: sign = (y < 0), NaN sorts last -> 0x7
  TORCHAO_INT,   // torchao integer emulation: HW for non-NaN, bit garbage for NaN
  MLDTYPES,      // ml_dtypes float4_e2m1fn: +NaN -> 0x8, -NaN -> 0x0
  VALUE_TABLE,   // vLLM emulation (values, not codes): +-0 -> 0x0, NaN -> 0x0 (project choice)
  BF16_TORCH,    // compressed-tensors cast_to_fp4: RNbf16 first, then TABLE_TE's codes
};

// f4(c): exact value of a nibble (bit 3 = sign, then e1 e0 m).
NVFP4_HD float e2m1_decode(std::uint8_t code) {
  const std::uint32_t m = code & 0x7u;
  // Magnitudes 0, .5, 1, 1.5 are m/2; 2, 3, 4, 6 are (2 + (m&1)) * 2^(m/2 - 2).
  const float mag = m < 4 ? 0.5f * float(m) : float(2u + (m & 1u)) * float(1u << ((m >> 1) - 2));
  return float_of(bits_of(mag) | (std::uint32_t(code & 0x8u) << 28));
}

// e2m1_decode by bits, for kernels: the magnitude code m in bits 22-24 of a binary32 is m/2 *
// 2^-126 (m < 2 a subnormal, 0 and 0.5; m >= 2 exponent field m >> 1 and one mantissa bit), so
// scaling by 2^126 (exact) gives f4(c). FormatsE2M1 checks it on all 16 codes.
NVFP4_HD float e2m1_decode_by_bits(std::uint8_t code) {
  return mul_rn(float_of((std::uint32_t(code & 0x7u) << 22) | (std::uint32_t(code & 0x8u) << 28)), 0x1p126f);
}

// Round-to-nearest-even code of a non-negative magnitude on {0, .5, 1, 1.5, 2, 3, 4, 6},
// saturating: every tie (.25, .75, 1.25, 1.75, 2.5, 3.5, 5) goes to the even code. Branch-free
// integer arithmetic, so that GPU threads holding different values do not diverge:
//  * a < 1: the code is RNE(2a) in {0, 1, 2}; 2a is exact, and adding 2^23 rounds it to an
//    integer (ties to even) in the low mantissa bits.
//  * a >= 1: E2M1 has one mantissa bit, so rounding the binary32 mantissa to one bit (ties to
//    even, carry into the exponent) and rebasing the exponent gives the code; codes above 7
//    (a > 5, inf, NaN) saturate to 7.
NVFP4_HD std::uint8_t e2m1_magnitude_code(float a) {
  const std::uint32_t u = bits_of(a);
  const std::uint32_t small = bits_of(add_rn(mul_rn(a, 2.0f), 8388608.0f)) - 0x4B000000u;
  const std::uint32_t large = (u - 0x3F000000u + 0x1FFFFFu + ((u >> 22) & 1u)) >> 22;
  return std::uint8_t(u < 0x3F800000u ? small : (large < 7u ? large : 7u));
}

// e2m1(v), the hardware semantics (§2.1.2): the sign bit is kept, also on zero results.
NVFP4_HD std::uint8_t e2m1_hw(float v) {
  if (is_nan(v)) return 0x7;
  return std::uint8_t((sign_bit(v) ? 0x8 : 0x0) | e2m1_magnitude_code(abs_f(v)));
}

// e2m1_hw by binary32 arithmetic, for kernels short of issue slots (device/kernels/e2m1_arith.cuh): the value
// of e2m1_hw(y) divided by 64 (the sign kept on zero), then an E4M3 conversion of that value, which
// is exact, and e2m1_codes_of_e4m3_bytes. The exhaustive test checks the pair on all 2^32 inputs.
// One exception, which kernels never meet: the sign of a NaN is kept (+-6/64), where e2m1_hw gives
// +6 for every NaN. Kernels pass products, and the GPU's multiply returns the positive canonical
// NaN whatever its inputs (DeviceQuantize.NegativeNanInputsGiveTheCodeOfPositiveSix checks it).
//  * |y| / 64 is exact down to 2^-143 (anything smaller rounds to zero either way); its minimum
//    with 6/64 saturates, and C99 fmin turns NaN into 6/64 (the number wins).
//  * Adding M = 2^(E + 22), E the exponent of max(a, 2^-6), rounds a to a multiple of 2^(E - 1)
//    (the E2M1 spacing of a's binade, divided by 64; below 1/64 the spacing 0.5/64 of
//    [1/64, 2/64)) in one round-to-nearest-even step: the sum stays in M's binade, whose last
//    place is 2^(E-1), and M / 2^(E-1) is even, so ties go to the even code. Subtracting M is
//    exact. (M's mantissa is zero, so that stochastic rounding can write a byte into it.)
// The magnitude |y| / 64 clamped to [0, 6/64], NaN -> 6/64.
NVFP4_HD float e2m1_magnitude_over_64(float y) {
  return fmin_c99_const(mul_rn(fabsf(y), 0.015625f), 0.09375f);  // fabsf: a free operand modifier on the GPU
}
// M for a magnitude a (already divided by 64): its last place is E2M1's spacing at a's binade.
NVFP4_HD float e2m1_magic_over_64(float a) {
  return float_of((bits_of(fmax_c99_const(a, 0.015625f)) & 0x7F800000u) + 0x0B000000u);
}
NVFP4_HD float with_sign_of(float magnitude, float s) { return float_of(bits_of(magnitude) | (bits_of(s) & 0x80000000u)); }

NVFP4_HD float e2m1_hw_value_over_64(float y) {
  const float a = e2m1_magnitude_over_64(y);
  const float m = e2m1_magic_over_64(a);
  return with_sign_of(add_rn(add_rn(a, m), -m), y);
}

// Four E4M3 bytes (one per byte of w) of values e2m1_hw_value_over_64 returns, to their E2M1
// codes (one per byte, in bits 0-3). Such a byte holds the sign in bit 7 and the code's
// magnitude in bits 2-4 (E4M3's exponent bias is E2M1's plus 6), zeros elsewhere.
NVFP4_HD std::uint32_t e2m1_codes_of_e4m3_bytes(std::uint32_t w) {
  const std::uint32_t x = w >> 2, sign = x & 0x20202020u;  // per byte: sign in bit 5, magnitude in 0-2
  return (x ^ sign) | (sign >> 2);
}

// e2m1_hw by table: rounding to one mantissa bit depends only on the sign, the exponent, the
// first two mantissa bits and whether any lower bit is set, so 4096 entries, each e2m1_hw of one
// representative input, give every code. Kernels that are short of integer issue slots look the
// code up instead of computing it; the exhaustive test checks the table on all 2^32 inputs.
constexpr int kE2M1TableSize = 4096;
NVFP4_HD std::uint32_t e2m1_table_index(float v) {
  const std::uint32_t u = bits_of(v);
  return ((u >> 21) << 1) | ((u & 0x1FFFFFu) != 0u);
}
NVFP4_HD float e2m1_table_representative(std::uint32_t index) { return float_of(((index >> 1) << 21) | (index & 1u)); }

// torchao's integer RNE emulation applied to a NaN bit pattern (§4.2.6, TORCHAO_INT).
NVFP4_HD std::uint8_t e2m1_torchao_nan_code(float v) {
  const std::uint32_t u = bits_of(v), a = u & 0x7FFFFFFFu;
  const std::uint32_t code = ((a - 0x3F000000u + 0x1FFFFFu + ((a >> 22) & 1u)) >> 22) & 0xFFu;
  return std::uint8_t((code | ((u >> 31) << 3)) & 0xFu);
}

NVFP4_HD std::uint8_t e2m1_encode(E2M1Encoder variant, float v) {
  const bool nan = is_nan(v);
  switch (variant) {
    case E2M1Encoder::HW:
      return e2m1_hw(v);
    case E2M1Encoder::TABLE_TE:  // the negative bins are [-x, -0.0): -0.0 lands in a positive bin
      if (nan) return 0x0;
      return std::uint8_t((v < 0.0f ? 0x8 : 0x0) | e2m1_magnitude_code(abs_f(v)));
    case E2M1Encoder::SEARCHSORTED:
      if (nan) return 0x7;
      return std::uint8_t((v < 0.0f ? 0x8 : 0x0) | e2m1_magnitude_code(abs_f(v)));
    case E2M1Encoder::TORCHAO_INT:
      return nan ? e2m1_torchao_nan_code(v) : e2m1_hw(v);
    case E2M1Encoder::MLDTYPES:
      if (nan) return sign_bit(v) ? 0x0 : 0x8;
      return e2m1_hw(v);
    case E2M1Encoder::VALUE_TABLE: {
      if (nan) return 0x0;
      const std::uint8_t m = e2m1_magnitude_code(abs_f(v));
      return m == 0 ? 0x0 : std::uint8_t((v < 0.0f ? 0x8 : 0x0) | m);
    }
    case E2M1Encoder::BF16_TORCH:  // x.to(bfloat16), then thresholds times torch.sign: TABLE_TE's rules
      return e2m1_encode(E2M1Encoder::TABLE_TE, bf16_to_float(float_to_bf16(v)));
  }
  return 0x7;  // unreachable for valid enumerators
}

// Nibble packing (§2.1.3): the lower element index goes into the low nibble.
NVFP4_HD std::uint8_t pack_nibbles(std::uint8_t even, std::uint8_t odd) {
  return std::uint8_t((even & 0xFu) | ((odd & 0xFu) << 4));
}
NVFP4_HD std::uint8_t nibble_at(std::uint8_t byte, int index_parity) { return std::uint8_t((byte >> (4 * index_parity)) & 0xFu); }

}  // namespace nvfp4
