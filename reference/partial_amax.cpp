#include "reference/partial_amax.h"

#include "reference/error.h"
#include "reference/formulas.h"

namespace nvfp4 {

PartialAmax amax_partial(const FloatVector& xs, std::int64_t M, std::int64_t K, const Shard& shard, AmaxRule rule) {
  validate_shard("amax_partial", M, K, shard);
  validate_shard_values("amax_partial", shard, xs.size());
  PartialAmax r;
  r.tiles = xt::zeros<float>({std::size_t(M / 16), std::size_t(K / 16)});
  for (std::int64_t i = 0; i < shard.length; ++i) {
    const std::int64_t e = shard.start + i;
    float& tile = r.tiles((e / K) / 16, (e % K) / 16);
    tile = amax_step(rule, tile, xs(i));
    r.amax = amax_step(rule, r.amax, xs(i));
  }
  return r;
}

}  // namespace nvfp4
