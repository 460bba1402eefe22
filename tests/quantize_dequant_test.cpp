// Unit tests of dequantization (NUMERICS.md §3.13, §6.13). Expected values come from the
// specification or from hand computation, never from the code under test.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "reference/dequantize.h"
#include "reference/quantize.h"
#include "tests/support/quantize_checks.h"
#include "tests/support/quantize_options.h"
#include "tests/support/te_model.h"

namespace nvfp4 {
namespace {

using test_support::f8_ref;
using test_support::kF4;
using test_support::kR2688;
using test_support::opts;
using test_support::te;
using test_support::ubits;

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
