// Partial (shard) amax, NUMERICS.md §3.4: the 16x16 tile amaxes and the amax of one rank's shard.
#pragma once

#include "reference/profile.h"
#include "reference/shard.h"
#include "reference/tensor.h"

namespace nvfp4 {

struct PartialAmax {
  FloatMatrix tiles;  // [M/16, K/16]: max |x| over the owned elements of each tile, +0 if none
  float amax = 0.0f;  // max |x| over the shard
};

// xs holds the shard's values, xs[i] = W.flat[shard.start + i] (xs.size() == shard.length).
PartialAmax amax_partial(const FloatVector& xs, std::int64_t M, std::int64_t K, const Shard& shard, AmaxRule rule);

}  // namespace nvfp4
