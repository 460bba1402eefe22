// The E2M1 code of every table index (reference/e2m1.h: rounding to E2M1 depends only on the
// sign, the exponent, two mantissa bits and a sticky bit), in device memory, for kernels short of
// integer issue slots: one cached load instead of the integer encoder. The exhaustive test checks
// the table against the hardware conversion on all 2^32 inputs. Without relocatable device code
// each translation unit has its own copy; its launcher calls prepare_e2m1_codes() first.
#pragma once

#include <mutex>
#include <stdexcept>

#include "device/runtime/check.h"
#include "reference/e2m1.h"

namespace nvfp4::device {
namespace {

__device__ std::uint8_t e2m1_codes[kE2M1TableSize];

__global__ void fill_e2m1_codes() {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kE2M1TableSize) e2m1_codes[i] = e2m1_hw(e2m1_table_representative(i));
}

// Fills this translation unit's table on the current device, once per device.
void prepare_e2m1_codes() {
  constexpr int kMaxDevices = 64;
  static std::once_flag once[kMaxDevices];
  int device = 0;
  NVFP4_CUDA_CHECK(cudaGetDevice(&device));
  if (device >= kMaxDevices) throw std::invalid_argument("the E2M1 table: device ordinal past 63");
  std::call_once(once[device], [] {
    fill_e2m1_codes<<<kE2M1TableSize / 256, 256>>>();
    NVFP4_CUDA_CHECK_LAUNCH();
    NVFP4_CUDA_CHECK(cudaDeviceSynchronize());  // before any stream's launch reads it
  });
}

// e2m1_hw(v), by the table.
__device__ __forceinline__ std::uint8_t e2m1_hw_by_table(float v) { return __ldg(&e2m1_codes[e2m1_table_index(v)]); }

}  // namespace
}  // namespace nvfp4::device
