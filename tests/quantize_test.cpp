// Unit tests of quantize / dequantize / transpose / swizzle / amax (NUMERICS.md §2.3-§2.4,
// §3.1-§3.14, §3.21-§3.22). Expected values come from the specification, from hand computation
// or from the small independent `te` model below, never from the code under test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/quantize_options.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "fuzz/generators.h"
#include "reference/amax.h"
#include "reference/dequantize.h"
#include "reference/error.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "reference/scale_layout.h"
#include "reference/transpose.h"

namespace nvfp4 {
namespace {

using ::testing::HasSubstr;

// ---- independent te model (own code from the spec text; shares nothing with formulas.h) -------

float fbits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t ubits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// §2.1.1 code table.
constexpr std::array<float, 16> kF4 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                       -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// §2.2.1 decoding.
float f8_ref(std::uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 0xF, m = b & 7;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  const double mag = e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
  return float(s ? -mag : mag);
}

// §2.2.2 e4m3sat by brute force over the positive grid (ties -> even byte).
std::uint8_t e4m3sat_ref(float v) {
  if (std::isnan(v)) return 0x7F;
  const std::uint8_t s = std::signbit(v) ? 0x80 : 0x00;
  const double a = std::fabs(double(v));
  if (a <= std::ldexp(1.0, -10)) return s;
  if (a > 464.0) return s | 0x7E;
  int best = 0;
  double best_d = std::fabs(a - f8_ref(0));
  for (int b = 1; b <= 0x7E; ++b) {
    const double d = std::fabs(a - f8_ref(std::uint8_t(b)));
    if (d < best_d || (d == best_d && b % 2 == 0)) best = b, best_d = d;
  }
  return std::uint8_t(s | best);
}

// §2.1.2 e2m1 (HW).
std::uint8_t e2m1_ref(float v) {
  if (std::isnan(v)) return 0x7;
  const std::uint8_t s = std::signbit(v) ? 8 : 0;
  const float a = std::fabs(v);
  std::uint8_t m;
  if (a <= 0.25f) m = 0;
  else if (a < 0.75f) m = 1;
  else if (a <= 1.25f) m = 2;
  else if (a < 1.75f) m = 3;
  else if (a <= 2.5f) m = 4;
  else if (a < 3.5f) m = 5;
  else if (a <= 5.0f) m = 6;
  else m = 7;
  return s | m;
}

const float kFltMax = std::numeric_limits<float>::max();
const float kR6 = fbits(0x3E2AAAABu);
const float kR2688 = fbits(0x39C30C31u);

// §3.1 IGNORE: max |x| over non-NaN elements, +0 if none.
float amax_ignore_ref(const float* p, std::size_t n, std::size_t stride = 1) {
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = std::fabs(p[i * stride]);
    if (!std::isnan(a) && a > m) m = a;
  }
  return m;
}

struct TeScale {
  float S, Sd;
};
// §3.5 (std::fmin is C99 fminf: a NaN operand is ignored).
TeScale te_global_ref(float g) {
  float S = std::fmin(2688.0f / g, kFltMax);
  if (g == 0.0f || S == 0.0f) S = 1.0f;
  return {S, 1.0f / S};
}

// §3.6-§3.8 for one block of 16 values with block amax A: scale byte and 16 codes.
std::uint8_t te_block_ref(const float* x, std::size_t stride, float A, TeScale gs, std::uint8_t* codes) {
  const float m = gs.S * kR6;
  const float sd = std::fmin(A * m, kFltMax);
  const std::uint8_t sf = e4m3sat_ref(sd);
  const float p = f8_ref(sf) * gs.Sd;
  const float enc = std::fmin(1.0f / p, kFltMax);
  for (int i = 0; i < 16; ++i) codes[i] = e2m1_ref(x[i * stride] * enc);
  return sf;
}

// Rowwise te quantization of x [M, K] with per-row global amax g_row (§3.9, §3.12); 2D tiles
// when two_d (§3.11). Returns (data, compact scales) computed by the model.
struct RefOut {
  ByteMatrix data, scale;
};
RefOut te_rowwise_ref(const FloatMatrix& x, const std::vector<float>& g_row, bool two_d) {
  const std::size_t M = x.shape(0), K = x.shape(1);
  RefOut o;
  o.data = xt::zeros<std::uint8_t>({M, K / 2});
  o.scale = xt::zeros<std::uint8_t>({(M + 127) / 128 * 128, (K / 16 + 3) / 4 * 4});
  for (std::size_t r = 0; r < M; ++r) {
    const TeScale gs = te_global_ref(g_row[r]);
    for (std::size_t j = 0; j < K / 16; ++j) {
      float A = 0.0f;
      if (two_d) {
        const std::size_t r0 = r / 16 * 16;
        for (std::size_t rr = r0; rr < r0 + 16; ++rr) A = std::max(A, amax_ignore_ref(&x(rr, 16 * j), 16));
      } else {
        A = amax_ignore_ref(&x(r, 16 * j), 16);
      }
      std::uint8_t q[16];
      o.scale(r, j) = te_block_ref(&x(r, 16 * j), 1, A, gs, q);
      for (int i = 0; i < 16; i += 2) o.data(r, 8 * j + i / 2) = std::uint8_t(q[i] | (q[i + 1] << 4));
    }
  }
  return o;
}

// ---- helpers ----------------------------------------------------------------------------

const Profile& te() { return find_profile("te")->knobs; }
const Profile& profile(const char* name) {
  const NamedProfile* p = find_profile(name);
  EXPECT_NE(p, nullptr) << name;
  return p->knobs;
}

using test_support::opts;

FloatMatrix randn(std::size_t M, std::size_t K, std::uint32_t seed) {
  return fuzz::fill_data({M, K}, fuzz::Dist::kRandn, seed);
}

std::vector<std::size_t> shape_of(const ByteMatrix& m) { return {m.shape(0), m.shape(1)}; }
std::vector<std::size_t> shape_of(const FloatVector& v) { return {v.shape(0)}; }

// Every entry with r >= rows or j >= cols must be 0x00 (§2.4.1); every entry inside must be
// nonzero for the data used here (so that a misplaced block lands in padding and is caught).
void expect_padding(const ByteMatrix& s, std::size_t rows, std::size_t cols, const std::string& what) {
  std::size_t bad = 0, zero_inside = 0;
  for (std::size_t r = 0; r < s.shape(0); ++r)
    for (std::size_t j = 0; j < s.shape(1); ++j) {
      if (r >= rows || j >= cols) bad += s(r, j) != 0;
      else zero_inside += s(r, j) == 0;
    }
  EXPECT_EQ(bad, 0u) << what << ": nonzero padding entries";
  EXPECT_EQ(zero_inside, 0u) << what << ": zero scale bytes inside the logical region";
}

void expect_bytes_eq(const ByteMatrix& a, const ByteMatrix& b, const std::string& what) {
  ASSERT_EQ(shape_of(a), shape_of(b)) << what;
  for (std::size_t r = 0; r < a.shape(0); ++r)
    for (std::size_t c = 0; c < a.shape(1); ++c)
      ASSERT_EQ(int(a(r, c)), int(b(r, c))) << what << " at (" << r << ", " << c << ")";
}

void expect_error(const std::function<void()>& f, ErrorCode code, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no nvfp4::Error thrown, expected " << error_code_name(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& s : fragments) EXPECT_THAT(std::string(e.what()), HasSubstr(s));
  }
}

