// The kernels' Philox4x32-10 (device/kernels/philox.cuh), the generator behind their stochastic
// rounding, over arrays of counters and keys: what the test that compares it with the host's
// Random123 generator (reference/philox.h) runs.
#include "device/kernels/element_io.cuh"
#include "device/kernels/launch.h"
#include "device/kernels/philox.cuh"
#include "device/runtime/check.h"

namespace nvfp4::device {
namespace {

__global__ void philox_kernel(const PhiloxCounter* __restrict__ counters, const PhiloxKey* __restrict__ keys, std::int64_t n,
                              PhiloxCounter* __restrict__ out) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const PhiloxCounter c = counters[i];
  const PhiloxKey k = keys[i];
  const uint4 o = philox4x32_10_rounds(make_uint4(c.x, c.y, c.z, c.w), philox_round_keys(k));
  out[i] = PhiloxCounter{o.x, o.y, o.z, o.w};
}

}  // namespace

void launch_philox4x32_10(const PhiloxCounter* counters, const PhiloxKey* keys, std::int64_t n, PhiloxCounter* out,
                          cudaStream_t stream) {
  if (n == 0) return;
  philox_kernel<<<grid_for(n, 256), 256, 0, stream>>>(counters, keys, n, out);
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
