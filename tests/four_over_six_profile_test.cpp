// The te-4over6 profiles (docs/NUMERICS.md §4.2.7, [knob CAND]) on hand-derived blocks. With the
// amax override g = 1536 the global scale is S = RN(1536 / 1536) = 1, so the map-to-6 block of
// amax 6 has the scale 1.0 (0x38) and encodes y = x, and the map-to-4 block has the scale 1.5
// (0x3C) and encodes y = RN(x * RN(1 / 1.5)); each decodes to RN(RN(RN(f4 * sf) * 1536) / 1536),
// which is f4 * sf for these values.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "reference/profiles.h"
#include "reference/quantize.h"
#include "tests/support/quantize_options.h"

namespace nvfp4 {
namespace {

using test_support::opts;

const Profile& mae() { return find_profile("te-4over6-mae")->knobs; }
const Profile& mse() { return find_profile("te-4over6-mse")->knobs; }

// An [M, 16] input whose every row is `row`.
FloatMatrix rows_of(const std::vector<float>& row, std::size_t M) {
  FloatMatrix x = xt::empty<float>({M, std::size_t(16)});
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t k = 0; k < 16; ++k) x(r, k) = row[k];
  return x;
}

QuantizedTensor rowwise(const FloatMatrix& x, const Profile& p, BlockShape b = BlockShape::k1D) {
  QuantizeOptions o = opts(p, b, Direction::kRowwise);
  o.amax = 1536.0f;
  return *quantize(x, o).rowwise;
}

std::vector<int> bytes_of_row(const ByteMatrix& data, std::size_t r) {
  std::vector<int> out;
  for (std::size_t k = 0; k < data.shape(1); ++k) out.push_back(data(r, k));
  return out;
}

// Per element |map-to-6 error|, |map-to-4 error|: 6: 0, 0 (6 -> 4 * 1.5); 5: 1 (5 -> 4, its tie goes
// to the even 4), 0.5 (3.33 -> 3, 4.5); 4: 0, 0.5 (2.67 -> 3, 4.5); 3: 0, 0 (2 * 1.5).
const std::vector<float> kSplit = {6, 5, 4, 4, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};

TEST(FourOverSixProfile, MaeAndMseChooseDifferentCandidates) {
  const FloatMatrix x = rows_of(kSplit, 16);
  // MAE: map-to-6 1 < map-to-4 1.5, so map-to-6: codes 7, 6, 6, 6, then 5 (value 3).
  const QuantizedTensor a = rowwise(x, mae());
  EXPECT_EQ(int(a.scale(0, 0)), 0x38);
  EXPECT_EQ(bytes_of_row(a.data, 0), (std::vector<int>{0x67, 0x66, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55}));
  // MSE: map-to-6 1 > map-to-4 0.25 * 3, so map-to-4: codes 6 (4), 5, 5, 5, then 4 (value 2).
  const QuantizedTensor s = rowwise(x, mse());
  EXPECT_EQ(int(s.scale(0, 0)), 0x3C);
  EXPECT_EQ(bytes_of_row(s.data, 0), (std::vector<int>{0x56, 0x55, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44}));
}

// A 16x16 tile chooses once, from its rows' summed errors: row 0 alone prefers map-to-4 (4.5 is
// exact as 3 * 1.5, error 0, where map-to-6 rounds it to 4, error 0.5 each), the other 15 rows
// prefer map-to-6 (their 4s cost map-to-4 0.5 each), and the tile keeps map-to-6 on all its rows.
TEST(FourOverSixProfile, TileChoosesOnceForItsSixteenRows) {
  std::vector<float> favours4(16, 4.5f), favours6(16, 4.0f);
  favours4[0] = favours6[0] = 6.0f;
  FloatMatrix x = rows_of(favours6, 16);
  for (std::size_t k = 0; k < 16; ++k) x(0, k) = favours4[k];
  for (const Profile* p : {&mae(), &mse()}) {
    const QuantizedTensor one_d = rowwise(x, *p);
    EXPECT_EQ(int(one_d.scale(0, 0)), 0x3C) << "row 0 alone: map-to-4";
    EXPECT_EQ(bytes_of_row(one_d.data, 0), (std::vector<int>{0x56, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55}));
    EXPECT_EQ(int(one_d.scale(1, 0)), 0x38) << "row 1 alone: map-to-6";
    const QuantizedTensor two_d = rowwise(x, *p, BlockShape::k2D);
    for (std::size_t r = 0; r < 16; ++r) EXPECT_EQ(int(two_d.scale(r, 0)), 0x38) << "tile row " << r;
    EXPECT_EQ(bytes_of_row(two_d.data, 0), (std::vector<int>{0x67, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66}))
        << "4.5 rounds to 4 under map-to-6";
  }
}

// A tie keeps map-to-6: with every element 6 (or 3) both candidates are exact.
TEST(FourOverSixProfile, TieKeepsMapToSix) {
  std::vector<float> exact(16, 3.0f);
  exact[0] = 6.0f;
  const QuantizedTensor q = rowwise(rows_of(exact, 16), mae());
  EXPECT_EQ(int(q.scale(0, 0)), 0x38);
  EXPECT_EQ(int(q.data(0, 0)), 0x57);
}

// The 256 bound: S = RN(1536 / g), where te-pyref's is RN(2688 / g).
TEST(FourOverSixProfile, GlobalScaleUsesTheBound256) {
  EXPECT_EQ(global_scale(mae().gs, 6.0f).S, 256.0f);
  EXPECT_EQ(global_scale(find_profile("te-pyref")->knobs.gs, 6.0f).S, 448.0f);
  EXPECT_EQ(global_scale(mae().gs, 0.0f).S, constants::flt_max()) << "no g == 0 test, as TE_PYREF";
}

// Under stochastic rounding the candidate is chosen by its round-to-nearest codes, then rounded
// stochastically: the MSE block of kSplit keeps map-to-4's scale whatever the random bits.
TEST(FourOverSixProfile, StochasticRoundingRoundsTheCandidateChosenToNearest) {
  QuantizeOptions o = opts(mse(), BlockShape::k1D, Direction::kRowwise);
  o.amax = 1536.0f;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    o.stochastic = StochasticRounding{seed, 0};
    EXPECT_EQ(int(quantize(rows_of(kSplit, 16), o).rowwise->scale(0, 0)), 0x3C) << seed;
  }
}

}  // namespace
}  // namespace nvfp4
