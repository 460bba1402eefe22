// te quantization (NUMERICS.md §3.5-§3.12) against the small independent `te` model
// (tests/support/te_model.h) and the spec's worked examples, never against the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "fuzz/generators.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "tests/support/quantize_checks.h"
#include "tests/support/quantize_options.h"
#include "tests/support/te_model.h"

namespace nvfp4 {
namespace {

using test_support::amax_ignore_ref;
using test_support::expect_bytes_eq;
using test_support::fbits;
using test_support::kShapes;
using test_support::opts;
using test_support::profile;
using test_support::randn;
using test_support::RefOut;
using test_support::ShapeCase;
using test_support::te;
using test_support::te_rowwise_ref;
using test_support::ubits;

// 1D rowwise and columnwise (= rowwise of x^T, §3.10), several data kinds incl. specials.
TEST(QuantizeReference, TeMatchesIndependentModel1D) {
  // kBf16 matters: with 8-bit mantissas the scale-order ties of §6.8 occur on ~0.1 % of blocks.
  const fuzz::Dist dists[] = {fuzz::Dist::kRandn, fuzz::Dist::kBlockLogUniform, fuzz::Dist::kSpecials,
                              fuzz::Dist::kGrid,  fuzz::Dist::kUniform,         fuzz::Dist::kBf16};
  std::uint32_t seed = 100;
  for (const ShapeCase& sc : kShapes)
    for (fuzz::Dist d : dists) {
      SCOPED_TRACE(std::to_string(sc.M) + "x" + std::to_string(sc.K) + " seed " + std::to_string(seed));
      const FloatMatrix x = fuzz::fill_data({sc.M, sc.K}, d, seed++);
      const Quantization q = quantize(x, opts(te()));
      const float g = amax_ignore_ref(x.data(), x.size());
      const RefOut row = te_rowwise_ref(x, std::vector<float>(sc.M, g), false);
      expect_bytes_eq(q.rowwise->data, row.data, "rowwise data");
      expect_bytes_eq(q.rowwise->scale, row.scale, "rowwise scale");
      const FloatMatrix xt_ = xt::transpose(x);
      const RefOut col = te_rowwise_ref(xt_, std::vector<float>(sc.K, g), false);
      expect_bytes_eq(q.columnwise->data, col.data, "columnwise data");
      expect_bytes_eq(q.columnwise->scale, col.scale, "columnwise scale");
    }
}

// 2D (§3.11): tile amax, replicated rowwise scales, and the model's columnwise on x^T.
TEST(QuantizeReference, TeMatchesIndependentModel2D) {
  std::uint32_t seed = 200;
  for (const ShapeCase& sc : kShapes)
    for (fuzz::Dist d : {fuzz::Dist::kRandn, fuzz::Dist::kBlockLogUniform, fuzz::Dist::kSpecials, fuzz::Dist::kBf16}) {
      SCOPED_TRACE(std::to_string(sc.M) + "x" + std::to_string(sc.K));
      const FloatMatrix x = fuzz::fill_data({sc.M, sc.K}, d, seed++);
      const Quantization q = quantize(x, opts(te(), BlockShape::k2D));
      const float g = amax_ignore_ref(x.data(), x.size());
      const RefOut row = te_rowwise_ref(x, std::vector<float>(sc.M, g), true);
      expect_bytes_eq(q.rowwise->data, row.data, "rowwise data");
      expect_bytes_eq(q.rowwise->scale, row.scale, "rowwise scale");
      const FloatMatrix xt_ = xt::transpose(x);
      const RefOut col = te_rowwise_ref(xt_, std::vector<float>(sc.K, g), true);
      expect_bytes_eq(q.columnwise->data, col.data, "columnwise data");
      expect_bytes_eq(q.columnwise->scale, col.scale, "columnwise scale");
    }
}

// Larger BF16 tensors against the model, with g from the data and with a non-power-of-two
// override (§5.7: a power-of-two S hides scale-order differences).
TEST(QuantizeReference, TeMatchesIndependentModelBf16) {
  for (std::uint32_t seed = 300; seed < 306; ++seed) {
    const FloatMatrix x = fuzz::fill_data({256, 256}, fuzz::Dist::kBf16, seed);
    for (bool override_g : {false, true}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + (override_g ? " override" : ""));
      const float g = override_g ? 5.8125f : amax_ignore_ref(x.data(), x.size());
      QuantizeOptions o = opts(te(), BlockShape::k1D, Direction::kRowwise);
      if (override_g) o.amax = g;
      const Quantization q = quantize(x, o);
      const RefOut row = te_rowwise_ref(x, std::vector<float>(256, g), false);
      expect_bytes_eq(q.rowwise->data, row.data, "rowwise data");
      expect_bytes_eq(q.rowwise->scale, row.scale, "rowwise scale");
    }
  }
}

// §6.8 (Example B) through quantize(): g = 4.0625, block amax 0.380859375. te rounds the
// pre-cast scale to 0x63 (44); te-2.13 (RN(RN(A/6)*S)) to 0x62 (40), and the codes differ.
TEST(QuantizeReference, SpecExampleBThroughQuantize) {
  FloatMatrix x = xt::zeros<float>({16, 16});
  x(0, 0) = fbits(0x3EA40000u);
  x(0, 1) = fbits(0xBE280000u);
  x(0, 2) = fbits(0x3EC30000u);
  x(0, 3) = fbits(0x3E800000u);
  struct Want {
    const char* profile;
    std::uint8_t scale, byte0, byte1;
  };
  for (const Want& w : {Want{"te", 0x63, 0xC6, 0x67}, Want{"te-2.13", 0x62, 0xD7, 0x67}}) {
    SCOPED_TRACE(w.profile);
    QuantizeOptions o = opts(profile(w.profile), BlockShape::k1D, Direction::kRowwise);
    o.amax = fbits(0x40820000u);
    const Quantization q = quantize(x, o);
    EXPECT_EQ(int(q.rowwise->scale(0, 0)), w.scale);
    EXPECT_EQ(int(q.rowwise->data(0, 0)), w.byte0);  // codes of x[0], x[1]
    EXPECT_EQ(int(q.rowwise->data(0, 1)), w.byte1);  // codes of x[2], x[3]
    for (int b = 2; b < 8; ++b) EXPECT_EQ(int(q.rowwise->data(0, b)), 0) << b;
  }
}

// §3.12: row r of a row-scaled quantization == quantize_rows of that row alone with its own
// amax (and == the independent model with g = row amax). Row magnitudes differ by 2^r so a
// global amax would give different bytes.
TEST(QuantizeReference, RowScaledUsesPerRowAmax) {
  const std::size_t M = 48, K = 80;
  FloatMatrix x = randn(M, K, 11);
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t c = 0; c < K; ++c) x(r, c) = std::ldexp(x(r, c), int(r % 24) - 12);
  for (const NamedProfile& np : all_profiles()) {
    SCOPED_TRACE(std::string(np.name));
    const Quantization q = quantize(x, opts(np.knobs, BlockShape::k1D, Direction::kBoth, true));
    for (std::size_t r = 0; r < M; ++r) {
      FloatMatrix row = xt::zeros<float>({std::size_t(1), K});
      FloatMatrix bam = xt::zeros<float>({std::size_t(1), K / 16});
      float g = 0.0f;
      for (std::size_t c = 0; c < K; ++c) row(0, c) = x(r, c), g = std::max(g, std::fabs(x(r, c)));
      for (std::size_t j = 0; j < K / 16; ++j) bam(0, j) = amax_ignore_ref(&x(r, 16 * j), 16);
      const QuantizedTensor one = quantize_rows(row, bam, FloatVector({g}), np.knobs);
      EXPECT_EQ(ubits(q.rowwise->amax(r)), ubits(g)) << "row " << r;
      for (std::size_t b = 0; b < K / 2; ++b) ASSERT_EQ(int(q.rowwise->data(r, b)), int(one.data(0, b))) << r;
      for (std::size_t j = 0; j < K / 16; ++j) ASSERT_EQ(int(q.rowwise->scale(r, j)), int(one.scale(0, j))) << r;
    }
  }
  // Independent te model with per-row g, both directions.
  const Quantization q = quantize(x, opts(te(), BlockShape::k1D, Direction::kBoth, true));
  std::vector<float> gr(M), gc(K);
  for (std::size_t r = 0; r < M; ++r) gr[r] = amax_ignore_ref(&x(r, 0), K);
  for (std::size_t c = 0; c < K; ++c) gc[c] = amax_ignore_ref(&x(0, c), M, K);
  const RefOut row = te_rowwise_ref(x, gr, false);
  expect_bytes_eq(q.rowwise->data, row.data, "row-scaled rowwise data");
  expect_bytes_eq(q.rowwise->scale, row.scale, "row-scaled rowwise scale");
  const FloatMatrix xt_ = xt::transpose(x);
  const RefOut col = te_rowwise_ref(xt_, gc, false);
  expect_bytes_eq(q.columnwise->data, col.data, "row-scaled columnwise data");
  expect_bytes_eq(q.columnwise->scale, col.scale, "row-scaled columnwise scale");
  // And it differs from the non-row-scaled result (the test data is built so).
  const Quantization flat = quantize(x, opts(te()));
  EXPECT_NE(flat.rowwise->scale, q.rowwise->scale);
}

