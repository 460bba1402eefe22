// bfloat16 and IEEE binary16 <-> binary32 conversions (NUMERICS.md §1.1: inputs are widened
// exactly; RNbf16 and RNout narrow with round-to-nearest-even).
#pragma once

#include "reference/arith.h"

namespace nvfp4 {

NVFP4_HD float bf16_to_float(std::uint16_t h) { return float_of(std::uint32_t(h) << 16); }

// RNbf16: NaN -> 0x7FFF (canonical); the carry overflows correctly to +-inf.
NVFP4_HD std::uint16_t float_to_bf16(float v) {
  if (is_nan(v)) return 0x7FFF;
  const std::uint32_t u = bits_of(v);
  return std::uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

NVFP4_HD float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1F) return float_of(sign | 0x7F800000u | (m << 13));  // inf, NaN (payload kept)
  if (e != 0) return float_of(sign | ((e - 15 + 127) << 23) | (m << 13));
  return float_of(sign | bits_of(float(m) * float_of(0x33800000u)));  // m * 2^-24, exact
}

// RNE binary32 -> binary16 with gradual underflow and overflow to inf; NaN -> 0x7FFF.
NVFP4_HD std::uint16_t float_to_half(float v) {
  if (is_nan(v)) return 0x7FFF;
  const std::uint32_t u = bits_of(v);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 (max + half ulp) rounds to inf
  if (a < 0x38800000u) {
    // Below the smallest normal 2^-14: the result is n * 2^-24; scaling by 2^24 is exact
    // (a is at least 2^-149) and adding 2^23 rounds to an integer, ties to even.
    const float n = add_rn(add_rn(mul_rn(float_of(a), 16777216.0f), 8388608.0f), -8388608.0f);
    return sign | std::uint16_t(n);  // n == 1024 is the smallest normal, whose code is also 1024
  }
  const std::uint32_t r = a + 0xFFFu + ((a >> 13) & 1u);  // round the mantissa to 10 bits
  return sign | std::uint16_t(((r >> 23) - 127 + 15) << 10 | ((r >> 13) & 0x3FFu));
}

}  // namespace nvfp4
