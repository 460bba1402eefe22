// The three upstream bugs of the distributed weight cast (NUMERICS.md §5.1-§5.3), as
// replacements for one step of the flow. Test code only: the harness must catch them.
#pragma once

#include <algorithm>
#include <string_view>

#include "cases/distributed_case.h"
#include "cases/reference_backend.h"
#include "reference/distributed_formulas.h"
#include "reference/master_weights.h"

namespace nvfp4::test_support {

enum class UpstreamBug {
  kPartialCastIdxTe,   // §5.1: byte index (ref_idx - s) >> 1
  kFusedScalePitchTc,  // §5.2: expanded scales written at pitch K/16
  kAllgatherBytes,     // §5.3: a shared byte taken whole from one rank
};

// TE nvfp4_2d_partial_cast_kernel: one thread per element pair (2m, 2m+1), writing to local byte
// (ref_idx - s) >> 1 where ref_idx is the pair's first owned element. Pairs run in order, as one
// thread handles elements s-1 .. s+2 in §6.16.
inline void partial_cast_idx_te(const FloatVector& xs, std::int64_t, std::int64_t K, const Shard& s,
                                const FloatMatrix& tile_scale, float S, ByteSpan local) {
  const float Sd = partial_cast_decode_scale(S);
  for (std::int64_t m = s.start >> 1; 2 * m < s.end(); ++m) {
    const std::int64_t b = (std::max(2 * m, s.start) - s.start) >> 1;
    for (std::int64_t e = 2 * m; e < 2 * m + 2; ++e) {
      if (e < s.start || e >= s.end()) continue;
      const float enc = partial_cast_encode_factor(tile_scale((e / K) / 16, (e % K) / 16), Sd);
      local.data[b] = with_nibble(local.data[b], e, partial_cast_code(xs(e - s.start), enc));
    }
  }
}

// TE nvfp4_fused_scale_kernel: entry (r, j) written at flat r * (K/16) + j of the compact buffer,
// whose pitch is roundup(K/16, 4); rows past M are written as 0x00, the rest is left as it was.
inline FusedScale fused_scale_pitch_tc(const FloatMatrix& tile_amax, float g, GlobalScaleRule rule) {
  FusedScale f = fused_scale_2d(tile_amax, g, rule);
  const std::size_t tc = tile_amax.shape(1), M = 16 * tile_amax.shape(0);
  ByteMatrix scale = xt::zeros<std::uint8_t>(f.scale.shape());
  for (std::size_t r = 0; r < f.scale.shape(0); ++r)
    for (std::size_t j = 0; j < tc; ++j) scale.data()[r * tc + j] = r < M ? e4m3sat(f.tile_scale(r / 16, j)) : 0;
  f.scale = scale;
  return f;
}

// A byte-granular all-gather: byte B is copied whole from the rank that owns element 2B, so a
// byte shared with the next rank loses that rank's nibble.
inline std::vector<std::uint8_t> gather_bytes(const std::vector<RankRange>& ranks,
                                              const std::vector<std::vector<std::uint8_t>>& buffers) {
  std::vector<std::uint8_t> out(std::size_t((ranks.back().end + 1) / 2), 0);
  for (std::size_t rho = 0; rho < ranks.size(); ++rho)
    for (std::int64_t B = ranks[rho].first_byte(); B < ranks[rho].first_byte() + ranks[rho].buffer_bytes(); ++B)
      if (2 * B >= ranks[rho].begin && 2 * B < ranks[rho].end) out[B] = buffers[rho][B - ranks[rho].first_byte()];
  return out;
}

inline FlowSteps steps_with(UpstreamBug bug) {
  FlowSteps s;
  if (bug == UpstreamBug::kPartialCastIdxTe) s.partial_cast = partial_cast_idx_te;
  if (bug == UpstreamBug::kFusedScalePitchTc) s.fused_scale = fused_scale_pitch_tc;
  if (bug == UpstreamBug::kAllgatherBytes) s.gather = gather_bytes;
  return s;
}

// The reference, except that cast_master_weights runs with the bug.
class UpstreamBugBackend : public cases::Backend {
 public:
  explicit UpstreamBugBackend(UpstreamBug bug) : bug_(bug) {}
  std::string_view name() const override { return "upstream-bug"; }
  cases::TensorMap run(const cases::Case& c) override;

 private:
  UpstreamBug bug_;
};

inline cases::TensorMap UpstreamBugBackend::run(const cases::Case& c) {
  if (c.op != "cast_master_weights") return cases::ReferenceBackend().run(c);
  const cases::MasterWeightsInput in = cases::master_weights_input(c);
  const std::vector<CastWeight> w = cast_master_weights(in.weights, in.ranks, cases::case_profile(c), steps_with(bug_));
  cases::TensorMap out;
  for (std::size_t i = 0; i < w.size(); ++i) cases::add_cast_weight_outputs(out, in.names[i], w[i]);
  return out;
}

}  // namespace nvfp4::test_support
