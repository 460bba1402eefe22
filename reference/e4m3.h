// FP8 E4M3 (block scale) decoding and the encoder variants of NUMERICS.md §2.2, and ggml's
// unsigned UE4M3 codec (§2.2.4).
#pragma once

#include "reference/constants.h"

#if defined(__CUDACC__)
#include <cuda_fp8.h>
#endif

namespace nvfp4 {

// f8(b): exact binary32 value of an E4M3 byte; 0x7F/0xFF are NaN (canonical), no infinity.
NVFP4_HD float e4m3_decode(std::uint8_t b) {
  const std::uint32_t sign = std::uint32_t(b & 0x80) << 24;
  const std::uint32_t e = (b >> 3) & 0xF, m = b & 0x7;
  if (e == 0xF && m == 0x7) return canonical_nan();
  if (e == 0) return float_of(sign | bits_of(float(m) * float_of(constants::kTwoPowMinus9Bits)));
  return float_of(sign | ((e - 7 + 127) << 23) | (m << 20));  // (1 + m/8) * 2^(e-7)
}

// RNE of a magnitude a in (2^-10, 464] onto the E4M3 grid, as a byte without sign.
NVFP4_HD std::uint8_t e4m3_round_magnitude(float a) {
  const std::uint32_t u = bits_of(a);
  if ((u >> 23) < 127 - 6) {
    // Subnormal range: the value is n * 2^-9; a * 2^9 is exact and adding 2^23 rounds it to an
    // integer with ties to even. n == 8 is the smallest normal, whose byte is also 8.
    const float n = add_rn(add_rn(mul_rn(a, 512.0f), 8388608.0f), -8388608.0f);
    return std::uint8_t(n);
  }
  // Normal range: round the binary32 mantissa to 3 bits, ties to even; a carry moves into the
  // exponent by itself. Rebias 127 -> 7.
  const std::uint32_t r = u + 0x7FFFFu + ((u >> 20) & 1u);
  return std::uint8_t((((r >> 23) - 127 + 7) << 3) | ((r >> 20) & 0x7u));
}

// e4m3sat: PTX cvt.rn.satfinite.e4m3x2.f32 / __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3).
NVFP4_HD std::uint8_t e4m3sat(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  // The hardware conversion (cvt.rn.satfinite.e4m3x2.f32) is this function; the exhaustive test
  // checks the software path below against the same CUDA entry point on every binary32 value.
  return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
#endif
  if (is_nan(v)) return 0x7F;  // the CUDA float entry point canonicalises NaN first: sign dropped
  const std::uint8_t s = sign_bit(v) ? 0x80 : 0x00;
  const float a = abs_f(v);
  if (a <= constants::two_pow_minus10()) return s;  // 2^-10 is a tie between 0 and 2^-9 -> 0
  if (a > constants::kE4M3SatThreshold) return s | 0x7E;
  return s | e4m3_round_magnitude(a);
}

// e4m3torch: PyTorch .to(torch.float8_e4m3fn); above 464 (and inf, NaN) it gives NaN, keeping the sign.
NVFP4_HD std::uint8_t e4m3torch(float v) {
  const std::uint8_t s = sign_bit(v) ? 0x80 : 0x00;
  if (is_nan(v) || abs_f(v) > constants::kE4M3SatThreshold) return s | 0x7F;
  return e4m3sat(v);
}

// e4m3ggml: ggml's ggml_fp32_to_ue4m3 (§2.2.4). Not above 0 (NaN included) -> 0x00; above 448
// -> 448. A normal value keeps 3 mantissa bits plus the next one (round half up on the magnitude),
// and a carry into exponent 15, like every value from 256 up, gives 0x7E. Below 2^-6 the byte is
// (int)(v * 512 + 0.5f) capped at 7, so [7.5, 8) * 2^-9 gives 0x07 where rounding gives 0x08.
NVFP4_HD std::uint8_t e4m3ggml(float v) {
  if (!(v > 0.0f)) return 0x00;
  if (v > constants::kE4M3Max) v = constants::kE4M3Max;
  const std::uint32_t u = bits_of(v);
  int e = int((u >> 23) & 0xFF) - 127 + 7;
  if (e <= 0) {
    const int n = int(add_rn(mul_rn(v, 512.0f), 0.5f));  // truncated, as C converts a float to int
    return std::uint8_t(n > 7 ? 7 : n);
  }
  if (e >= 15) return 0x7E;
  int m = int((u >> 20) & 0x7) + int((u >> 19) & 0x1);
  if (m > 7) {
    m = 0;
    if (++e >= 15) return 0x7E;
  }
  return std::uint8_t((e << 3) | m);
}

// ggml's ggml_ue4m3_to_fp32 times 2 (ggml returns half the scale, for its doubled E2M1 values):
// f8 of the byte without its sign bit, except that 0x7F is 0 and 0xFF the finite (1 + 7/8) * 2^8.
NVFP4_HD float e4m3ggml_decode(std::uint8_t b) {
  if (b == 0x7F) return 0.0f;
  if (b == 0xFF) return 480.0f;
  return e4m3_decode(std::uint8_t(b & 0x7F));
}

}  // namespace nvfp4