// An amax override replaces g in both directions, is stored, and changes the scales.
TEST(QuantizeReference, AmaxOverrideChangesScales) {
  const FloatMatrix x = randn(48, 80, 21);
  const float g = amax_ignore_ref(x.data(), x.size());
  for (float over : {g * 3.0f, g * 0.25f, 1000.0f}) {
    SCOPED_TRACE(over);
    QuantizeOptions o = opts(te());
    o.amax = over;
    const Quantization q = quantize(x, o);
    const Quantization plain = quantize(x, opts(te()));
    EXPECT_EQ(ubits(q.rowwise->amax(0)), ubits(over));
    EXPECT_EQ(ubits(q.columnwise->amax(0)), ubits(over));
    EXPECT_NE(q.rowwise->scale, plain.rowwise->scale);
    EXPECT_NE(q.columnwise->scale, plain.columnwise->scale);
    const RefOut row = te_rowwise_ref(x, std::vector<float>(48, over), false);
    expect_bytes_eq(q.rowwise->data, row.data, "override rowwise data");
    expect_bytes_eq(q.rowwise->scale, row.scale, "override rowwise scale");
    const FloatMatrix xt_ = xt::transpose(x);
    const RefOut col = te_rowwise_ref(xt_, std::vector<float>(80, over), false);
    expect_bytes_eq(q.columnwise->data, col.data, "override columnwise data");
    expect_bytes_eq(q.columnwise->scale, col.scale, "override columnwise scale");
  }
}

}  // namespace
}  // namespace nvfp4
