// Casting FP32 master weights to NVFP4 across R data-parallel ranks, NUMERICS.md §3.17: each rank
// rounds its slice to BF16, computes partial amaxes; an all-reduce MAX combines them; every rank
// computes the fused scales and casts its slice; a nibble-aware all-gather merges the bytes, and
// transposes give the columnwise copy. The result must equal quantize_2d of each whole weight.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "reference/fused_scale.h"
#include "reference/partition.h"
#include "reference/profile.h"

namespace nvfp4 {

// One weight's NVFP4 2D quantization in both directions, in quantize's layouts.
struct CastWeight {
  ByteMatrix data, scale;      // [M, K/2], compact [roundup(M,128), roundup(K/16,4)]
  ByteMatrix data_t, scale_t;  // [K, M/2], compact [roundup(K,128), roundup(M/16,4)]
  float amax = 0.0f;           // the global amax of the weight (both directions)
};

// The steps an implementation of the flow can get wrong. Tests put known-bad variants here
// (NUMERICS.md §5.1-§5.3); the defaults are the specification.
struct FlowSteps {
  std::function<FusedScale(const FloatMatrix& tile_amax, float g, GlobalScaleRule rule)> fused_scale;
  // Casts one shard into its shard-local bytes (zero-initialised by the flow).
  std::function<void(const FloatVector& xs, std::int64_t M, std::int64_t K, const Shard& shard, const FloatMatrix& tile_scale,
                     float S, ByteSpan local)>
      partial_cast;
  std::function<std::vector<std::uint8_t>(const std::vector<RankRange>& ranks,
                                          const std::vector<std::vector<std::uint8_t>>& buffers)>
      gather;
  FlowSteps();  // the specification's steps
};

// The flow is TE's distributed path: E_UNSUPPORTED unless the profile's knobs are te's, with GS
// either TE (the project default) or TE_HELPER (TE's helper).
void validate_flow_profile(std::string_view op, const Profile& profile);

// weights: FP32 master weights (each M, K multiples of 16); ranks from rank_ranges() over the
// sum of their element counts.
std::vector<CastWeight> cast_master_weights(const std::vector<FloatMatrix>& weights, const std::vector<RankRange>& ranks,
                                            const Profile& profile, const FlowSteps& steps = FlowSteps());

}  // namespace nvfp4
