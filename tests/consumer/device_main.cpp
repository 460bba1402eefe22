// Built only when the installed package has the CUDA device libraries: a host program (compiled
// by the C++ compiler, no CUDA language) that links nvfp4verify::device (CUDA::cudart_static
// through the package's find_dependency(CUDAToolkit)) and calls one host launcher. Where no CUDA
// device is usable it says so and exits 0: linking is what the build machine can check.
#include <cmath>
#include <cstdio>
#include <vector>

#include <cuda_runtime_api.h>

#include "device/kernels/launch.h"

int main() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("skip device check: no CUDA device (%s); nvfp4verify::device linked\n",
                status != cudaSuccess ? cudaGetErrorName(status) : "count 0");
    return 0;
  }

  // amax_global over a 2x16 matrix whose largest magnitude is the element -7.5.
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = float(i % 7) * 0.25f;
  x[19] = -7.5f;
  float* dx = nullptr;
  float* damax = nullptr;
  float amax = 0.0f;
  // cuda_runtime_api.h has only the void** form of cudaMalloc.
  bool ok = cudaMalloc(reinterpret_cast<void**>(&dx), x.size() * sizeof(float)) == cudaSuccess &&
            cudaMalloc(reinterpret_cast<void**>(&damax), sizeof(float)) == cudaSuccess &&
            cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess;
  if (ok) {
    nvfp4::device::launch_amax_global(dx, nvfp4::device::InputType::F32, 2, 16, nvfp4::AmaxRule::IGNORE, damax, nullptr);
    ok = cudaMemcpy(&amax, damax, sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  cudaFree(dx);
  cudaFree(damax);
  const bool pass = ok && amax == 7.5f;
  std::printf("%s device amax_global of a 2x16 matrix is 7.5 (got %g)\n", pass ? "ok  " : "FAIL", double(amax));
  return pass ? 0 : 1;
}
