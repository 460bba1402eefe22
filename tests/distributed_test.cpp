// The distributed 2D weight cast on the CPU (NUMERICS.md §3.4, §3.15-§3.17): the worked examples
// §6.16 and §6.17 with their known-bad variants, unit tests of each step and of the partition,
// and the composite flow's property (equal to quantize_2d for any ranks and cut points).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <limits>
#include <random>

#include "cases/metamorphic_backend.h"
#include "cases/reference_backend.h"
#include "compare/diff.h"
#include "fuzz/case_generator.h"
#include "io/tensor_convert.h"
#include "reference/amax.h"
#include "reference/error.h"
#include "reference/fused_scale.h"
#include "reference/nibble_gather.h"
#include "reference/partial_amax.h"
#include "reference/partial_cast.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "reference/transpose.h"
#include "tests/support/quantize_options.h"
#include "tests/support/upstream_bugs.h"

namespace nvfp4 {
namespace {

using test_support::UpstreamBug;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const Profile& te() { return find_profile("te")->knobs; }

Profile te_with(GlobalScaleRule gs) {
  Profile p = te();
  p.gs = gs;
  return p;
}

std::vector<std::uint8_t> repeat(const std::vector<std::uint8_t>& pattern, int times) {
  std::vector<std::uint8_t> v;
  for (int i = 0; i < times; ++i) v.insert(v.end(), pattern.begin(), pattern.end());
  return v;
}

FloatVector slice(const FloatMatrix& w, Shard s) {
  FloatVector xs = xt::empty<float>({std::size_t(s.length)});
  std::copy_n(w.data() + s.start, s.length, xs.begin());
  return xs;
}

template <class E>
ErrorCode error_code_of(E&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode(-1);
}

// ---- §6.16: W[r][c] = f4(c), g = 6, two ranks [0, 129) and [129, 256) ----------------------------

const std::vector<std::uint8_t> kRow616 = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE};

FloatMatrix weight_616() {
  FloatMatrix w = xt::empty<float>({16, 16});
  for (std::size_t r = 0; r < 16; ++r)
    for (std::size_t c = 0; c < 16; ++c) w(r, c) = e2m1_decode(std::uint8_t(c));
  return w;
}

FusedScale fused_616() { return fused_scale_2d(FloatMatrix({{6.0f}}), 6.0f, GlobalScaleRule::TE); }

TEST(WorkedExample616, FusedScaleOfTheSingleTileIs0x7E) {
  const FusedScale f = fused_616();
  EXPECT_EQ(f.scale(0, 0), 0x7E);
  EXPECT_EQ(partial_cast_encode_factor(f.tile_scale(0, 0), partial_cast_decode_scale(f.S)), 1.0f);
}

TEST(WorkedExample616, OddStartRankWritesItsOwnNibblesOnly) {
  const FloatMatrix w = weight_616();
  const Shard rank1{129, 127};
  std::vector<std::uint8_t> local(std::size_t(rank1.local_bytes()), 0);
  ASSERT_EQ(local.size(), 64u);
  const FusedScale f = fused_616();
  partial_cast_2d(slice(w, rank1), 16, 16, rank1, f.tile_scale, f.S, CastTarget::kShardLocal, {local.data(), local.size()});
  EXPECT_THAT(local, ElementsAreArray(repeat(kRow616, 8)));
  const Shard rank0{0, 129};
  std::vector<std::uint8_t> local0(std::size_t(rank0.local_bytes()), 0);
  partial_cast_2d(slice(w, rank0), 16, 16, rank0, f.tile_scale, f.S, CastTarget::kShardLocal, {local0.data(), local0.size()});
  EXPECT_EQ(local0.back(), 0x00);  // element 128 has code 0; element 129 is rank 1's
  const std::vector<std::uint8_t> merged = gather_nibbles({{0, 129}, {129, 256}}, {local0, local});
  EXPECT_THAT(merged, ElementsAreArray(repeat(kRow616, 16)));
}

TEST(WorkedExample616, TeIndexVariantShiftsThePairsAndSkipsTheLastByte) {
  const FloatMatrix w = weight_616();
  const Shard rank1{129, 127};
  std::vector<std::uint8_t> local(64, 0);
  const FusedScale f = fused_616();
  test_support::partial_cast_idx_te(slice(w, rank1), 16, 16, rank1, f.tile_scale, f.S, {local.data(), local.size()});
  std::vector<std::uint8_t> want;
  for (int b = 0; b < 63; ++b) want.push_back(kRow616[(b + 1) % 8]);  // 32 54 76 98 BA DC FE 10 32 ...
  want.push_back(0x00);
  EXPECT_THAT(local, ElementsAreArray(want));
}

TEST(WorkedExample616, CompositeFlowEqualsQuantize2DAndEveryBugBreaksIt) {
  const std::vector<FloatMatrix> weights = {weight_616()};
  const std::vector<RankRange> ranks = rank_ranges(256, 2, {129});
  const std::vector<CastWeight> ok = cast_master_weights(weights, ranks, te());
  EXPECT_THAT(std::vector<std::uint8_t>(ok[0].data.begin(), ok[0].data.end()), ElementsAreArray(repeat(kRow616, 16)));
  const Quantization q = quantize(weights[0], test_support::opts(te(), BlockShape::k2D));
  EXPECT_EQ(ok[0].data, q.rowwise->data);
  EXPECT_EQ(ok[0].data_t, q.columnwise->data);
  EXPECT_EQ(ok[0].scale, q.rowwise->scale);
  EXPECT_EQ(ok[0].scale_t, q.columnwise->scale);
  // §5.3: byte 64 taken from rank 0 loses element 129's nibble (0x00 instead of 0x10).
  const CastWeight bytes = cast_master_weights(weights, ranks, te(), test_support::steps_with(UpstreamBug::kAllgatherBytes))[0];
  EXPECT_EQ(bytes.data(8, 0), 0x00);
  EXPECT_EQ(ok[0].data(8, 0), 0x10);
  const CastWeight idx = cast_master_weights(weights, ranks, te(), test_support::steps_with(UpstreamBug::kPartialCastIdxTe))[0];
  EXPECT_NE(idx.data, ok[0].data);
}

// ---- §6.17: h = w = 32, T = [[6, 3], [1.5, 0.75]], g = 6 -----------------------------------------

TEST(WorkedExample617, ScalesUseThePaddedPitch) {
  const FusedScale f = fused_scale_2d(FloatMatrix({{6.0f, 3.0f}, {1.5f, 0.75f}}), 6.0f, GlobalScaleRule::TE);
  ASSERT_EQ(f.scale.shape(0), 128u);
  ASSERT_EQ(f.scale.shape(1), 4u);
  for (std::size_t r = 0; r < 128; ++r) {
    const std::vector<std::uint8_t> want = r < 16   ? std::vector<std::uint8_t>{0x7E, 0x76, 0, 0}
                                           : r < 32 ? std::vector<std::uint8_t>{0x6E, 0x66, 0, 0}
                                                    : std::vector<std::uint8_t>{0, 0, 0, 0};
    EXPECT_THAT(std::vector<std::uint8_t>(&f.scale(r, 0), &f.scale(r, 0) + 4), ElementsAreArray(want)) << "row " << r;
  }
}

TEST(WorkedExample617, PitchTcVariantMisplacesRows) {
  const FusedScale f = test_support::fused_scale_pitch_tc(FloatMatrix({{6.0f, 3.0f}, {1.5f, 0.75f}}), 6.0f, GlobalScaleRule::TE);
  for (std::size_t r = 0; r < 64; ++r) {
    const std::vector<std::uint8_t> want = r < 8    ? std::vector<std::uint8_t>{0x7E, 0x76, 0x7E, 0x76}
                                           : r < 16 ? std::vector<std::uint8_t>{0x6E, 0x66, 0x6E, 0x66}
                                                    : std::vector<std::uint8_t>{0, 0, 0, 0};
    EXPECT_THAT(std::vector<std::uint8_t>(&f.scale(r, 0), &f.scale(r, 0) + 4), ElementsAreArray(want)) << "row " << r;
  }
}

// ---- steps ----------------------------------------------------------------------------------------

TEST(PartialAmax, CountsOwnedElementsOnlyAndZeroesUntouchedTiles) {
  FloatMatrix w = xt::zeros<float>({32, 32});
  w(0, 0) = 100.0f;  // tile (0,0), flat 0: not owned
  w(0, 17) = -3.0f;  // tile (0,1), flat 17: owned
  w(16, 0) = 7.0f;   // tile (1,0), flat 512: owned
  w(31, 31) = 9.0f;  // flat 1023: not owned
  const Shard s{1, 1000};
  const PartialAmax a = amax_partial(slice(w, s), 32, 32, s, AmaxRule::IGNORE);
  EXPECT_EQ(a.tiles(0, 0), 0.0f);
  EXPECT_EQ(a.tiles(0, 1), 3.0f);
  EXPECT_EQ(a.tiles(1, 0), 7.0f);
  EXPECT_EQ(a.tiles(1, 1), 0.0f);
  EXPECT_EQ(a.amax, 7.0f);
  const PartialAmax empty = amax_partial(FloatVector(xt::empty<float>({0})), 32, 32, Shard{17, 0}, AmaxRule::IGNORE);
  EXPECT_EQ(empty.amax, 0.0f);
  EXPECT_EQ(xt::amax(empty.tiles)(), 0.0f);
}

TEST(PartialAmax, NanRuleFollowsTheAmaxKnob) {
  FloatMatrix w = xt::ones<float>({16, 16});
  w(3, 3) = std::numeric_limits<float>::quiet_NaN();
  const Shard s{0, 256};
  EXPECT_EQ(amax_partial(slice(w, s), 16, 16, s, AmaxRule::IGNORE).tiles(0, 0), 1.0f);
  EXPECT_TRUE(is_nan(amax_partial(slice(w, s), 16, 16, s, AmaxRule::PROPAGATE).tiles(0, 0)));
}

TEST(PartialCast, KeepsTheOtherNibbleOfBoundaryBytesAndMatchesQuantize2D) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  FloatMatrix w = xt::empty<float>({48, 80});
  for (float& v : w) v = bf16_to_float(float_to_bf16(normal(rng)));
  const float g = amax_global(w, AmaxRule::IGNORE);
  const FusedScale f = fused_scale_2d(amax_tiles_16x16(w, AmaxRule::IGNORE), g, GlobalScaleRule::TE);
  const Quantization q = quantize(w, test_support::opts(te(), BlockShape::k2D, Direction::kRowwise));
  for (const Shard s :
       {Shard{3, 1}, Shard{1, 2}, Shard{17, 1000}, Shard{80, 160}, Shard{1279, 2560}, Shard{0, 3840}, Shard{5, 0}}) {
    std::vector<std::uint8_t> prior(1920);
    for (auto& b : prior) b = std::uint8_t(rng());
    std::vector<std::uint8_t> whole = prior;
    partial_cast_2d(slice(w, s), 48, 80, s, f.tile_scale, f.S, CastTarget::kWholeTensor, {whole.data(), whole.size()});
    std::vector<std::uint8_t> local(prior.begin() + s.first_byte(), prior.begin() + s.first_byte() + s.local_bytes());
    partial_cast_2d(slice(w, s), 48, 80, s, f.tile_scale, f.S, CastTarget::kShardLocal, {local.data(), local.size()});
    for (std::int64_t e = 0; e < 3840; ++e) {
      const bool owned = e >= s.start && e < s.end();
      const std::uint8_t want = nibble_at(owned ? q.rowwise->data.data()[e / 2] : prior[e / 2], int(e % 2));
      ASSERT_EQ(nibble_at(whole[e / 2], int(e % 2)), want) << "element " << e << " shard [" << s.start << ", " << s.end() << ")";
      if (e / 2 >= s.first_byte() && e / 2 < s.first_byte() + s.local_bytes()) {
        ASSERT_EQ(nibble_at(local[shard_local_byte(e, s.start)], int(e % 2)), want) << "element " << e;
      }
    }
  }
}

