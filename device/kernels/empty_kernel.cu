// A kernel that does nothing: the benchmark's launch floor, against which the small scale
// kernels (a few MB moved) are timed.
#include "device/kernels/launch.h"
#include "device/runtime/check.h"

namespace nvfp4::device {
namespace {

__global__ void empty_kernel() {}

}  // namespace

void launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 32, 0, stream>>>();
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