// ---- shapes and padding (§2.3, §2.4.1, §2.5, §6.15) -----------------------------------------

struct ShapeCase {
  std::size_t M, K;
  // hand-computed: rowwise scale [roundup(M,128), roundup(K/16,4)], columnwise scale
  // [roundup(K,128), roundup(M/16,4)]
  std::size_t row_sr, row_sc, col_sr, col_sc;
};
constexpr ShapeCase kShapes[] = {
    {16, 16, 128, 4, 128, 4},     {16, 32, 128, 4, 128, 4},     {48, 80, 128, 8, 128, 4},
    {112, 96, 128, 8, 128, 8},    {128, 128, 128, 8, 128, 8},   {304, 304, 384, 20, 384, 20},
};

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
  const FloatMatrix d = dequantize(ByteMatrix(xt::zeros<std::uint8_t>({0, 16})),
                                   ByteMatrix(xt::zeros<std::uint8_t>({0, 4})), FloatVector({1.0f}), te());
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
    expect_error([&] { quantize(x, opts(te(), BlockShape::k1D, d)); }, ErrorCode::E_DIM16_M,
                 {"quantize", "E_DIM16_M", "M=20"});
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
  expect_error([&] { dequantize(data, ByteMatrix(xt::zeros<std::uint8_t>({128, 4})), FloatVector({1.0f}), te()); },
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
  x(10, 30) = fbits(0x7F800001u);  // signalling payload
  for (std::size_t c = 0; c < 32; ++c) x(7, c) = nan;         // row 7
  for (std::size_t r = 0; r < 32; ++r) x(r, 9) = nan;         // column 9
  for (std::size_t c = 16; c < 32; ++c) x(2, c) = nan;        // block (2, 1)
  for (std::size_t r = 16; r < 32; ++r)
    for (std::size_t c = 16; c < 32; ++c) x(r, c) = fbits(0xFFC00000u);  // tile (1, 1)
  return x;
}

