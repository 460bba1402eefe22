// Unit tests of quantize's output shapes and padding and of the errors of quantize / dequantize /
// transpose / swizzle / amax (NUMERICS.md §2.3-§2.5, §3.9, §3.22). The other quantize tests are
// quantize_amax_test.cpp, quantize_reference_test.cpp, quantize_layout_test.cpp and
// quantize_dequant_test.cpp. Expected values come from the specification, from hand computation
// or from the small independent `te` model (tests/support/te_model.h), never from the code under
// test.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/amax.h"
#include "reference/dequantize.h"
#include "reference/error.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "reference/scale_layout.h"
#include "reference/transpose.h"
#include "tests/support/quantize_checks.h"
#include "tests/support/quantize_options.h"
#include "tests/support/te_model.h"

namespace nvfp4 {
namespace {

using test_support::expect_error;
using test_support::expect_padding;
using test_support::kShapes;
using test_support::opts;
using test_support::randn;
using test_support::shape_of;
using test_support::ShapeCase;
using test_support::te;
using test_support::ubits;

// ---- shapes and padding (§2.3, §2.4.1, §2.5, §6.15) -----------------------------------------

TEST(QuantizeShapes, OutputShapesAndZeroPadding) {
  for (const NamedProfile& np : all_profiles())
    for (BlockShape b : {BlockShape::k1D, BlockShape::k2D})
      for (bool rs : {false, true}) {
        if (rs && b == BlockShape::k2D) continue;
        for (const ShapeCase& sc : kShapes) {
          SCOPED_TRACE(std::string(np.name) + " " + std::to_string(sc.M) + "x" + std::to_string(sc.K) +
                       (b == BlockShape::k2D ? " 2D" : " 1D") + (rs ? " row-scaled" : ""));
          // Values in [1, 2) * 2^k: no block is zero or underflows, so every logical scale is nonzero.
          FloatMatrix x = randn(sc.M, sc.K, 7);
          for (float& v : x) v = std::copysign(1.0f + std::fmod(std::fabs(v), 1.0f), v);
          const Quantization q = quantize(x, opts(np.knobs, b, Direction::kBoth, rs));
          ASSERT_TRUE(q.rowwise && q.columnwise);
          EXPECT_EQ(shape_of(q.rowwise->data), (std::vector<std::size_t>{sc.M, sc.K / 2}));
          EXPECT_EQ(shape_of(q.rowwise->scale), (std::vector<std::size_t>{sc.row_sr, sc.row_sc}));
          EXPECT_EQ(shape_of(q.columnwise->data), (std::vector<std::size_t>{sc.K, sc.M / 2}));
          EXPECT_EQ(shape_of(q.columnwise->scale), (std::vector<std::size_t>{sc.col_sr, sc.col_sc}));
          EXPECT_EQ(shape_of(q.rowwise->amax), (std::vector<std::size_t>{rs ? sc.M : 1}));
          EXPECT_EQ(shape_of(q.columnwise->amax), (std::vector<std::size_t>{rs ? sc.K : 1}));
          expect_padding(q.rowwise->scale, sc.M, sc.K / 16, "rowwise");
          expect_padding(q.columnwise->scale, sc.K, sc.M / 16, "columnwise");
        }
      }
}

// Only the requested direction is produced.
TEST(QuantizeShapes, DirectionSelectsOutputs) {
  const FloatMatrix x = randn(32, 48, 1);
  const Quantization r = quantize(x, opts(te(), BlockShape::k1D, Direction::kRowwise));
  EXPECT_TRUE(r.rowwise.has_value());
  EXPECT_FALSE(r.columnwise.has_value());
  const Quantization c = quantize(x, opts(te(), BlockShape::k1D, Direction::kColumnwise));
  EXPECT_FALSE(c.rowwise.has_value());
  EXPECT_TRUE(c.columnwise.has_value());
}

// §3.9: M = 0 or K = 0 is valid and yields empty outputs (shapes from the §2.3/§2.4 formulas).
TEST(QuantizeShapes, EmptyInputsAreValid) {
  struct Case {
    std::size_t M, K;
    std::vector<std::size_t> rd, rs, cd, cs;
  };
  const Case cases[] = {
      {0, 32, {0, 16}, {0, 4}, {32, 0}, {128, 0}},
      {32, 0, {32, 0}, {128, 0}, {0, 16}, {0, 4}},
      {0, 0, {0, 0}, {0, 0}, {0, 0}, {0, 0}},
  };
  for (const Case& c : cases)
    for (bool rs : {false, true}) {
      SCOPED_TRACE(std::to_string(c.M) + "x" + std::to_string(c.K) + (rs ? " row-scaled" : ""));
      const FloatMatrix x = xt::zeros<float>({c.M, c.K});
      Quantization q;
      ASSERT_NO_THROW(q = quantize(x, opts(te(), BlockShape::k1D, Direction::kBoth, rs)));
      EXPECT_EQ(shape_of(q.rowwise->data), c.rd);
      EXPECT_EQ(shape_of(q.rowwise->scale), c.rs);
      EXPECT_EQ(shape_of(q.columnwise->data), c.cd);
      EXPECT_EQ(shape_of(q.columnwise->scale), c.cs);
      for (std::uint8_t v : q.rowwise->scale) EXPECT_EQ(v, 0);
      for (std::uint8_t v : q.columnwise->scale) EXPECT_EQ(v, 0);
      if (rs) {
        EXPECT_EQ(q.rowwise->amax.size(), c.M);
        EXPECT_EQ(q.columnwise->amax.size(), c.K);
      } else {
        // §3.1: amax of an empty tensor is +0.
        ASSERT_EQ(q.rowwise->amax.size(), 1u);
        EXPECT_EQ(ubits(q.rowwise->amax(0)), 0u);
      }
      ASSERT_NO_THROW(quantize(x, opts(te(), BlockShape::k2D, Direction::kBoth)));
    }
  const FloatMatrix d = dequantize(ByteMatrix(xt::zeros<std::uint8_t>({0, 16})), ByteMatrix(xt::zeros<std::uint8_t>({0, 4})),
                                   FloatVector({1.0f}), te());
  EXPECT_EQ(d.size(), 0u);
}

// ---- errors (§3.22) ----------------------------------------------------------------------

TEST(QuantizeErrors, KNotMultipleOf16) {
  const FloatMatrix x = xt::zeros<float>({16, 100});
  expect_error([&] { quantize(x, opts(te(), BlockShape::k1D, Direction::kRowwise)); }, ErrorCode::E_DIM16_K,
               {"quantize_1d", "E_DIM16_K", "K=100"});
  for (Direction d : {Direction::kColumnwise, Direction::kBoth})
    expect_error([&] { quantize(x, opts(te(), BlockShape::k1D, d)); }, ErrorCode::E_DIM16_K, {"E_DIM16_K", "K=100"});
  expect_error([&] { quantize(x, opts(te(), BlockShape::k2D)); }, ErrorCode::E_DIM16_K, {"E_DIM16_K", "K=100"});
  expect_error([&] { quantize(x, opts(te(), BlockShape::k1D, Direction::kRowwise, true)); }, ErrorCode::E_DIM16_K,
               {"E_DIM16_K", "K=100"});
}

// The spec's message example, verbatim (§3.22).
TEST(QuantizeErrors, MessageOfSpecExample) {
  const FloatMatrix x = xt::zeros<float>({16, 100});
  try {
    quantize(x, opts(te(), BlockShape::k1D, Direction::kRowwise));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "quantize_1d: E_DIM16_K: K=100 is not a multiple of 16");
  }
}

TEST(QuantizeErrors, MNotMultipleOf16) {
  const FloatMatrix x = xt::zeros<float>({20, 32});
  for (Direction d : {Direction::kRowwise, Direction::kColumnwise, Direction::kBoth})
    expect_error([&] { quantize(x, opts(te(), BlockShape::k1D, d)); }, ErrorCode::E_DIM16_M, {"quantize", "E_DIM16_M", "M=20"});
  expect_error([&] { quantize(x, opts(te(), BlockShape::k2D)); }, ErrorCode::E_DIM16_M, {"E_DIM16_M", "M=20"});
}

TEST(QuantizeErrors, TwoDWithRowScalingIsUnsupported) {
  const FloatMatrix x = randn(32, 32, 3);
  for (Direction d : {Direction::kRowwise, Direction::kColumnwise, Direction::kBoth})
    expect_error([&] { quantize(x, opts(te(), BlockShape::k2D, d, true)); }, ErrorCode::E_UNSUPPORTED,
                 {"quantize", "E_UNSUPPORTED"});
}

TEST(QuantizeErrors, DequantizeWrongScaleShape) {
  const ByteMatrix data = xt::zeros<std::uint8_t>({32, 24});  // M = 32, K = 48: scale [128, 4]
  const FloatVector g({1.0f});
  for (auto shape : {std::array<std::size_t, 2>{32, 3}, {128, 3}, {32, 4}, {128, 8}, {256, 4}}) {
    const ByteMatrix s = xt::zeros<std::uint8_t>({shape[0], shape[1]});
    expect_error([&] { dequantize(data, s, g, te()); }, ErrorCode::E_SCALE_SHAPE,
                 {"dequantize", "E_SCALE_SHAPE", std::to_string(shape[0]) + ", " + std::to_string(shape[1])});
  }
  // The correct shape is accepted.
  EXPECT_NO_THROW(dequantize(data, ByteMatrix(xt::zeros<std::uint8_t>({128, 4})), g, te()));
}

TEST(QuantizeErrors, DequantizeWrongAmaxLength) {
  const ByteMatrix data = xt::zeros<std::uint8_t>({32, 8});
  const ByteMatrix s = xt::zeros<std::uint8_t>({128, 4});
  for (std::size_t n : {0u, 2u, 16u, 31u, 33u}) {
    const FloatVector g = xt::ones<float>({n});
    expect_error([&] { dequantize(data, s, g, te()); }, ErrorCode::E_AMAX_SHAPE,
                 {"dequantize", "E_AMAX_SHAPE", std::to_string(n)});
  }
  EXPECT_NO_THROW(dequantize(data, s, FloatVector(xt::ones<float>({32})), te()));  // row-scaled: [M]
}

TEST(QuantizeErrors, DequantizeKNotMultipleOf16) {
  const ByteMatrix data = xt::zeros<std::uint8_t>({16, 4});  // K = 8
  expect_error(
      [&] {
        dequantize(data, ByteMatrix(xt::zeros<std::uint8_t>({128, 4})), FloatVector({1.0f}), te());
      },
      ErrorCode::E_DIM16_K, {"dequantize", "E_DIM16_K", "K=8"});
}

TEST(QuantizeErrors, TransposePackedOddM) {
  const ByteMatrix d = xt::zeros<std::uint8_t>({3, 8});
  expect_error([&] { transpose_packed(d); }, ErrorCode::E_EVEN, {"transpose_packed", "E_EVEN", "M=3"});
}

TEST(QuantizeErrors, TransposeScales2DWrongShape) {
  const ByteMatrix s = xt::zeros<std::uint8_t>({128, 4});
  expect_error([&] { transpose_scales_2d(s, 32, 128); }, ErrorCode::E_SCALE_SHAPE,
               {"transpose_scales_2d", "E_SCALE_SHAPE"});  // K=128 needs [128, 8]
}

TEST(QuantizeErrors, SwizzleOfUnpaddedScales) {
  for (auto shape : {std::array<std::size_t, 2>{100, 4}, {128, 3}, {16, 4}, {128, 6}, {129, 4}}) {
    const ByteMatrix s = xt::zeros<std::uint8_t>({shape[0], shape[1]});
    const std::string dims = std::to_string(shape[0]) + ", " + std::to_string(shape[1]);
    expect_error([&] { swizzle_scales(s); }, ErrorCode::E_SCALE_SHAPE, {"swizzle", "E_SCALE_SHAPE", dims});
    expect_error([&] { unswizzle_scales(s); }, ErrorCode::E_SCALE_SHAPE, {"unswizzle", "E_SCALE_SHAPE", dims});
  }
}

TEST(QuantizeErrors, BlockAmaxDimensions) {
  const FloatMatrix x = xt::zeros<float>({32, 100});
  expect_error([&] { amax_blocks_1x16(x, AmaxRule::IGNORE); }, ErrorCode::E_DIM16_K, {"E_DIM16_K", "K=100"});
  expect_error([&] { amax_tiles_16x16(x, AmaxRule::IGNORE); }, ErrorCode::E_DIM16_K, {"E_DIM16_K", "K=100"});
  const FloatMatrix y = xt::zeros<float>({20, 32});
  expect_error([&] { amax_blocks_16x1(y, AmaxRule::IGNORE); }, ErrorCode::E_DIM16_M, {"E_DIM16_M", "M=20"});
  expect_error([&] { amax_tiles_16x16(y, AmaxRule::IGNORE); }, ErrorCode::E_DIM16_M, {"E_DIM16_M", "M=20"});
}

// §3.3: "Errors: E_DIM16_K if K mod 16 != 0 (same contract as quantization)".
TEST(QuantizeErrors, RowColAmaxKNotMultipleOf16) {
  const FloatMatrix x = xt::ones<float>({16, 100});
  expect_error([&] { amax_rows(x, AmaxRule::IGNORE); }, ErrorCode::E_DIM16_K, {"E_DIM16_K", "K=100"});
  expect_error([&] { amax_cols(x, AmaxRule::IGNORE); }, ErrorCode::E_DIM16_K, {"E_DIM16_K", "K=100"});
}

}  // namespace
}  // namespace nvfp4
