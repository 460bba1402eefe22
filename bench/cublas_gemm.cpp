#include "bench/cublas_gemm.h"

#include <memory>
#include <stdexcept>
#include <string>

#include <cublas_v2.h>

#include "device/runtime/device_buffer.h"

namespace nvfp4::bench {
namespace {

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + ": cuBLAS status " + std::to_string(int(status)));
}

// The handle and the operands live as long as the launch that uses them.
struct Gemm {
  cublasHandle_t handle = nullptr;
  device::DeviceBuffer a, b, d;
  std::int64_t M, N, K;
  ~Gemm() {
    if (handle) cublasDestroy(handle);
  }
};

std::function<void()> prepare(std::int64_t M, std::int64_t N, std::int64_t K, cudaStream_t stream) {
  auto g = std::make_shared<Gemm>();
  g->M = M;
  g->N = N;
  g->K = K;
  g->a = device::DeviceBuffer(std::size_t(M * K) * 2);
  g->b = device::DeviceBuffer(std::size_t(N * K) * 2);
  g->d = device::DeviceBuffer(std::size_t(M * N) * 4);
  g->a.poison(stream, 0x3C);  // BF16 0x3C3C, about 0.0115: finite values, the pace does not depend on them
  g->b.poison(stream, 0x3C);
  check(cublasCreate(&g->handle), "cublasCreate");
  check(cublasSetStream(g->handle, stream), "cublasSetStream");
  return [g] {
    const float alpha = 1.0f, beta = 0.0f;
    // Column-major view: D^T [N, M] = B [N, K] · A^T [K, M]; both buffers have leading dimension K.
    check(cublasGemmEx(g->handle, CUBLAS_OP_T, CUBLAS_OP_N, int(g->N), int(g->M), int(g->K), &alpha, g->b.get(), CUDA_R_16BF,
                       int(g->K), g->a.get(), CUDA_R_16BF, int(g->K), &beta, g->d.get(), CUDA_R_32F, int(g->N),
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  };
}

}  // namespace

VendorGemm cublas_bf16_gemm() { return {"cuBLAS BF16 in, FP32 accumulate and out", prepare}; }

}  // namespace nvfp4::bench