// Expected amax of one set of values under a rule, computed directly from §3.1.
float expect_amax(const std::vector<float>& v, AmaxRule rule) {
  float m = 0.0f;
  bool any_nan = false;
  for (float f : v) {
    if (std::isnan(f)) any_nan = true;
    else m = std::max(m, std::fabs(f));
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

// ---- te against the independent model ----------------------------------------------------

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

// ---- scale layout (§2.4.2, §3.21, §6.14) ---------------------------------------------------

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
      {{0, 0}, 0},    {{0, 1}, 1},      {{0, 3}, 3},      {{0, 4}, 512},  {{1, 0}, 16},
      {{31, 0}, 496}, {{32, 0}, 4},     {{64, 0}, 8},     {{96, 0}, 12},  {{127, 3}, 511},
      {{128, 0}, 1024}, {{130, 5}, 1569}, {{255, 7}, 2047}, {{33, 0}, 20},
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
    for (std::size_t i = 0; i < 4; ++i)
      EXPECT_EQ(int(out(k, i)), (k < 48 && i < 2) ? tiles[i][k / 16] : 0) << k << "," << i;
}

// ---- dequantization (§3.13, §6.13) ---------------------------------------------------------

// One block of each of the 16 codes with sf = 0x64 (48), g = 6.65625 (§6.13 row 2), and one
// block with sf = 0x7E, g = 3 (fs = 0.5 exactly); the rest of the tensor has scale 0x00.
TEST(QuantizeDequant, TeKnownBlocksByHand) {
  ByteMatrix data = xt::zeros<std::uint8_t>({16, 16});  // [16, 32]: two blocks per row
  ByteMatrix scale = xt::zeros<std::uint8_t>({128, 4});
  for (std::size_t i = 0; i < 8; ++i) data(0, i) = std::uint8_t((2 * i) | ((2 * i + 1) << 4));  // codes 0..15
  for (std::size_t i = 0; i < 8; ++i) data(0, 8 + i) = data(0, i);
  for (std::size_t i = 0; i < 8; ++i) data(1, i) = data(0, i);  // row 1 block 0: scale 0x00
  scale(0, 0) = 0x64;
  scale(0, 1) = 0x7E;
  const float g = 6.65625f;  // 0x40D50000
  // fs = RN(RN(f8(sf) * amax) * r2688), out = RN(f4(q) * fs)
  const float fs = (48.0f * g) * kR2688;
  EXPECT_EQ(ubits(fs), 0x3DF36DB7u);  // §6.13 table
  const FloatMatrix out = dequantize(data, scale, FloatVector({g}), te());
  ASSERT_EQ((std::vector<std::size_t>{out.shape(0), out.shape(1)}), (std::vector<std::size_t>{16, 32}));
  for (int c = 0; c < 16; ++c) EXPECT_EQ(ubits(out(0, c)), ubits(kF4[c] * fs)) << "code " << c;
  EXPECT_EQ(ubits(out(0, 7)), 0x3F369249u);   // §6.13: code 0x7
  EXPECT_EQ(ubits(out(0, 3)), 0x3E369249u);   // §6.13: code 0x3
  EXPECT_EQ(ubits(out(0, 15)), 0xBF369249u);  // sign of code 0xF
  EXPECT_EQ(ubits(out(0, 8)), 0x80000000u);   // code 0x8 is -0
  // Second block: sf = 448 with the same amax: fs = RN(RN(448*g)*r2688)
  const float fs2 = (448.0f * g) * kR2688;
  for (int c = 0; c < 16; ++c) EXPECT_EQ(ubits(out(0, 16 + c)), ubits(kF4[c] * fs2)) << "code " << c;
  // Scale 0x00: every value is a signed zero.
  for (int c = 0; c < 16; ++c) EXPECT_EQ(ubits(out(1, c)), c < 8 ? 0u : 0x80000000u) << "code " << c;
  // §6.13 row 3: sf = 0x7E, g = 3 -> fs = 0.5: values f4/2 exactly.
  const FloatMatrix out3 = dequantize(data, scale, FloatVector({3.0f}), te());
  for (int c = 0; c < 16; ++c) EXPECT_EQ(ubits(out3(0, 16 + c)), ubits(kF4[c] * 0.5f)) << "code " << c;
}

// Row-scaled dequantization uses amax[r] for row r (§3.13).
TEST(QuantizeDequant, RowScaledUsesPerRowAmax) {
  ByteMatrix data = xt::zeros<std::uint8_t>({32, 8});
  ByteMatrix scale = xt::zeros<std::uint8_t>({128, 4});
  FloatVector g = xt::zeros<float>({32});
  for (std::size_t r = 0; r < 32; ++r) {
    for (std::size_t i = 0; i < 8; ++i) data(r, i) = std::uint8_t((2 * i) | ((2 * i + 1) << 4));
    scale(r, 0) = std::uint8_t(0x30 + r);
    g(r) = 1.0f + 0.37f * float(r);
  }
  const FloatMatrix out = dequantize(data, scale, g, te());
  for (std::size_t r = 0; r < 32; ++r) {
    const float fs = (f8_ref(std::uint8_t(0x30 + r)) * g(r)) * kR2688;
    for (int c = 0; c < 16; ++c) ASSERT_EQ(ubits(out(r, c)), ubits(kF4[c] * fs)) << r << "," << c;
  }
}

// §3.13: g = +inf gives +-inf for nonzero codes and NaN (0 * inf) for zero codes, canonical NaN.
TEST(QuantizeDequant, InfiniteAmaxGivesInfAndNan) {
  ByteMatrix data = xt::zeros<std::uint8_t>({16, 8});
  ByteMatrix scale = xt::zeros<std::uint8_t>({128, 4});
  for (std::size_t i = 0; i < 8; ++i) data(0, i) = std::uint8_t((2 * i) | ((2 * i + 1) << 4));
  scale(0, 0) = 0x38;
  const FloatMatrix out = dequantize(data, scale, FloatVector({std::numeric_limits<float>::infinity()}), te());
  for (int c = 0; c < 16; ++c) {
    if ((c & 7) == 0)
      EXPECT_EQ(ubits(out(0, c)), 0x7FFFFFFFu) << c;
    else
      EXPECT_EQ(ubits(out(0, c)), c < 8 ? 0x7F800000u : 0xFF800000u) << c;
  }
}

// quantize -> dequantize for te on a tensor built from §6.11: g = 6, block amax 6 gives
// sf = 0x7E and enc = 1, so codes are e2m1(x) and the dequantized value is f4 * RN(RN(448*6)*r2688).
TEST(QuantizeDequant, TeRoundTripOfSpecExample) {
  FloatMatrix x = xt::zeros<float>({16, 16});
  for (int c = 0; c < 16; ++c) x(0, c) = kF4[c];
  const Quantization q = quantize(x, opts(te(), BlockShape::k1D, Direction::kRowwise));
  EXPECT_EQ(int(q.rowwise->scale(0, 0)), 0x7E);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(int(q.rowwise->data(0, i)), (2 * i) | ((2 * i + 1) << 4)) << i;
  const FloatMatrix d = dequantize(q.rowwise->data, q.rowwise->scale, q.rowwise->amax, te());
  const float fs = (448.0f * 6.0f) * kR2688;  // RN(2688 * r2688)
  for (int c = 0; c < 16; ++c) EXPECT_EQ(ubits(d(0, c)), ubits(kF4[c] * fs)) << c;
}

}  // namespace
}  // namespace nvfp4
