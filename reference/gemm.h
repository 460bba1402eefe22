// The NVFP4 GEMM in EXACT mode (docs/NUMERICS.md §3.20): one rounding of the exact real result,
// computed with integer arithmetic, so that it is the one correct answer whatever the order.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "reference/arith.h"
#include "reference/mma.h"
#include "reference/tensor.h"

namespace nvfp4 {

// One K-major NVFP4 operand [rows, K]: what `quantize` writes for its rowwise copy.
struct GemmOperand {
  ByteMatrix data;   // [rows, K/2] packed E2M1, even element in the low nibble
  ByteMatrix scale;  // compact [roundup(rows,128), roundup(K/16,4)]
  FloatVector amax;  // [1], or [rows] when row-scaled
};

// α from the operands' amaxes, TransformerEngine's compute_nvfp4_per_tensor_scale (§3.20.1).
NVFP4_HD float gemm_alpha(float alpha_in, float amax_a, float amax_b) {
  constexpr std::uint32_t kInvFp4Fp8Max2 = 0x34149B93u;  // RN(1 / (6 * 448 * 6 * 448))
  return mul_rn(mul_rn(mul_rn(alpha_in, amax_a), amax_b), float_of(kInvFp4Fp8Max2));
}

enum class GemmOutput : std::uint8_t { F32, BF16, F16 };

struct GemmOptions {
  std::optional<float> alpha;         // α itself; nullopt: gemm_alpha(1, amax_a, amax_b)
  std::optional<float> beta;          // with `c`; nullopt: no C term (C is never read when β = 0)
  const FloatMatrix* c = nullptr;     // [M, N] binary32, for β (or, row-scaled, the accumulator)
  const FloatVector* bias = nullptr;  // [N] binary32, added after the product (FP32 add)
  GemmOutput output = GemmOutput::F32;
  bool row_scaled = false;  // the post-scale path of §3.20.4
  bool accumulate = false;  // row-scaled only: C = RNout(float(C) + float(RNout(out)))
  // EXACT: one rounding of the exact result (§3.20.3); an MMA mode: a chain of the modelled
  // instruction along K, then the epilogue fma32(β, C, RN(α·acc)) (§3.20.6).
  GemmAccumulation accumulation = GemmAccumulation::EXACT;
};

// D [M, N] = a · b^T by §3.20.3 or §3.20.6 (and §3.20.4 when row_scaled), each value already rounded to
// options.output and held exactly as binary32. Throws nvfp4::Error (E_GEMM_K, E_SCALE_SHAPE,
// E_DATA_SHAPE, E_AMAX_SHAPE, E_UNSUPPORTED) for inconsistent operands.
FloatMatrix gemm(const GemmOperand& a, const GemmOperand& b, const GemmOptions& options);
// The checks gemm makes before it reads an operand, in its order: the errors it would throw.
void validate_gemm(const GemmOperand& a, const GemmOperand& b, const GemmOptions& options);

}  // namespace nvfp4
