#include "reference/master_weights.h"

#include "reference/error.h"
#include "reference/formulas.h"
#include "reference/nibble_gather.h"
#include "reference/partial_amax.h"
#include "reference/partial_cast.h"
#include "reference/profiles.h"
#include "reference/transpose.h"

namespace nvfp4 {

FlowSteps::FlowSteps()
    : fused_scale(fused_scale_2d),
      partial_cast([](const FloatVector& xs, std::int64_t M, std::int64_t K, const Shard& shard, const FloatMatrix& tile_scale,
                      float S,
                      ByteSpan local) { partial_cast_2d(xs, M, K, shard, tile_scale, S, CastTarget::kShardLocal, local); }),
      gather(gather_nibbles) {}

void validate_flow_profile(std::string_view op, const Profile& profile) {
  Profile te = find_profile("te")->knobs;
  te.gs = profile.gs;
  validate_distributed_scale_rule(op, profile.gs);
  if (knob_values(profile) != knob_values(te))
    fail(op, ErrorCode::E_UNSUPPORTED,
         "the distributed weight cast follows TE's kernels (NUMERICS.md §3.15-§3.17); its only profile is te "
         "(optionally with GS=TE_HELPER)");
}

std::vector<CastWeight> cast_master_weights(const std::vector<FloatMatrix>& weights, const std::vector<RankRange>& ranks,
                                            const Profile& profile, const FlowSteps& steps) {
  constexpr std::string_view op = "cast_master_weights";
  validate_flow_profile(op, profile);
  std::vector<std::int64_t> elements;
  for (const FloatMatrix& w : weights) {
    validate_weight_dims(op, std::int64_t(w.shape(0)), std::int64_t(w.shape(1)));
    elements.push_back(std::int64_t(w.size()));
  }
  const std::vector<std::int64_t> offsets = weight_offsets(elements);
  if (ranks.empty() || ranks.front().begin != 0 || ranks.back().end != offsets.back())
    fail(op, ErrorCode::E_SHARD, "the ranks' ranges do not cover the {} elements of the weights", offsets.back());

  // Steps 1-2, per rank: the BF16 slice of every weight it touches, and its partial amaxes.
  struct RankShard {
    ShardPiece piece;
    FloatVector xs;
  };
  std::vector<std::vector<RankShard>> shards(ranks.size());
  std::vector<FloatMatrix> tile_amax;
  std::vector<float> amax(weights.size(), 0.0f);
  for (const FloatMatrix& w : weights) tile_amax.push_back(xt::zeros<float>({w.shape(0) / 16, w.shape(1) / 16}));
  for (std::size_t rho = 0; rho < ranks.size(); ++rho) {
    for (const ShardPiece& p : rank_pieces(elements, ranks[rho])) {
      const FloatMatrix& w = weights[p.weight];
      FloatVector xs = xt::empty<float>({std::size_t(p.shard.length)});
      for (std::int64_t i = 0; i < p.shard.length; ++i)
        xs(i) = bf16_to_float(float_to_bf16(w.data()[p.shard.start + i]));  // FP32 -> BF16 before any amax
      const PartialAmax a = amax_partial(xs, std::int64_t(w.shape(0)), std::int64_t(w.shape(1)), p.shard, profile.amax);
      // Step 3: the all-reduce MAX, with the amax NaN rule.
      for (std::size_t k = 0; k < a.tiles.size(); ++k)
        tile_amax[p.weight].data()[k] = amax_combine(profile.amax, tile_amax[p.weight].data()[k], a.tiles.data()[k]);
      amax[p.weight] = amax_combine(profile.amax, amax[p.weight], a.amax);
      shards[rho].push_back({p, std::move(xs)});
    }
  }
  // Steps 4-5: identical on every rank, so computed once here.
  std::vector<FusedScale> fused;
  for (std::size_t i = 0; i < weights.size(); ++i) fused.push_back(steps.fused_scale(tile_amax[i], amax[i], profile.gs));
  // Step 6: each rank casts its pieces into its zero-initialised buffer.
  std::vector<std::vector<std::uint8_t>> buffers;
  for (std::size_t rho = 0; rho < ranks.size(); ++rho) {
    std::vector<std::uint8_t> buffer(std::size_t(ranks[rho].buffer_bytes()), 0);
    for (const RankShard& s : shards[rho]) {
      const FloatMatrix& w = weights[s.piece.weight];
      const FusedScale& f = fused[s.piece.weight];
      steps.partial_cast(s.xs, std::int64_t(w.shape(0)), std::int64_t(w.shape(1)), s.piece.shard, f.tile_scale, f.S,
                         ByteSpan{buffer.data() + s.piece.buffer_offset, std::size_t(s.piece.shard.local_bytes())});
    }
    buffers.push_back(std::move(buffer));
  }
  // Steps 7-8: gather, split per weight, transpose.
  const std::vector<std::uint8_t> data = steps.gather(ranks, buffers);
  std::vector<CastWeight> out;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const std::size_t M = weights[i].shape(0), K = weights[i].shape(1);
    CastWeight c;
    c.data = xt::empty<std::uint8_t>({M, K / 2});
    std::copy_n(data.begin() + offsets[i] / 2, c.data.size(), c.data.begin());
    c.scale = fused[i].scale;
    c.data_t = transpose_packed(c.data);
    c.scale_t = transpose_scales_2d(c.scale, M, K);
    c.amax = fused[i].amax;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace nvfp4
