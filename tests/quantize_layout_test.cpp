// Unit tests of the data and scale layouts: 2D scale replication, swizzle, element positions and
// transposes (NUMERICS.md §2.3, §2.4.2, §3.11, §3.14, §3.21, §6.14-§6.15). Expected values come
// from the specification or from hand computation, never from the code under test.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/generators.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "reference/scale_layout.h"
#include "reference/transpose.h"
#include "tests/support/quantize_checks.h"
#include "tests/support/quantize_options.h"

namespace nvfp4 {
namespace {

using test_support::expect_bytes_eq;
using test_support::kShapes;
using test_support::opts;
using test_support::randn;
using test_support::shape_of;
using test_support::ShapeCase;
using test_support::te;

// ---- scale layout (§2.4.2, §3.21, §6.14) ---------------------------------------------------

// §3.11: the 2D rowwise scale of a tile is replicated on each of its 16 rows.
TEST(QuantizeLayout, TwoDRowwiseScalesReplicatedOn16Rows) {
  const FloatMatrix x = fuzz::fill_data({112, 96}, fuzz::Dist::kBlockLogUniform, 5);
  for (const NamedProfile& np : all_profiles()) {
    SCOPED_TRACE(std::string(np.name));
    const Quantization q = quantize(x, opts(np.knobs, BlockShape::k2D, Direction::kRowwise));
    const ByteMatrix& s = q.rowwise->scale;
    std::size_t distinct_tiles = 0;
    for (std::size_t ti = 0; ti < 7; ++ti)
      for (std::size_t j = 0; j < 6; ++j) {
        for (std::size_t r = 16 * ti + 1; r < 16 * ti + 16; ++r)
          EXPECT_EQ(int(s(r, j)), int(s(16 * ti, j))) << "row " << r << " tile col " << j;
        distinct_tiles += ti > 0 && s(16 * ti, j) != s(0, j);
      }
    EXPECT_GT(distinct_tiles, 0u) << "tile scales should vary with this data";
  }
}

TEST(QuantizeLayout, SwizzledResultEqualsSwizzleOfCompact) {
  for (const NamedProfile& np : all_profiles())
    for (const ShapeCase& sc : kShapes)
      for (BlockShape b : {BlockShape::k1D, BlockShape::k2D}) {
        SCOPED_TRACE(std::string(np.name) + " " + std::to_string(sc.M) + "x" + std::to_string(sc.K));
        const FloatMatrix x = fuzz::fill_data({sc.M, sc.K}, fuzz::Dist::kBlockLogUniform, 9);
        QuantizeOptions o = opts(np.knobs, b);
        const Quantization compact = quantize(x, o);
        o.scale_layout = ScaleLayout::kSwizzled;
        const Quantization sw = quantize(x, o);
        expect_bytes_eq(sw.rowwise->scale, swizzle_scales(compact.rowwise->scale), "rowwise");
        expect_bytes_eq(sw.columnwise->scale, swizzle_scales(compact.columnwise->scale), "columnwise");
        expect_bytes_eq(sw.rowwise->data, compact.rowwise->data, "rowwise data");
        expect_bytes_eq(sw.columnwise->data, compact.columnwise->data, "columnwise data");
      }
}

// §6.14 offsets for R' = 256, C' = 8: a single marked entry lands at the spec's flat offset.
TEST(QuantizeLayout, SwizzleOffsetsOfSpecTable) {
  const std::pair<std::array<std::size_t, 2>, std::size_t> table[] = {
      {{0, 0}, 0},  {{0, 1}, 1},   {{0, 3}, 3},     {{0, 4}, 512},    {{1, 0}, 16},     {{31, 0}, 496},   {{32, 0}, 4},
      {{64, 0}, 8}, {{96, 0}, 12}, {{127, 3}, 511}, {{128, 0}, 1024}, {{130, 5}, 1569}, {{255, 7}, 2047}, {{33, 0}, 20},
  };
  for (const auto& [rc, off] : table) {
    ByteMatrix s = xt::zeros<std::uint8_t>({256, 8});
    s(rc[0], rc[1]) = 0xAB;
    const ByteMatrix w = swizzle_scales(s);
    ASSERT_EQ(w.size(), 2048u);
    for (std::size_t i = 0; i < 2048; ++i)
      ASSERT_EQ(int(w.data()[i]), i == off ? 0xAB : 0) << "(" << rc[0] << "," << rc[1] << ") flat " << i;
    expect_bytes_eq(unswizzle_scales(w), s, "unswizzle");
  }
}

// Swizzled padding is 0x00 as well (§2.4.2).
TEST(QuantizeLayout, SwizzledPaddingIsZero) {
  const FloatMatrix x = randn(48, 80, 4);
  QuantizeOptions o = opts(te());
  o.scale_layout = ScaleLayout::kSwizzled;
  const Quantization q = quantize(x, o);
  const ByteMatrix row = unswizzle_scales(q.rowwise->scale), col = unswizzle_scales(q.columnwise->scale);
  for (std::size_t r = 0; r < row.shape(0); ++r)
    for (std::size_t j = 0; j < row.shape(1); ++j)
      if (r >= 48 || j >= 5) {
        EXPECT_EQ(int(row(r, j)), 0) << r << "," << j;
      }
  for (std::size_t r = 0; r < col.shape(0); ++r)
    for (std::size_t j = 0; j < col.shape(1); ++j)
      if (r >= 80 || j >= 3) {
        EXPECT_EQ(int(col(r, j)), 0) << r << "," << j;
      }
}

// §2.3 and §6.15: element (r=3, c=5) of a 112x96 tensor is the high nibble of rowwise byte 146
// (row 3, column 2 of the [112, 48] view) and of columnwise byte 281 (row 5, column 1 of [96, 56]).
TEST(QuantizeLayout, ElementPositionsOfSpecExample) {
  FloatMatrix x = xt::zeros<float>({112, 96});
  x(3, 5) = 6.0f;  // g = 6, block amax 6: sf = 0x7E, enc = 1 (§6.11), code 0x7
  x(3, 4) = 1.0f;  // the same byte's low nibble: code 0x2
  const Quantization q = quantize(x, opts(te()));
  EXPECT_EQ(int(q.rowwise->data.data()[146]), 0x72);
  EXPECT_EQ(int(q.rowwise->scale(3, 0)), 0x7E);
  // Column 5 holds 6 at row 3 (high nibble of columnwise byte 281 = (5*112+3)/2); row 2 is 0.
  EXPECT_EQ(int(q.columnwise->data.data()[281]), 0x70);
  EXPECT_EQ(int(q.columnwise->scale(5, 0)), 0x7E);
  // Column 4's block has amax 1 with g = 6: §6.11 gives scale 0x69 and enc = 6.2222, so the 1.0
  // at row 3 becomes code 0x7 (high nibble of byte (4*112+3)/2 = 225).
  EXPECT_EQ(int(q.columnwise->scale(4, 0)), 0x69);
  EXPECT_EQ(int(q.columnwise->data.data()[225]), 0x70);
}

// §3.14 on a hand-made example: nibble (r, c) -> (c, r).
TEST(QuantizeLayout, TransposePackedByHand) {
  // M = 2, K = 4: rows [1 2 3 4] and [5 6 7 8] as codes.
  ByteMatrix in = xt::zeros<std::uint8_t>({2, 2});
  in(0, 0) = 0x21, in(0, 1) = 0x43, in(1, 0) = 0x65, in(1, 1) = 0x87;
  const ByteMatrix out = transpose_packed(in);
  ASSERT_EQ(shape_of(out), (std::vector<std::size_t>{4, 1}));
  EXPECT_EQ(int(out(0, 0)), 0x51);
  EXPECT_EQ(int(out(1, 0)), 0x62);
  EXPECT_EQ(int(out(2, 0)), 0x73);
  EXPECT_EQ(int(out(3, 0)), 0x84);
}

// §3.14 2D scale transpose on a hand-made rowwise scale matrix (M = 32, K = 48).
TEST(QuantizeLayout, TransposeScales2DByHand) {
  ByteMatrix in = xt::zeros<std::uint8_t>({128, 4});
  const std::uint8_t tiles[2][3] = {{0x10, 0x20, 0x30}, {0x40, 0x50, 0x60}};
  for (std::size_t r = 0; r < 32; ++r)
    for (std::size_t j = 0; j < 3; ++j) in(r, j) = tiles[r / 16][j];
  const ByteMatrix out = transpose_scales_2d(in, 32, 48);
  ASSERT_EQ(shape_of(out), (std::vector<std::size_t>{128, 4}));
  for (std::size_t k = 0; k < 128; ++k)
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(int(out(k, i)), (k < 48 && i < 2) ? tiles[i][k / 16] : 0) << k << "," << i;
}

}  // namespace
}  // namespace nvfp4
