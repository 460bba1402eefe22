// Unit tests of amax and its NaN rules (NUMERICS.md §3.1-§3.3). Expected values come from the
// specification, computed directly from §3.1, never from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reference/amax.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "tests/support/quantize_checks.h"
#include "tests/support/quantize_options.h"
#include "tests/support/te_model.h"

namespace nvfp4 {
namespace {

using test_support::fbits;
using test_support::opts;
using test_support::profile;
using test_support::te;
using test_support::ubits;

// ---- amax and its NaN rules (§3.1-§3.3) -----------------------------------------------------

// 32x32 input with scattered NaNs, an all-NaN row, an all-NaN column, an all-NaN 1x16 block and
// an all-NaN 16x16 tile; -0.0 and +-inf elsewhere are covered by their own test.
FloatMatrix nan_pattern() {
  FloatMatrix x = xt::zeros<float>({32, 32});
  for (std::size_t r = 0; r < 32; ++r)
    for (std::size_t c = 0; c < 32; ++c) x(r, c) = float(int((r * 37 + c * 11) % 29) - 14) * 0.375f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  x(0, 3) = nan;
  x(5, 20) = -nan;
  x(10, 30) = fbits(0x7F800001u);                       // signalling payload
  for (std::size_t c = 0; c < 32; ++c) x(7, c) = nan;   // row 7
  for (std::size_t r = 0; r < 32; ++r) x(r, 9) = nan;   // column 9
  for (std::size_t c = 16; c < 32; ++c) x(2, c) = nan;  // block (2, 1)
  for (std::size_t r = 16; r < 32; ++r)
    for (std::size_t c = 16; c < 32; ++c) x(r, c) = fbits(0xFFC00000u);  // tile (1, 1)
  return x;
}

// Expected amax of one set of values under a rule, computed directly from §3.1.
float expect_amax(const std::vector<float>& v, AmaxRule rule) {
  float m = 0.0f;
  bool any_nan = false;
  for (float f : v) {
    if (std::isnan(f))
      any_nan = true;
    else
      m = std::max(m, std::fabs(f));
  }
  return rule == AmaxRule::PROPAGATE && any_nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

// NaN outputs must be the canonical 0x7FFFFFFF (spec contract); others bit-exact (+0, not -0).
void expect_amax_bits(float got, float want, const std::string& where) {
  if (std::isnan(want))
    EXPECT_EQ(ubits(got), 0x7FFFFFFFu) << where;
  else
    EXPECT_EQ(ubits(got), ubits(want)) << where << " got " << got << " want " << want;
}

TEST(QuantizeAmax, NanRulesGlobalRowsCols) {
  const FloatMatrix x = nan_pattern();
  for (AmaxRule rule : {AmaxRule::IGNORE, AmaxRule::PROPAGATE}) {
    SCOPED_TRACE(rule == AmaxRule::IGNORE ? "IGNORE" : "PROPAGATE");
    expect_amax_bits(amax_global(x, rule), expect_amax(std::vector<float>(x.begin(), x.end()), rule), "global");
    const FloatVector rows = amax_rows(x, rule), cols = amax_cols(x, rule);
    ASSERT_EQ(rows.size(), 32u);
    ASSERT_EQ(cols.size(), 32u);
    for (std::size_t r = 0; r < 32; ++r) {
      std::vector<float> v;
      for (std::size_t c = 0; c < 32; ++c) v.push_back(x(r, c));
      expect_amax_bits(rows(r), expect_amax(v, rule), "row " + std::to_string(r));
    }
    for (std::size_t c = 0; c < 32; ++c) {
      std::vector<float> v;
      for (std::size_t r = 0; r < 32; ++r) v.push_back(x(r, c));
      expect_amax_bits(cols(c), expect_amax(v, rule), "col " + std::to_string(c));
    }
  }
  // Spot checks against the construction: the all-NaN row is +0 under IGNORE, NaN under PROPAGATE.
  EXPECT_EQ(ubits(amax_rows(x, AmaxRule::IGNORE)(7)), 0u);
  EXPECT_TRUE(std::isnan(amax_rows(x, AmaxRule::PROPAGATE)(7)));
  EXPECT_EQ(ubits(amax_cols(x, AmaxRule::IGNORE)(9)), 0u);
}

TEST(QuantizeAmax, NanRulesBlocksAndTiles) {
  const FloatMatrix x = nan_pattern();
  for (AmaxRule rule : {AmaxRule::IGNORE, AmaxRule::PROPAGATE}) {
    SCOPED_TRACE(rule == AmaxRule::IGNORE ? "IGNORE" : "PROPAGATE");
    const FloatMatrix b1 = amax_blocks_1x16(x, rule), b2 = amax_blocks_16x1(x, rule), t = amax_tiles_16x16(x, rule);
    ASSERT_EQ((std::vector<std::size_t>{b1.shape(0), b1.shape(1)}), (std::vector<std::size_t>{32, 2}));
    ASSERT_EQ((std::vector<std::size_t>{b2.shape(0), b2.shape(1)}), (std::vector<std::size_t>{2, 32}));
    ASSERT_EQ((std::vector<std::size_t>{t.shape(0), t.shape(1)}), (std::vector<std::size_t>{2, 2}));
    for (std::size_t r = 0; r < 32; ++r)
      for (std::size_t j = 0; j < 2; ++j) {
        std::vector<float> v;
        for (std::size_t i = 0; i < 16; ++i) v.push_back(x(r, 16 * j + i));
        expect_amax_bits(b1(r, j), expect_amax(v, rule), "1x16 block " + std::to_string(r) + "," + std::to_string(j));
      }
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t c = 0; c < 32; ++c) {
        std::vector<float> v;
        for (std::size_t k = 0; k < 16; ++k) v.push_back(x(16 * i + k, c));
        expect_amax_bits(b2(i, c), expect_amax(v, rule), "16x1 block " + std::to_string(i) + "," + std::to_string(c));
      }
    for (std::size_t ti = 0; ti < 2; ++ti)
      for (std::size_t tj = 0; tj < 2; ++tj) {
        std::vector<float> v;
        for (std::size_t r = 16 * ti; r < 16 * ti + 16; ++r)
          for (std::size_t c = 16 * tj; c < 16 * tj + 16; ++c) v.push_back(x(r, c));
        expect_amax_bits(t(ti, tj), expect_amax(v, rule), "tile " + std::to_string(ti) + "," + std::to_string(tj));
      }
  }
  // The all-NaN block and tile: +0 under IGNORE (§3.2).
  EXPECT_EQ(ubits(amax_blocks_1x16(x, AmaxRule::IGNORE)(2, 1)), 0u);
  EXPECT_EQ(ubits(amax_tiles_16x16(x, AmaxRule::IGNORE)(1, 1)), 0u);
}

TEST(QuantizeAmax, SignedZeroInfinityAndEmpty) {
  FloatMatrix z = xt::zeros<float>({16, 16});
  for (float& v : z) v = -0.0f;
  for (AmaxRule rule : {AmaxRule::IGNORE, AmaxRule::PROPAGATE}) {
    EXPECT_EQ(ubits(amax_global(z, rule)), 0u);  // |-0| = +0
    EXPECT_EQ(ubits(amax_rows(z, rule)(3)), 0u);
    FloatMatrix w = z;
    w(4, 5) = -std::numeric_limits<float>::infinity();
    EXPECT_EQ(ubits(amax_global(w, rule)), 0x7F800000u);
    EXPECT_EQ(ubits(amax_global(FloatMatrix(xt::zeros<float>({0, 16})), rule)), 0u);
  }
  // An all-NaN tensor: +0 under IGNORE (§3.1).
  FloatMatrix n = xt::zeros<float>({16, 16});
  for (float& v : n) v = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(ubits(amax_global(n, AmaxRule::IGNORE)), 0u);
  EXPECT_EQ(ubits(amax_global(n, AmaxRule::PROPAGATE)), 0x7FFFFFFFu);
}

// The amax stored by quantize follows the profile's rule: te (IGNORE) vs te-pyref (PROPAGATE).
TEST(QuantizeAmax, StoredAmaxFollowsProfileRule) {
  const FloatMatrix x = nan_pattern();
  const float want = expect_amax(std::vector<float>(x.begin(), x.end()), AmaxRule::IGNORE);
  const Quantization a = quantize(x, opts(te()));
  EXPECT_EQ(ubits(a.rowwise->amax(0)), ubits(want));
  EXPECT_EQ(ubits(a.columnwise->amax(0)), ubits(want));
  const Quantization b = quantize(x, opts(profile("te-pyref")));
  EXPECT_EQ(ubits(b.rowwise->amax(0)), 0x7FFFFFFFu);
  // Row-scaled: amax [M] = row amaxes, columnwise [K] = column amaxes (§3.12), IGNORE.
  const Quantization c = quantize(x, opts(te(), BlockShape::k1D, Direction::kBoth, true));
  for (std::size_t r = 0; r < 32; ++r) {
    std::vector<float> row(&x(r, 0), &x(r, 0) + 32), col;
    for (std::size_t k = 0; k < 32; ++k) col.push_back(x(k, r));
    EXPECT_EQ(ubits(c.rowwise->amax(r)), ubits(expect_amax(row, AmaxRule::IGNORE))) << r;
    EXPECT_EQ(ubits(c.columnwise->amax(r)), ubits(expect_amax(col, AmaxRule::IGNORE))) << r;
  }
}

}  // namespace
}  // namespace nvfp4