TEST(PartialCast, RejectsBadShardsAndDestinations) {
  const FloatMatrix tiles = xt::ones<float>({1, 1});
  std::vector<std::uint8_t> buf(200);
  EXPECT_EQ(
      error_code_of([&] {
        partial_cast_2d(xt::zeros<float>({10}), 16, 16, {250, 10}, tiles, 1.0f, CastTarget::kWholeTensor, {buf.data(), 128});
      }),
      ErrorCode::E_SHARD);
  EXPECT_EQ(error_code_of([&] {
              partial_cast_2d(xt::zeros<float>({10}), 16, 16, {3, 10}, tiles, 1.0f, CastTarget::kShardLocal, {buf.data(), 5});
            }),
            ErrorCode::E_DATA_SHAPE);  // [3, 13) covers bytes 1..6: 6 bytes
  EXPECT_EQ(error_code_of([&] {
              partial_cast_2d(xt::zeros<float>({10}), 16, 24, {3, 10}, tiles, 1.0f, CastTarget::kShardLocal, {buf.data(), 6});
            }),
            ErrorCode::E_DIM16_K);
  EXPECT_EQ(error_code_of([&] { amax_partial(xt::zeros<float>({10}), 16, 16, {-1, 10}, AmaxRule::IGNORE); }), ErrorCode::E_SHARD);
}

