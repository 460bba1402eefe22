// Eight E2M1 codes (e2m1_hw or sr_e2m1) of as many scaled values, packed as the data tensor stores
// them, by binary32 arithmetic and hardware E4M3 conversions of two values each instead of a table
// lookup per value: a kernel at memory speed has issue slots for arithmetic but not for a load
// per element (reference/e2m1.h, e2m1_hw_value_over_64; the exhaustive test checks the pair).
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

#include "reference/e2m1.h"
#include "reference/stochastic_rounding.h"

namespace nvfp4::device {

// The E4M3 bytes of two exact E4M3 values: `lo` in bits 0-7, `hi` in bits 8-15.
__device__ __forceinline__ std::uint32_t e4m3x2(float lo, float hi) {
  return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
}

// Eight code values divided by 64 (read through `over_64(i)`: e2m1_hw_value_over_64 or
// sr_e2m1_value_over_64) -> the 32 bits of their codes, element 0 in the low nibble.
template <class Over64>
__device__ __forceinline__ std::uint32_t e2m1x8_of_values_over_64(Over64 over_64) {
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = over_64(i);
  // Byte k of `even` holds element 2k, of `odd` element 2k + 1; their codes interleave as nibbles.
  const std::uint32_t even = e4m3x2(v[0], v[2]) | e4m3x2(v[4], v[6]) << 16;
  const std::uint32_t odd = e4m3x2(v[1], v[3]) | e4m3x2(v[5], v[7]) << 16;
  return e2m1_codes_of_e4m3_bytes(even) | (e2m1_codes_of_e4m3_bytes(odd) << 4);
}

// y[0..7] (read through `value(i)`) -> their e2m1_hw codes.
template <class Value>
__device__ __forceinline__ std::uint32_t e2m1x8_hw(Value value) {
  return e2m1x8_of_values_over_64([&](int i) { return e2m1_hw_value_over_64(value(i)); });
}

// y[0..7] (read through `value(i)`) -> their sr_e2m1 codes with random bytes 0-3 of `word_lo`
// and of `word_hi` (sr_byte's assignment for elements 0-7 or 8-15 of a block).
template <class Value>
__device__ __forceinline__ std::uint32_t e2m1x8_sr(Value value, std::uint32_t word_lo, std::uint32_t word_hi) {
  return e2m1x8_of_values_over_64(
      [&](int i) { return sr_e2m1_value_over_64(value(i), i < 4 ? word_lo : word_hi, unsigned(i % 4)); });
}

}  // namespace nvfp4::device
