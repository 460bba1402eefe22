// Host launchers of the NVFP4 kernels: device pointers in, device pointers out, a stream.
// Plain C++ (no CUDA syntax), so callers compile with the host compiler. Layouts are those of
// the reference (NUMERICS.md §2.3-§2.4); every launcher checks its launch. Each is named
// launch_<operation>, so that a call never reads like the reference's <operation> (reference/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include <cuda_runtime_api.h>

#include "reference/mma.h"
#include "reference/profile.h"
#include "reference/stochastic_rounding.h"

namespace nvfp4::device {

enum class InputType : std::uint8_t { F32, BF16, F16 };
enum class OutputType : std::uint8_t { F32, BF16, F16 };

// ---- amax (§3.1-§3.3) --------------------------------------------------------------------
// x is [M, K] row-major. Each writes every element of its output.
void launch_amax_global(const void* x, InputType type, std::int64_t M, std::int64_t K, AmaxRule rule, float* out,
                        cudaStream_t stream);
void launch_amax_rows(const void* x, InputType type, std::int64_t M, std::int64_t K, AmaxRule rule, float* out /*[M]*/,
                      cudaStream_t stream);
void launch_amax_cols(const void* x, InputType type, std::int64_t M, std::int64_t K, AmaxRule rule, float* out /*[K]*/,
                      cudaStream_t stream);
// Block amax matrices: 1x16 -> [M, K/16], 16x1 -> [M/16, K], 16x16 -> [M/16, K/16].
enum class AmaxBlock : std::uint8_t { k1x16, k16x1, k16x16 };
void launch_amax_blocks(const void* x, InputType type, std::int64_t M, std::int64_t K, AmaxBlock block, AmaxRule rule, float* out,
                        cudaStream_t stream);

// ---- quantization (§3.9-§3.12) ------------------------------------------------------------
struct QuantizeOutputs {
  // Rowwise: data [M, K/2], compact scale [roundup(M,128), roundup(K/16,4)]; null to skip.
  std::uint8_t* data = nullptr;
  std::uint8_t* scale = nullptr;
  // Columnwise (x^T): data_t [K, M/2], compact scale_t [roundup(K,128), roundup(M/16,4)]; null to skip.
  std::uint8_t* data_t = nullptr;
  std::uint8_t* scale_t = nullptr;
};

struct QuantizeParams {
  Profile profile;
  bool tiles_2d = false;  // 16x16 tiles instead of 1x16 / 16x1 blocks
  // Global amax (device memory): one float for both directions, or with row scaling one per
  // row ([M], rowwise) and one per column ([K], columnwise).
  const float* amax = nullptr;
  const float* amax_t = nullptr;  // columnwise; equal to `amax` when not row-scaled
  bool row_scaled = false;
  // Stochastic rounding (§3.18) with the canonical bits of (seed, offset); nearest when false.
  bool stochastic = false;
  std::uint64_t seed = 0, offset = 0;
  // The random-bit stream of the `data` output: kColumnwise when this call quantizes a
  // transformed columnwise copy (rht) as its rows. `data_t` always uses kColumnwise.
  SrDirection data_dir = SrDirection::kRowwise;
};

// One pass over x writes whichever directions `out` asks for, padding included (0x00).
void launch_quantize(const void* x, InputType type, std::int64_t M, std::int64_t K, const QuantizeParams& params,
                     const QuantizeOutputs& out, cudaStream_t stream);

// ---- Philox4x32-10 (§3.18.2), the kernels' generator: out[i] = philox(counters[i], keys[i]) ---------
void launch_philox4x32_10(const PhiloxCounter* counters, const PhiloxKey* keys, std::int64_t n, PhiloxCounter* out,
                          cudaStream_t stream);

// ---- random Hadamard transform (§3.19) -----------------------------------------------------
// x: BF16 [M, N] (M, N multiples of 16; x 16-byte aligned, else std::invalid_argument) -> out: BF16
// [N, M], out[c][16b+n] = rht16(x[16b..16b+15][c], mask, sum)[n]: the sum rounded to binary32 as
// [knob RHT] `sum` says, then to BF16.
void launch_rht(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask, RhtSum sum, std::uint16_t* out,
                cudaStream_t stream);
// TransformerEngine's wgrad columnwise copy, fused (the transform is recomputed, never stored):
// out = amax(rht(x)) with `rule` and the sum rule `sum` (params.profile.rht for the quantization);
// then rht(x)'s rows quantized with params (amax_t, profile,
// stochastic rounding with the columnwise bits; not row-scaled) into data_t [N, M/2] and the compact
// scale_t [roundup(N, 128), roundup(M/16, 4)], padding 0x00. x as for rht (the same checks).
void launch_rht_amax(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask, RhtSum sum, AmaxRule rule,
                     float* out, cudaStream_t stream);
void launch_rht_quantize_columnwise(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask,
                                    const QuantizeParams& params, std::uint8_t* data_t, std::uint8_t* scale_t,
                                    cudaStream_t stream);

// ---- dequantization (§3.13) -----------------------------------------------------------------
// data [M, K/2], compact scale, amax [1] or [M] (amax_count); out [M, K] in `type`.
void launch_dequantize(const std::uint8_t* data, const std::uint8_t* scale, const float* amax, std::int64_t amax_count,
                       std::int64_t M, std::int64_t K, const Profile& profile, OutputType type, void* out, cudaStream_t stream);

// ---- layouts (§2.4.2, §3.14, §3.21) -----------------------------------------------------------
// Compact [rows, cols] (rows % 128 == 0, cols % 4 == 0) <-> swizzled bytes.
void launch_swizzle_scales(const std::uint8_t* compact, std::int64_t rows, std::int64_t cols, std::uint8_t* swizzled,
                           cudaStream_t stream);
void launch_unswizzle_scales(const std::uint8_t* swizzled, std::int64_t rows, std::int64_t cols, std::uint8_t* compact,
                             cudaStream_t stream);
// [M, K/2] -> [K, M/2] (M even).
void launch_transpose_packed(const std::uint8_t* in, std::int64_t M, std::int64_t K, std::uint8_t* out, cudaStream_t stream);
// 2D rowwise scales of an [M, K] tensor -> its columnwise scales.
void launch_transpose_scales_2d(const std::uint8_t* in, std::int64_t M, std::int64_t K, std::uint8_t* out, cudaStream_t stream);

// ---- GEMM (§3.20) -------------------------------------------------------------------------------
// One K-major NVFP4 operand [rows, K]: data [rows, K/2] (8-byte aligned), scale
// [roundup(rows, 128), roundup(K/16, 4)], compact (§2.4.1) or GEMM-swizzled (§2.4.2).
struct GemmOperandView {
  const std::uint8_t* data = nullptr;
  const std::uint8_t* scale = nullptr;
  bool swizzled = false;
};

// The block sum T is held in 64 bits (§3.20.3): exact for K/16 up to this many blocks.
constexpr std::int64_t kGemmMaxBlocks = 76087;

// EXACT mode (§3.20.3): d[m][n] = RNout(RN(RN(alpha * S_exact + beta * C[m][n]) + bias[n])); an
// MMA mode (§3.20.6): d[m][n] = RNout(RN(fma32(beta, C[m][n], RN(alpha * acc)) + bias[n])), acc the
// modelled instruction chained along K.
struct GemmEpilogue {
  float alpha = 1.0f;
  std::optional<float> beta;    // none: no C term; C is read only when beta is set and nonzero
  const float* c = nullptr;     // [M, N] binary32
  const float* bias = nullptr;  // [N], or null
  OutputType output = OutputType::F32;
  GemmAccumulation accumulation = GemmAccumulation::EXACT;
};

// Row-scaled (§3.20.4): the EXACT product into FP32, then post-scaled by the amaxes.
struct GemmPostScale {
  const float* a_amax = nullptr;  // [a_count]: 1 or M
  std::int64_t a_count = 1;
  const float* b_amax = nullptr;  // [b_count]: 1 or N
  std::int64_t b_count = 1;
  const float* bias = nullptr;       // [N], or null
  const void* accumulate = nullptr;  // C [M, N] of `output`: d = RNout(C + RNout(out)); null: d = RNout(out)
  OutputType output = OutputType::F32;
};

// Device scratch for one call of the launchers below (expanded operands, NaN rows, unswizzled
// scales and, row-scaled, the FP32 product); it may be reused by later calls on the same stream.
std::size_t gemm_workspace_bytes(std::int64_t M, std::int64_t N, std::int64_t K, bool row_scaled, GemmAccumulation accumulation);
// M, N >= 1, K a positive multiple of 16 with K/16 <= kGemmMaxBlocks, else std::invalid_argument.
// d: [M, N] of the output type.
void launch_gemm(const GemmOperandView& a, const GemmOperandView& b, std::int64_t M, std::int64_t N, std::int64_t K,
                 const GemmEpilogue& epilogue, void* d, void* workspace, cudaStream_t stream);
// alpha: the caller's gemm_alpha(1, 1, 1) (§3.20.4).
void launch_gemm_row_scaled(const GemmOperandView& a, const GemmOperandView& b, std::int64_t M, std::int64_t N, std::int64_t K,
                            float alpha, GemmAccumulation accumulation, const GemmPostScale& post, void* d, void* workspace,
                            cudaStream_t stream);

// ---- launch floor ------------------------------------------------------------------------------
// One CTA of an empty kernel: what launching alone costs (the benchmark's floor for small kernels).
void launch_empty_kernel(cudaStream_t stream);

}  // namespace nvfp4::device