TEST(FusedScale, TeHelperDiffersFromTeOnlyForInfiniteAndNanAmax) {
  const FloatMatrix T = {{6.0f, std::numeric_limits<float>::infinity()}};
  for (float g : {6.0f, 1e-38f, 3.0e38f}) {
    EXPECT_EQ(fused_scale_2d(T, g, GlobalScaleRule::TE).scale, fused_scale_2d(T, g, GlobalScaleRule::TE_HELPER).scale) << g;
  }
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fused_scale_2d(T, inf, GlobalScaleRule::TE).S, 1.0f);
  EXPECT_EQ(fused_scale_2d(T, inf, GlobalScaleRule::TE_HELPER).S, 0.0f);  // §5.5: P = 0 and inf*0 -> NaN -> FLT_MAX
  EXPECT_EQ(fused_scale_2d(T, inf, GlobalScaleRule::TE_HELPER).scale(0, 0), 0x00);
  EXPECT_EQ(fused_scale_2d(T, std::numeric_limits<float>::quiet_NaN(), GlobalScaleRule::TE_HELPER).S, 1.0f);
  EXPECT_EQ(error_code_of([&] { fused_scale_2d(T, 6.0f, GlobalScaleRule::PTS); }), ErrorCode::E_UNSUPPORTED);
}

