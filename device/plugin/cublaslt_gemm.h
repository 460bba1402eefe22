// The NVFP4 GEMM through cuBLASLt (NUMERICS.md §3.20.2), as TransformerEngine runs it: E2M1
// operands with VEC16_UE4M3 block scales in the 128x4 swizzled layout (§2.4.2), TN, compute and
// scale type 32F, fast accumulation off. cuBLASLt is opened at run time (dlopen), so that the
// plugin loads anywhere and can say why it cannot run: no GPU, no library, or a GPU without NVFP4
// block-scaled GEMM (Hopper: CUBLAS_STATUS_NOT_SUPPORTED).
#pragma once

#include <optional>
#include <string>

#include "io/safetensors.h"
#include "reference/gemm.h"

namespace nvfp4::device::cublaslt {

// Why no NVFP4 GEMM can run here, asked once: "no CUDA device: ...", "cuBLASLt cannot be loaded:
// ...", or "no NVFP4 block-scaled GEMM on this GPU: ..."; nullopt when one can. The library is
// $NVFP4_CUBLASLT, else libcublasLt.so.<major> from the loader's search path or /usr/local/cuda/lib64.
const std::optional<std::string>& nvfp4_gemm_unavailable();

// The phrase every "no NVFP4 block-scaled GEMM" reason contains, for tests that skip on it.
inline constexpr const char* kNoBlockScaledGemm = "no NVFP4 block-scaled GEMM on this GPU";

// d [M, N] = RNout(alpha · a · bᵀ) as cuBLASLt computes it, of dtype F32 or BF16. The operands'
// scales are compact with non-negative bytes (the hardware reads UE4M3); K may be any multiple of
// 16 (the operands are padded with zero blocks). one_chain: only algorithms without a split-K
// reduction (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = NONE), so that each output is one chain
// of instructions along K. Throws BackendUnavailable (above) or std::runtime_error for a CUDA or
// cuBLASLt failure.
io::Tensor nvfp4_gemm(const GemmOperand& a, const GemmOperand& b, float alpha, io::DType output, bool one_chain);

}  // namespace nvfp4::device::cublaslt
