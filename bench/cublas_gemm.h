// cuBLAS's BF16 GEMM (FP32 accumulate, FP32 output) as the vendor reference point of the GEMM
// benchmark. Only nvfp4_bench links cuBLAS (bench/CMakeLists.txt).
#pragma once

#include "bench/bench.h"

namespace nvfp4::bench {

// The VendorGemm of run_bench: D[M, N] = A[M, K] · B[N, K]^T, both operands K-major (the TN GEMM
// TransformerEngine runs), with cublasGemmEx.
VendorGemm cublas_bf16_gemm();

}  // namespace nvfp4::bench
