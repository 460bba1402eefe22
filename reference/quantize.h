// NVFP4 quantization (NUMERICS.md §3.9-§3.12): 1D rowwise and columnwise, both at once, 2D
// 16x16 tiles, and row-scaled, under any profile.
#pragma once

#include <optional>

#include "reference/formulas.h"
#include "reference/hadamard.h"
#include "reference/profile.h"
#include "reference/stochastic_rounding.h"
#include "reference/tensor.h"

namespace nvfp4 {

enum class BlockShape { k1D, k2D };  // 1x16 (16x1 columnwise) blocks, or 16x16 tiles
enum class Direction { kRowwise, kColumnwise, kBoth };
enum class ScaleLayout { kCompact, kSwizzled };
enum class InputFormat { kF32, kBF16, kF16 };  // the dtype x was widened from

// Single steps of the quantizer replaced by others, for the fault catalogue (docs/spec/faults.md,
// reference/fault_steps.h). A default record is the specification. Host only: kernels never see it.
struct QuantizeSteps {
  float (*amax_step)(AmaxRule, float acc, float x) = nullptr;  // the global (or per-row) amax reduction
  GlobalScale (*global_scale)(GlobalScaleRule, float g) = nullptr;
  void (*block_amax)(AmaxRule, FloatMatrix& block_amax) = nullptr;                     // applied to the [rows, K/16] block amaxes
  std::uint8_t (*e4m3_cast)(E4M3Cast, float t) = nullptr;                              // the scale byte from t
  bool encode_from_precast = false;                                                    // the encode factor from t, not f8(sf)
  std::uint8_t (*e2m1)(E2M1Encoder, float y) = nullptr;                                // round-to-nearest codes from y
  bool sr_reuse_block_bits = false;                                                    // every block draws block index 0's bits
  bool sr_reuse_copy_bits = false;                                                     // the columnwise copy draws dir 0's bits
  FloatMatrix (*rht)(const FloatMatrix& x, std::uint16_t mask, RhtSum sum) = nullptr;  // the columnwise copy's transform

  bool blocks_replaced() const { return e4m3_cast || encode_from_precast || e2m1 || sr_reuse_block_bits; }
};

// Stochastic rounding of the E2M1 codes (§3.18) with the canonical random bits of (seed, offset).
struct StochasticRounding {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
};

struct QuantizeOptions {
  Profile profile;
  BlockShape block = BlockShape::k1D;
  Direction direction = Direction::kRowwise;
  bool row_scaled = false;    // per-row (per-column for the transpose) global amax
  std::optional<float> amax;  // overrides the computed global amax (both directions)
  ScaleLayout scale_layout = ScaleLayout::kCompact;
  InputFormat input = InputFormat::kF32;
  std::optional<StochasticRounding> stochastic;  // nearest when empty
  // TransformerEngine's wgrad recipe (§3.19): the columnwise copy quantizes rht(x) (BF16 input,
  // 1D blocks), with its own amax; the rowwise copy is unchanged.
  std::optional<std::uint16_t> rht_mask;
  QuantizeSteps steps;  // the specification's steps unless a fault variant replaces some
};

// One direction's output. Columnwise outputs describe x^T: data [K, M/2], scale
// [roundup(K,128), roundup(M/16,4)], amax [1] or [K] when row-scaled.
struct QuantizedTensor {
  ByteMatrix data;
  ByteMatrix scale;
  FloatVector amax;
};

struct Quantization {
  std::optional<QuantizedTensor> rowwise;
  std::optional<QuantizedTensor> columnwise;
  // The second-level scale as the profile's framework stores it (§4.3 "exported global"),
  // for profiles that store one and tensors that are not row-scaled.
  std::optional<float> global_scale;
};

// Throws the Error that quantize() would throw for an [M, K] input with these options.
void validate_quantize(std::size_t M, std::size_t K, const QuantizeOptions& options);

// x holds the exact binary32 values of the input (BF16/FP16 inputs widen exactly).
Quantization quantize(const FloatMatrix& x, const QuantizeOptions& options);

// The rowwise quantization of x with given block amaxes ([M, K/16]; a 2D tile's amax repeated
// on its 16 rows) and per-row global amaxes ([M]). Compact scales. The common core of every
// quantize variant, exposed so that tests can drive it with chosen amaxes. With `stochastic`, the
// codes are rounded stochastically with the random bits of copy `dir` (x is that stored copy).
// `block` is the shape the block amaxes describe: a [knob CAND] choice is made per 16x16 tile
// under k2D.
QuantizedTensor quantize_rows(const FloatMatrix& x, const FloatMatrix& block_amax, const FloatVector& row_global_amax,
                              const Profile& profile, const std::optional<StochasticRounding>& stochastic = {},
                              SrDirection dir = SrDirection::kRowwise, const QuantizeSteps& steps = {},
                              BlockShape block = BlockShape::k1D);

// [knob CAND] (§4.2.7): the candidate that block j of row r of x keeps, given its block amax A and
// the row's global amax g and scale gs: map-to-6 (encode_block) or map-to-4 (encode_block_map4),
// by their errors over the block, or under k2D over its 16x16 tile (the 16 rows of r's tile). The
// errors are those of the round-to-nearest codes, also under stochastic rounding (which then
// rounds the chosen candidate) and under a fault variant's block steps (applied to it). With rht,
// x is rht's output, as for any profile.
BlockEncoding chosen_candidate(const Profile& p, const GlobalScale& gs, float g, float A, const FloatMatrix& x, std::size_t r,
                               BlockShape block, std::size_t j);

// The amax as stored in the `amax` outputs: g itself, except that AMAX = PROPAGATE_BF16 stores a
// NaN amax of a BF16 input as the widened BF16 NaN 0x7FFF0000 (the amax was reduced in BF16).
float stored_amax(AmaxRule rule, InputFormat input, float g);

}  // namespace nvfp4
