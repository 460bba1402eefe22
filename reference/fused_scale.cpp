#include "reference/fused_scale.h"

#include "reference/distributed_formulas.h"
#include "reference/error.h"
#include "reference/layout.h"

namespace nvfp4 {

void validate_distributed_scale_rule(std::string_view op, GlobalScaleRule rule) {
  if (rule != GlobalScaleRule::TE && rule != GlobalScaleRule::TE_HELPER)
    fail(op, ErrorCode::E_UNSUPPORTED,
         "the distributed weight cast follows TE's kernels (NUMERICS.md §3.15); its global scale is GS=TE or "
         "GS=TE_HELPER, not the profile's rule");
}

FusedScale fused_scale_2d(const FloatMatrix& tile_amax, float g, GlobalScaleRule rule) {
  validate_distributed_scale_rule("fused_scale_2d", rule);
  const std::size_t tr = tile_amax.shape(0), tc = tile_amax.shape(1);
  FusedScale r;
  r.amax = g;
  r.S = distributed_encode_scale(rule, g);
  const float mult = fused_scale_multiplier(r.S);
  r.tile_scale = xt::empty<float>({tr, tc});
  for (std::size_t i = 0; i < tr; ++i)
    for (std::size_t j = 0; j < tc; ++j) r.tile_scale(i, j) = fused_tile_scale(tile_amax(i, j), mult);
  // The compact rowwise layout's pitch is roundup(tc, 4); TE's kernel uses tc (§5.2).
  r.scale =
      xt::zeros<std::uint8_t>({std::size_t(scale_rows(std::int64_t(16 * tr))), std::size_t(scale_cols(std::int64_t(16 * tc)))});
  for (std::size_t row = 0; row < 16 * tr; ++row)
    for (std::size_t j = 0; j < tc; ++j) r.scale(row, j) = e4m3sat(r.tile_scale(row / 16, j));
  return r;
}

}  // namespace nvfp4
