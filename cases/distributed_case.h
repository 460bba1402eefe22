// The inputs and outputs of the distributed-cast operations (amax_partial, fused_scale_2d,
// partial_cast_2d, cast_master_weights) as every backend reads and writes them: parsed and
// checked once here, so that all backends reject the same bad cases with the same errors.
#pragma once

#include <string>
#include <vector>

#include "cases/case.h"
#include "reference/master_weights.h"
#include "reference/partial_cast.h"

namespace nvfp4::cases {

// amax_partial, partial_cast_2d: xs (1-D BF16) is W.flat[shard_start, shard_start + len) of an M x K weight.
struct ShardInput {
  std::int64_t M = 0, K = 0;
  Shard shard;
  FloatVector xs;
};
ShardInput shard_input(const Case& c);

// fused_scale_2d: tile_amax F32 [M/16, K/16] and amax F32 [1].
struct FusedScaleInput {
  FloatMatrix tile_amax;
  float amax = 0.0f;
};
FusedScaleInput fused_scale_input(const Case& c);

// partial_cast_2d: the shard, tile_scale F32 [M/16, K/16], global_scale F32 [1], and the destination's
// prior bytes: 1-D U8 [shard.local_bytes()] (shard-local) or 2-D U8 [M, K/2] (whole tensor).
struct PartialCastInput {
  ShardInput shard;
  FloatMatrix tile_scale;
  float S = 1.0f;
  CastTarget target = CastTarget::kShardLocal;
  std::vector<std::uint8_t> data;
};
PartialCastInput partial_cast_input(const Case& c);
// The output tensor "data", shaped like the input "data".
io::Tensor partial_cast_output(const PartialCastInput& in, std::vector<std::uint8_t> bytes);

// cast_master_weights: every input is a 2-D F32 weight, in name order; the ranks from the cuts parameter.
struct MasterWeightsInput {
  std::vector<std::string> names;
  std::vector<FloatMatrix> weights;
  std::vector<RankRange> ranks;
};
MasterWeightsInput master_weights_input(const Case& c);
// NAME.data, NAME.scale, NAME.amax, NAME.data_t, NAME.scale_t.
void add_cast_weight_outputs(TensorMap& out, const std::string& name, const CastWeight& w);

}  // namespace nvfp4::cases
