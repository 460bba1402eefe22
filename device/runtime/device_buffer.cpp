#include "device/runtime/device_buffer.h"

#include <cstdint>
#include <limits>

namespace nvfp4::device {

void keep_pool_memory() {
  int device = 0;
  NVFP4_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  NVFP4_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
  NVFP4_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
}

}  // namespace nvfp4::device