TEST(TransposeScales2D, RowsOfAPartialLastTileAreZero) {
  const ByteMatrix in = xt::full_like(ByteMatrix(xt::empty<std::uint8_t>({128, 4})), std::uint8_t(0x7E));  // K = 40
  const ByteMatrix out = transpose_scales_2d(in, 32, 40);
  for (std::size_t k = 0; k < 128; ++k)
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(out(k, i), k < 32 && i < 2 ? 0x7E : 0x00) << k << ", " << i;
  EXPECT_EQ(transpose_scales_2d(ByteMatrix(xt::empty<std::uint8_t>({128, 0})), 16, 8),
            ByteMatrix(xt::zeros<std::uint8_t>({128, 4})));
}

// ---- partition -------------------------------------------------------------------------------

TEST(Partition, RankRangesCheckTheirCutPoints) {
  EXPECT_EQ(rank_ranges(100, 3, {33, 33}).at(1).end, 33);  // an empty rank is allowed
  EXPECT_EQ(error_code_of([] { rank_ranges(100, 3, {50, 40}); }), ErrorCode::E_SHARD);
  EXPECT_EQ(error_code_of([] { rank_ranges(100, 3, {50}); }), ErrorCode::E_SHARD);
  EXPECT_EQ(error_code_of([] { rank_ranges(100, 2, {101}); }), ErrorCode::E_SHARD);
  EXPECT_EQ(error_code_of([] { rank_ranges(100, 65, equal_cuts(100, 65)); }), ErrorCode::E_SHARD);
  EXPECT_EQ(equal_cuts(10, 4), (std::vector<std::int64_t>{2, 5, 7}));
}

