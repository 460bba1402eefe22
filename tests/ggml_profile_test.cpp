// The ggml profile (docs/NUMERICS.md §2.2.4, §4.2) on blocks whose bytes ggml 0.25.3's own
// quantize_row_nvfp4_ref computed (libggml-base.so built by scripts/build-ggml-peer; the same
// table drives python/tests/test_ggml_adapter.py against the library itself).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/dequantize.h"
#include "reference/formulas.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "tests/support/quantize_options.h"

namespace nvfp4 {
namespace {

const Profile& ggml() { return find_profile("ggml")->knobs; }

struct GgmlBlock {
  std::vector<float> x;  // 16 elements (shorter: zero-filled)
  int scale;
  std::vector<int> codes;  // 16 codes (shorter: zero-filled)
};

const float kInf = INFINITY, kNan = NAN;
const GgmlBlock kBlocks[] = {
    {{0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, 6, -0.25f, -0.75f, -1.25f, -1.75f, -2.5f, -3.5f, -5, -6},  // ties: to 0
     0x38,
     {0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15}},
    {{kNan, 1, 2, 3, 4, 5, 6, -kNan, 0, 0, 0, 0, 0, 0, 0, 0.7f}, 0x38, {0, 2, 4, 5, 6, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
    {{kInf, -kInf, 1, -3, 2000, -2000, 448, 1000}, 0x7E, {0, 0, 0, 0, 6, 14, 2, 4}},
    {{-0.0f, -0.1f, -0.2f, -0.25f, -0.26f, 0.1f, 6, -6}, 0x38, {0, 0, 0, 0, 9, 0, 7, 15}},
    {{}, 0x00, {}},
    {{6 * 0x1p-10f, 0x1p-10f, -0x1p-10f, 3 * 0x1p-11f}, 0x01, {5, 1, 9, 1}},  // t = 2^-10, where e4m3sat gives 0x00
    {{6 * 7.75f * 0x1p-9f, 7 * 0x1p-9f, 0x1p-9f}, 0x07, {7, 2, 0}},           // t < 2^-6: capped at 0x07
    {{6 * 0x1p-11f, -6 * 0x1p-11f, 0x1p-11f}, 0x00, {}},                      // scale 0: every code 0
    {{1536, 1024, 768, -512, 256}, 0x7E, {5, 4, 3, 10, 1}},                   // t = 256 -> 0x7E (448)
    {{1500, 1000}, 0x7E, {5, 4}},                                             // t = 250 -> 0x7E
    {{6.375f, 1.0625f, 0.53125f, 1.59375f}, 0x39, {7, 2, 1, 3}},              // t = 1.0625: the tie goes up
    {{1e6f, 0x1p34f, 0x1p35f, 0x1p36f, -0x1p36f, 1e30f, 3000, 3360}, 0x7E, {7, 7, 5, 7, 15, 0, 7, 7}},
    {{0x1p-149f, 0x1p-127f, -0x1p-149f, 1e-40f}, 0x00, {}},
};

TEST(GgmlProfile, QuantizesAsGgmlDid) {
  const std::size_t n = std::size(kBlocks);
  FloatMatrix x = xt::zeros<float>({std::size_t(16), 16 * n});  // block j of row 0 is kBlocks[j]; rows 1-15 zero
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t k = 0; k < kBlocks[j].x.size(); ++k) x(0, 16 * j + k) = kBlocks[j].x[k];
  const QuantizedTensor q = *quantize(x, test_support::opts(ggml(), BlockShape::k1D, Direction::kRowwise)).rowwise;
  for (std::size_t j = 0; j < n; ++j) {
    SCOPED_TRACE("block " + std::to_string(j));
    EXPECT_EQ(int(q.scale(0, j)), kBlocks[j].scale);
    for (std::size_t k = 0; k < 16; ++k) {
      const int expected = k < kBlocks[j].codes.size() ? kBlocks[j].codes[k] : 0;
      EXPECT_EQ((q.data(0, 8 * j + k / 2) >> (4 * (k % 2))) & 0xF, expected) << "element " << k;
    }
  }
}

// ggml's cast next to e4m3sat where they differ: ties up, the subnormal cap, exponent 15 as overflow.
TEST(GgmlProfile, ScaleCastDiffersFromSatfinite) {
  EXPECT_EQ(int(e4m3ggml(1.0625f)), 0x39) << "a tie: half up";
  EXPECT_EQ(int(e4m3sat(1.0625f)), 0x38) << "a tie: to even";
  EXPECT_EQ(int(e4m3ggml(7.75f * 0x1p-9f)), 0x07);
  EXPECT_EQ(int(e4m3sat(7.75f * 0x1p-9f)), 0x08);
  EXPECT_EQ(int(e4m3ggml(248.0f)), 0x7E);
  EXPECT_EQ(int(e4m3ggml(240.0f)), 0x77);
  EXPECT_EQ(int(e4m3sat(256.0f)), 0x78);
  EXPECT_EQ(int(e4m3ggml(256.0f)), 0x7E);
  EXPECT_EQ(int(e4m3ggml(kInf)), 0x7E);
  EXPECT_EQ(int(e4m3ggml(kNan)), 0x00);
  EXPECT_EQ(int(e4m3ggml(-1.0f)), 0x00);
  EXPECT_EQ(int(e4m3ggml(float_of(0x3A7FFFFFu))), 0x01) << "just below 2^-10: RN(RN(t * 512) + 0.5) = 1";
}

// dequantize_row_nvfp4: the sign bit of the scale ignored, 0x7F as 0, code 0x8 as +0; a negative
// code under a zero scale stays -0.
TEST(GgmlProfile, DequantizesAsGgml) {
  EXPECT_EQ(e4m3ggml_decode(0xB8), 1.0f);
  EXPECT_EQ(e4m3ggml_decode(0xFF), 480.0f);
  EXPECT_EQ(e4m3ggml_decode(0x7F), 0.0f);
  ByteMatrix data = xt::zeros<std::uint8_t>({std::size_t(1), std::size_t(32)});
  ByteMatrix scale = xt::zeros<std::uint8_t>({std::size_t(128), std::size_t(4)});
  data(0, 0) = 0x98;   // elements 0, 1: codes 0x8 (-0), 0x9 (-0.5) under scale 0x38
  data(0, 8) = 0x9F;   // elements 16, 17: codes 0xF (-6), 0x9 under scale 0x00
  data(0, 16) = 0x07;  // element 32: code 0x7 under scale 0x7F
  scale(0, 0) = 0x38;
  scale(0, 2) = 0x7F;
  const FloatMatrix v = dequantize(data, scale, FloatVector({1.0f}), ggml());
  EXPECT_EQ(bits_of(v(0, 0)), 0x00000000u) << "code 0x8 is +0";
  EXPECT_EQ(v(0, 1), -0.5f);
  EXPECT_EQ(bits_of(v(0, 16)), 0x80000000u) << "-6 * 0 is -0";
  EXPECT_EQ(bits_of(v(0, 17)), 0x80000000u);
  EXPECT_EQ(bits_of(v(0, 32)), 0x00000000u) << "0x7F decodes to 0";
}

}  // namespace
}  // namespace nvfp4
