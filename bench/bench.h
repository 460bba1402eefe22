// The GPU benchmark (`nvfp4_bench`, `nvfp4-verify bench`): copy bandwidth, then each kernel's
// median time, bytes moved and bandwidth as a fraction of the copy bandwidth of the same run; the
// EXACT GEMM in TFLOP-equivalent beside a vendor GEMM; the distributed master-weight cast (one rank
// of 8 over a 1B-parameter transformer's weights, the launches per step); the CPU reference's
// throughput; and fuzz campaigns' cases per second on the GPU and the CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

#include "bench/options.h"

namespace nvfp4::bench {

// A vendor GEMM timed beside the EXACT one: `prepare` allocates its operands for M x N x K and
// returns one launch of D[M, N] = A[M, K] · B[N, K]^T on the stream. nvfp4_bench passes cuBLAS
// (bench/cublas_gemm.h); without one the comparison is left out.
struct VendorGemm {
  std::string name;
  std::function<std::function<void()>(std::int64_t M, std::int64_t N, std::int64_t K, cudaStream_t stream)> prepare;
};

// Prints the table; returns a process exit code (2 when no GPU is usable).
int run_bench(const BenchOptions& options, const VendorGemm& vendor = {});

}  // namespace nvfp4::bench
