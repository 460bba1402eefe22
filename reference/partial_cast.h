// Partial cast of a shard, NUMERICS.md §3.16: the E2M1 codes of one rank's elements of a 2D
// weight, written nibble by nibble so that a byte shared with the neighbouring rank keeps the
// other rank's nibble.
#pragma once

#include "reference/shard.h"
#include "reference/tensor.h"

namespace nvfp4 {

enum class CastTarget {
  kShardLocal,   // dst holds the shard's bytes [start div 2, (end + 1) div 2): shard.local_bytes() bytes
  kWholeTensor,  // dst holds the whole packed tensor [M, K/2]: M*K/2 bytes
};

// xs[i] = W.flat[shard.start + i] (BF16 values); tile_scale is P [M/16, K/16] and S the encode
// scale, both from fused_scale_2d. Only the nibbles of owned elements of dst change.
void partial_cast_2d(const FloatVector& xs, std::int64_t M, std::int64_t K, const Shard& shard, const FloatMatrix& tile_scale,
                     float S, CastTarget target, ByteSpan dst);

}  // namespace nvfp4
