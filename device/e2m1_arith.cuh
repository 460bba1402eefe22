// Four or eight E2M1 codes (e2m1_hw) of as many scaled values, packed as the data tensor stores
// them, by binary32 arithmetic and hardware E4M3 conversions of two values each instead of a table
// lookup per value: a kernel at memory speed has issue slots for arithmetic but not for a load
// per element (reference/e2m1.h, e2m1_hw_value_over_64; the exhaustive test checks the pair).
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

#include "reference/e2m1.h"

namespace nvfp4::device {

// The E4M3 bytes of two exact E4M3 values: `lo` in bits 0-7, `hi` in bits 8-15.
__device__ __forceinline__ std::uint32_t e4m3x2(float lo, float hi) {
  return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
}

// y[0..N-1] (read through `value(i)`, N = 4 or 8) -> the 4N bits of N codes, element 0 in the low
// nibble.
template <int N, class Value>
__device__ __forceinline__ std::uint32_t e2m1xN_hw(Value value) {
  static_assert(N == 4 || N == 8, "four or eight codes");
  float v[N];
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = e2m1_hw_value_over_64(value(i));
  // Byte k of `even` holds element 2k, of `odd` element 2k + 1; their codes interleave as nibbles.
  std::uint32_t even = e4m3x2(v[0], v[2]), odd = e4m3x2(v[1], v[3]);
  if constexpr (N == 8) {
    even |= e4m3x2(v[4], v[6]) << 16;
    odd |= e4m3x2(v[5], v[7]) << 16;
  }
  return e2m1_codes_of_e4m3_bytes(even) | (e2m1_codes_of_e4m3_bytes(odd) << 4);
}

template <class Value>
__device__ __forceinline__ std::uint32_t e2m1x8_hw(Value value) {
  return e2m1xN_hw<8>(value);
}

}  // namespace nvfp4::device