TEST(Partition, PiecesOfARankSpanningWeights) {
  // Weights of 256 and 512 elements; the rank owns [255, 601).
  const std::vector<ShardPiece> p = rank_pieces({256, 512}, RankRange{255, 601});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].weight, 0u);
  EXPECT_EQ(p[0].shard.start, 255);
  EXPECT_EQ(p[0].shard.length, 1);
  EXPECT_EQ(p[0].buffer_offset, 0);
  EXPECT_EQ(p[1].shard.start, 0);
  EXPECT_EQ(p[1].shard.length, 345);
  EXPECT_EQ(p[1].buffer_offset, 1);  // global byte 128 is the rank's byte 1
  EXPECT_EQ(RankRange({255, 601}).buffer_bytes(), 174);
}

// ---- the composite flow ----------------------------------------------------------------------

TEST(CastMasterWeights, TeHelperDivergesFromQuantize2DForAnInfiniteAmax) {
  FloatMatrix w = xt::ones<float>({16, 32});
  const std::vector<RankRange> ranks = rank_ranges(512, 3, {101, 333});
  const Quantization q = quantize(w, test_support::opts(te(), BlockShape::k2D));
  EXPECT_EQ(cast_master_weights({w}, ranks, te_with(GlobalScaleRule::TE_HELPER))[0].data, q.rowwise->data);
  w(0, 0) = std::numeric_limits<float>::infinity();
  const Quantization qi = quantize(w, test_support::opts(te(), BlockShape::k2D));
  EXPECT_EQ(cast_master_weights({w}, ranks, te())[0].data, qi.rowwise->data);
  EXPECT_NE(cast_master_weights({w}, ranks, te_with(GlobalScaleRule::TE_HELPER))[0].scale, qi.rowwise->scale);
}

TEST(CastMasterWeights, RejectsProfilesOtherThanTe) {
  const FloatMatrix w = xt::ones<float>({16, 16});
  EXPECT_EQ(error_code_of([&] { cast_master_weights({w}, rank_ranges(256, 1, {}), find_profile("te-2.13")->knobs); }),
            ErrorCode::E_UNSUPPORTED);
}

// §3.17's property, on generated cases: the flow (reference backend) equals quantize_2d of each
// whole weight (metamorphic backend) for 1..64 ranks, cut points of every kind and 1-4 weights.
RC_GTEST_PROP(CastMasterWeightsProperty, EqualsQuantize2DOfEachWholeWeight, ()) {
  const cases::CaseRecord r = *fuzz::case_record({{"cast_master_weights"}, {"te"}, 96});
  const cases::TensorMap flow = cases::ReferenceBackend().run(r.c);
  const cases::TensorMap whole = cases::MetamorphicBackend().run(r.c);
  RC_ASSERT(!flow.empty());
  const std::vector<compare::TensorDiff> d = compare::diff_outputs(whole, flow);
  RC_ASSERT(d.empty());
}

// The other distributed operations' generated cases are valid and satisfy their relations.
RC_GTEST_PROP(DistributedOpsProperty, GeneratedCasesRunAndSatisfyTheirRelations, ()) {
  const cases::CaseRecord r = *fuzz::case_record({{"amax_partial", "fused_scale_2d", "partial_cast_2d"}, {}, 128});
  const cases::TensorMap ref = cases::ReferenceBackend().run(r.c);
  RC_ASSERT(compare::diff_outputs(ref, cases::MetamorphicBackend().run(r.c)).empty());
}

TEST(ShardLimits, HugeWeightsAndShardsThatWouldOverflowAreRefused) {
  const FloatVector sixteen = xt::zeros<float>({std::size_t{16}});
  const auto code_of = [&](std::int64_t M, std::int64_t K, Shard s) {
    try {
      amax_partial(sixteen, M, K, s, AmaxRule::IGNORE);
    } catch (const Error& e) {
      return e.code();
    }
    ADD_FAILURE() << M << "x" << K << " shard at " << s.start << " was accepted";
    return ErrorCode::E_UNSUPPORTED;
  };
  // M * K = 2^64 wraps to 0 in 64 bits.
  EXPECT_EQ(code_of(std::int64_t{1} << 32, std::int64_t{1} << 32, Shard{0, 16}), ErrorCode::E_SHARD);
  // start + length wraps negative, which would pass an end() <= M * K check.
  EXPECT_EQ(code_of(32, 32, Shard{std::numeric_limits<std::int64_t>::max() - 1, 16}), ErrorCode::E_SHARD);
}

}  // namespace
}  // namespace nvfp4
