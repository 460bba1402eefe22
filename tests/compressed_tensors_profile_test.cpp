// The compressed-tensors profile (docs/NUMERICS.md §4.2, docs/guides/checkpoints.md section 3): each new
// knob value on hand-derived values, then one quantization end to end.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/dequantize.h"
#include "reference/formulas.h"
#include "reference/profiles.h"
#include "reference/quantize.h"

namespace nvfp4 {
namespace {

const Profile& ct() { return find_profile("compressed-tensors")->knobs; }

// generate_gparam written out with the host's binary32 operations (-ffp-contract=off).
float gparam(float g) {
  const float clamped = std::isnan(g) ? g : std::fmax(g, 1.17549435e-38f);
  const float reciprocal = 1.0f / clamped;
  const float G = reciprocal * 2688.0f;
  return std::isfinite(G) ? G : 1.0f;
}

TEST(CompressedTensorsProfile, GlobalScaleIsReciprocalTimes2688WithTheFlushes) {
  for (const float g : {1.0f, 3.0f, 0.1f, 2688.0f, 448.0f, 1e-30f, 65504.0f})
    EXPECT_EQ(bits_of(global_scale(GlobalScaleRule::G_CT, g).G), bits_of(gparam(g))) << g;
  EXPECT_EQ(global_scale(GlobalScaleRule::G_CT, 0.0f).G, 1.0f) << "2688 / FLT_MIN overflows: 1";
  EXPECT_EQ(global_scale(GlobalScaleRule::G_CT, float_of(0x00000001)).G, 1.0f) << "subnormal g clamps to FLT_MIN";
  EXPECT_EQ(global_scale(GlobalScaleRule::G_CT, canonical_nan()).G, 1.0f);
  EXPECT_EQ(bits_of(global_scale(GlobalScaleRule::G_CT, INFINITY).G), 0u) << "1/inf = 0, times 2688 = 0, finite";
  // The reciprocal's rounding shows: RN(RN(1/7) * 2688) is 384 + 1 ulp, where RN(2688/7) is 384.
  EXPECT_EQ(bits_of(global_scale(GlobalScaleRule::G_CT, 7.0f).G), 0x43C00001u);
}

TEST(CompressedTensorsProfile, E2M1RoundsThroughBf16) {
  const auto code = [](float v) { return int(e2m1_encode(E2M1Encoder::BF16_TORCH, v)); };
  // 0.25 + 2^-25 is above the tie in binary32 (HW rounds it up to 0.5) but BF16 rounds it onto 0.25.
  EXPECT_EQ(int(e2m1_hw(0.25f + std::ldexp(1.0f, -25))), 0x1);
  EXPECT_EQ(code(0.25f + std::ldexp(1.0f, -25)), 0x0);
  EXPECT_EQ(code(2.5f + std::ldexp(1.0f, -22)), 0x4) << "onto the tie 2.5, then to the even 2.0";
  EXPECT_EQ(code(2.5f + std::ldexp(1.0f, -6)), 0x5) << "BF16 keeps it above the tie";
  EXPECT_EQ(code(-0.1f), 0x8) << "0 times torch.sign(-0.1) is -0.0: the packer's signbit";
  EXPECT_EQ(code(-0.0f), 0x0) << "torch.sign(-0.0) is +0.0";
  EXPECT_EQ(code(canonical_nan()), 0x0);
  EXPECT_EQ(code(-6.0f), 0xF);
  EXPECT_EQ(code(1.75f), 0x4);
}

// G_CT_BF16 on a BF16 weight: 1/3.515625 rounds to the BF16 0.28515625, times 2688 is 766.5, which
// BF16 rounds to 768 (compressed-tensors 0.20 stores 768.0 where the binary32 rule gives 764.5867).
TEST(CompressedTensorsProfile, Bf16GlobalScaleIsComputedInBf16) {
  EXPECT_EQ(global_scale(GlobalScaleRule::G_CT_BF16, 3.515625f).G, 768.0f);
  EXPECT_EQ(bits_of(global_scale(GlobalScaleRule::G_CT, 3.515625f).G), bits_of(gparam(3.515625f)));
  EXPECT_EQ(global_scale(GlobalScaleRule::G_CT_BF16, 0.0f).G, 1.0f) << "overflows BF16 too: 1";
  EXPECT_EQ(global_scale(GlobalScaleRule::G_CT_BF16, canonical_nan()).G, 1.0f);
}

// The Triton kernel clamps y with tl.clamp: on an H200 NaN becomes +6, code 0x7.
TEST(CompressedTensorsProfile, TritonClampSendsNanToMinusSix) {
  Profile p = ct();
  const ElementEncoder e{ElementEncoder::Op::DIV, 1.0f};
  EXPECT_EQ(int(encode_element(p, e, canonical_nan())), 0x7);
  EXPECT_EQ(int(encode_element(p, e, float_of(0xFFC00000u))), 0x7) << "a negative NaN too";
  EXPECT_EQ(int(encode_element(p, e, INFINITY)), 0x7);
  EXPECT_EQ(int(encode_element(p, e, -0.0f)), 0x0) << "the sign comes from y < 0";
  EXPECT_EQ(int(encode_element(p, e, -0.1f)), 0x8);
  EXPECT_EQ(int(encode_element(p, e, 0.25f + std::ldexp(1.0f, -25))), 0x1) << "binary32 thresholds, no BF16 step";
}

TEST(CompressedTensorsProfile, QuantizesWithEpsScalesDivisionsAndExportsG) {
  // Row 0: block 0 ramps to amax 3; block 1 all zero; block 2 tiny (its scale rounds to 0 in E4M3).
  FloatMatrix x = xt::zeros<float>({16, 48});
  for (int c = 0; c < 16; ++c) x(0, c) = 3.0f * float(c - 7) / 8.0f;  // -2.625 ... 3
  for (int c = 32; c < 48; ++c) x(0, c) = 1e-6f;
  QuantizeOptions o;
  o.profile = ct();
  const Quantization q = quantize(x, o);
  const float g = 3.0f, G = gparam(g);
  ASSERT_TRUE(q.global_scale);
  EXPECT_EQ(bits_of(*q.global_scale), bits_of(G)) << "weight_global_scale is G itself";
  // Block 0: t = RN(RN(3 / 6) * G) (a tensor division on CUDA) cast to E4M3 (clamped to 448 first).
  const float t = (3.0f / 6.0f) * G;
  const std::uint8_t sb = e4m3torch(std::fmin(t, 448.0f));
  EXPECT_EQ(q.rowwise->scale(0, 0), sb);
  EXPECT_EQ(q.rowwise->scale(0, 1), 0x20) << "an all-zero block stores 0.125 (byte 0x20), not 0";
  EXPECT_EQ(q.rowwise->scale(0, 2), 0x20) << "a scale that rounds to zero stores 0.125 too";
  // Elements: y = RN(x / RN(sf / G)), clamped to 6, binary32 thresholds with the sign of y < 0.
  const float eff = e4m3_decode(sb) / G;
  for (int c = 0; c < 16; ++c) {
    const float y = std::fmax(-6.0f, std::fmin(6.0f, x(0, c) / eff));
    const std::uint8_t byte = q.rowwise->data(0, c / 2);
    EXPECT_EQ(int((byte >> (4 * (c % 2))) & 0xF), int(e2m1_encode(E2M1Encoder::TABLE_TE, y))) << c;
  }
  EXPECT_EQ(q.rowwise->data(0, 8), 0x00) << "zero block codes";
}

}  // namespace
}  // namespace nvfp4
