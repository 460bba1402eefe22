#include "reference/partial_cast.h"

#include "reference/distributed_formulas.h"
#include "reference/error.h"

namespace nvfp4 {

void partial_cast_2d(const FloatVector& xs, std::int64_t M, std::int64_t K, const Shard& shard, const FloatMatrix& tile_scale,
                     float S, CastTarget target, ByteSpan dst) {
  constexpr std::string_view op = "partial_cast_2d";
  validate_shard(op, M, K, shard);
  validate_shard_values(op, shard, xs.size());
  if (tile_scale.shape(0) != std::size_t(M / 16) || tile_scale.shape(1) != std::size_t(K / 16))
    fail(op, ErrorCode::E_SCALE_SHAPE, "tile scales are [{}, {}]; a {}x{} weight has [{}, {}]", tile_scale.shape(0),
         tile_scale.shape(1), M, K, M / 16, K / 16);
  const std::int64_t bytes = target == CastTarget::kShardLocal ? shard.local_bytes() : M * K / 2;
  if (std::int64_t(dst.size) != bytes)
    fail(op, ErrorCode::E_DATA_SHAPE, "the destination has {} bytes; {} needs {}", dst.size,
         target == CastTarget::kShardLocal ? "the shard-local buffer" : "the whole packed tensor", bytes);
  const float Sd = partial_cast_decode_scale(S);
  for (std::int64_t i = 0; i < shard.length; ++i) {
    const std::int64_t e = shard.start + i;
    const float enc = partial_cast_encode_factor(tile_scale((e / K) / 16, (e % K) / 16), Sd);
    const std::int64_t b = target == CastTarget::kShardLocal ? shard_local_byte(e, shard.start) : e >> 1;
    dst.data[b] = with_nibble(dst.data[b], e, partial_cast_code(xs(i), enc));
  }
}

}  // namespace nvfp4
