// The 16-point random Hadamard transform (docs/NUMERICS.md §3.19): the worked example §6.19,
// special values, the double rounding, and the transform applied twice.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <bit>
#include <cfenv>
#include <cmath>
#include <filesystem>
#include <random>

#include "cases/corpus.h"
#include "cases/metamorphic_backend.h"
#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "compare/diff.h"
#include "io/tensor_convert.h"
#include "reference/arith.h"
#include "reference/error.h"
#include "reference/hadamard.h"
#include "reference/half_float.h"
#include "reference/quantize.h"

namespace nvfp4 {
namespace {

std::array<float, 16> one_hot(int k) {
  std::array<float, 16> x{};
  x[k] = 1.0f;
  return x;
}

std::array<std::uint16_t, 16> bf16_bits(const std::array<float, 16>& y) {
  std::array<std::uint16_t, 16> b;
  for (int n = 0; n < 16; ++n) b[n] = std::uint16_t(bits_of(y[n]) >> 16);
  return b;
}

using Bits = std::array<std::uint16_t, 16>;

TEST(Rht16, WorkedExample619) {
  Bits quarter;
  quarter.fill(0x3E80);
  EXPECT_EQ(bf16_bits(rht16(one_hot(0), kRhtDefaultMask, RhtSum::EXACT)), quarter);
  EXPECT_EQ(bf16_bits(rht16(one_hot(3), kRhtDefaultMask, RhtSum::EXACT)),
            (Bits{0xBE80, 0x3E80, 0x3E80, 0xBE80, 0xBE80, 0x3E80, 0x3E80, 0xBE80, 0xBE80, 0x3E80, 0x3E80, 0xBE80, 0xBE80, 0x3E80,
                  0x3E80, 0xBE80}));
  std::array<float, 16> ramp;
  for (int k = 0; k < 16; ++k) ramp[k] = float(k + 1);
  EXPECT_EQ(bf16_bits(rht16(ramp, kRhtDefaultMask, RhtSum::EXACT)),
            (Bits{0xC178, 0xC0F0, 0x40F0, 0xBF00, 0x40F0, 0xBF00, 0xC178, 0x4108, 0x4108, 0x4184, 0x3FC0, 0x3FC0, 0x3FC0, 0xC020,
                  0x4128, 0xC18C}));
  // The double rounding: 0.25 + 2^-10 + 2^-40 rounds to binary32 0x3E808000, then ties to 0x3E80.
  std::array<float, 16> wide{};
  wide[0] = 1.0f;
  wide[1] = std::ldexp(1.0f, -8);
  wide[2] = std::ldexp(1.0f, -38);
  EXPECT_EQ(bf16_bits(rht16(wide, kRhtDefaultMask, RhtSum::EXACT)),
            (Bits{0x3E80, 0x3E7F, 0x3E80, 0x3E7F, 0x3E80, 0x3E7F, 0x3E80, 0x3E7F, 0x3E80, 0x3E7F, 0x3E80, 0x3E7F, 0x3E80, 0x3E7F,
                  0x3E80, 0x3E7F}));
}

// The intermediates of §6.19's double-rounding output: the exact sum, its binary32 rounding, and
// the single rounding to BF16 that the definition does not do.
TEST(Rht16Sum, ExactSumAndBothRoundingsOfWorkedExample619) {
  std::array<float, 16> wide{};
  wide[0] = 1.0f;
  wide[1] = std::ldexp(1.0f, -8);
  wide[2] = std::ldexp(1.0f, -38);
  const Rht16Sum s = rht16_sum(wide, kRhtDefaultMask, 0);
  EXPECT_EQ(s.exact, "0x1.0100000004p-2");  // 0.25 + 2^-10 + 2^-40
  EXPECT_EQ(bits_of(s.binary32), 0x3E808000u);
  EXPECT_EQ(bits_of(s.bf16), 0x3E800000u);
  EXPECT_EQ(bits_of(s.bf16_single), 0x3E810000u);
  const Rht16Sum t = rht16_sum(wide, kRhtDefaultMask, 1);  // 0.25 - 2^-10 + 2^-40 (H16[1][1] = -1)
  EXPECT_EQ(t.exact, "0x1.fe00000008p-3");
  std::array<float, 16> inf{};
  inf[0] = INFINITY;
  EXPECT_EQ(rht16_sum(inf, 0, 3).exact, "+inf");
  inf[1] = INFINITY;
  EXPECT_EQ(rht16_sum(inf, 0, 1).exact, "NaN");  // +inf - inf
  EXPECT_EQ(rht16_sum(std::array<float, 16>{}, 0, 0).exact, "+0");
  // Every output agrees with rht16.
  std::array<float, 16> ramp;
  for (int k = 0; k < 16; ++k) ramp[k] = float(k + 1);
  const std::array<float, 16> y = rht16(ramp, kRhtDefaultMask, RhtSum::EXACT);
  for (unsigned n = 0; n < 16; ++n) EXPECT_EQ(bits_of(rht16_sum(ramp, kRhtDefaultMask, n).bf16), bits_of(y[n])) << n;
}

// rht16's int64 path (inputs spanning at most 48 binades) against the 512-bit sums that
// rht16_sum always takes, on spans around the switch, with zeros of both signs and subnormals.
RC_GTEST_PROP(Rht16Properties, Int64PathEqualsTheFixedPointSums, ()) {
  const int top = *rc::gen::inRange(1, 255), span = *rc::gen::inRange(0, 64);
  std::array<float, 16> x;
  for (float& v : x) {
    const int field = std::max(0, top - *rc::gen::inRange(0, span + 1));
    const std::uint32_t f = *rc::gen::inRange<std::uint32_t>(0, 128);
    const std::uint32_t sign = *rc::gen::element(0u, 0x8000u);
    v = *rc::gen::weightedElement<bool>({{1, true}, {6, false}}) ? float_of(sign << 16)
                                                                 : float_of((sign | std::uint32_t(field) << 7 | f) << 16);
  }
  const std::uint16_t mask = *rc::gen::arbitrary<std::uint16_t>();
  const std::array<float, 16> y = rht16(x, mask, RhtSum::EXACT);
  for (unsigned n = 0; n < 16; ++n) RC_ASSERT(bits_of(y[n]) == bits_of(rht16_sum(x, mask, n).bf16));
}

// Mask 0 and a one-hot input: the row of H16 times 0.25, +-0.25 (0x3E80 / 0xBE80).
TEST(Rht16, PlainHadamardOfOneHotInputsIsPlusMinusAQuarter) {
  for (int k = 0; k < 16; ++k) {
    const std::array<float, 16> y = rht16(one_hot(k), 0, RhtSum::EXACT);
    for (int n = 0; n < 16; ++n)
      EXPECT_EQ(bits_of(y[n]), (std::popcount(unsigned(k & n)) & 1) ? 0xBE800000u : 0x3E800000u) << k << "," << n;
  }
}

TEST(Rht16, NanAndInfinities) {
  std::array<float, 16> x{};
  x[5] = std::nanf("");
  for (float v : rht16(x, kRhtDefaultMask, RhtSum::EXACT)) EXPECT_TRUE(std::isnan(v));
  x[5] = INFINITY;  // one infinity: +-inf in every output, sign from the coefficient
  const std::array<float, 16> y = rht16(x, 0, RhtSum::EXACT);
  for (int n = 0; n < 16; ++n) EXPECT_EQ(y[n], (std::popcount(unsigned(5 & n)) & 1) ? -INFINITY : INFINITY);
  x[6] = INFINITY;  // +inf and -inf meet in outputs where H[5][n] != H[6][n]
  const std::array<float, 16> z = rht16(x, 0, RhtSum::EXACT);
  for (int n = 0; n < 16; ++n) {
    const bool differ = (std::popcount(unsigned(5 & n)) & 1) != (std::popcount(unsigned(6 & n)) & 1);
    if (differ)
      EXPECT_TRUE(std::isnan(z[n])) << n;
    else
      EXPECT_TRUE(std::isinf(z[n])) << n;
  }
}

TEST(Rht16, ExactZeroIsNegativeOnlyWhenEveryProductIsNegativeZero) {
  std::array<float, 16> x;
  x.fill(-0.0f);
  const std::array<float, 16> y = rht16(x, 0, RhtSum::EXACT);  // output 0: every coefficient +1, every product -0
  EXPECT_EQ(bits_of(y[0]), 0x80000000u);
  EXPECT_EQ(bits_of(y[1]), 0x00000000u);  // half the products are +0
  std::array<float, 16> cancel{};
  cancel[0] = 1.0f;
  cancel[1] = 1.0f;
  EXPECT_EQ(bits_of(rht16(cancel, 0, RhtSum::EXACT)[1]), 0x00000000u);  // 0.25 - 0.25: an exact +0
}

TEST(Rht, ShapesAndErrors) {
  FloatMatrix x = xt::zeros<float>({32, 48});
  x(17, 3) = 2.0f;
  const FloatMatrix y = rht(x, 0, RhtSum::EXACT);
  ASSERT_EQ(y.shape(0), 48u);
  ASSERT_EQ(y.shape(1), 32u);
  for (int n = 0; n < 16; ++n) EXPECT_EQ(y(3, 16 + n), (std::popcount(unsigned(1 & n)) & 1) ? -0.5f : 0.5f);
  EXPECT_EQ(y(3, 0), 0.0f);
  try {
    rht(xt::zeros<float>({24, 16}), 0, RhtSum::EXACT);
    FAIL() << "M = 24 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::E_DIM16_M);
  }
}

// H16 * H16 = 16 I and the signs cancel, so the transform with mask m followed by the plain one
// (with the signs of m applied to its output) gives x back up to the roundings. Bound: each output
// of the first pass has |y| <= 16 * 0.25 * amax = 4 amax and is off by at most 2^-8 |y| (RN to
// BF16's 8 significant bits; the binary32 step adds under 2^-24 |y|); the second pass sums 16 of
// those errors times 0.25: at most 16 * 0.25 * 2^-8 * 4 amax = 2^-4 amax, and its own rounding to
// BF16 adds at most 2^-8 * (1 + 2^-4) amax. Tested: |x2 - x| <= (2^-4 + 2^-7) * amax.
RC_GTEST_PROP(RhtProperties, TwiceGivesTheInputBackWithinTheRoundings, ()) {
  std::array<float, 16> x;
  float amax = 0.0f;
  for (float& v : x) {
    v = bf16_to_float(float_to_bf16(float(*rc::gen::inRange(-1000, 1001)) / 37.0f));
    amax = std::max(amax, std::fabs(v));
  }
  const std::uint16_t mask = *rc::gen::arbitrary<std::uint16_t>();
  const std::array<float, 16> y = rht16(x, mask, RhtSum::EXACT);
  std::array<float, 16> back = rht16(y, 0, RhtSum::EXACT);
  for (int k = 0; k < 16; ++k) {
    const float v = ((mask >> k) & 1) ? -back[k] : back[k];
    RC_ASSERT(std::fabs(v - x[k]) <= std::ldexp(amax, -4) + std::ldexp(amax, -7));
  }
}

// The bound that lets device/kernels/hadamard16.cuh sum a chunk by a binary32 butterfly (NUMERICS §3.19): it
// sums the signed inputs unscaled (0.25 * the sum is exact), which are multiples of 2^qmin, and every
// partial sum lies below 2^(qmax+12), so a span of at most 12 binades (and exponent fields of at
// most 250) keeps each partial sum within binary32's 24 bits and below 2^128. Checked against the
// same butterfly in binary64, which is exact here.
struct Butterflies {
  std::array<float, 16> single;
  std::array<double, 16> twice;
};

Butterflies butterflies(const std::array<float, 16>& x, std::uint16_t mask) {
  Butterflies b;
  for (int k = 0; k < 16; ++k) {
    b.single[k] = (mask >> k) & 1 ? -x[k] : x[k];
    b.twice[k] = (mask >> k) & 1 ? -double(x[k]) : double(x[k]);
  }
  for (int h = 1; h < 16; h *= 2)
    for (int i = 0; i < 16; ++i)
      if ((i & h) == 0) {
        const float a = b.single[i], c = b.single[i + h];
        b.single[i] = add_rn(a, c);
        b.single[i + h] = add_rn(a, -c);
        const double ad = b.twice[i], cd = b.twice[i + h];
        b.twice[i] = ad + cd;
        b.twice[i + h] = ad - cd;
      }
  return b;
}

TEST(Rht16Binary32Bound, ChunksSpanningTwelveBinadesSumExactly) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 100000; ++trial) {
    constexpr int kSpan = 12;
    const int lo = int(rng() % (251 - kSpan));  // fields lo..lo+12 <= 250; field 0 (subnormal) shares field 1's grid
    // Half the chunks are the widest sums: largest values of one sign at the top field, odd
    // mantissas at the bottom one (with kSpan = 13 these need 25 bits and the test fails).
    const bool widest = trial % 2 == 0;
    std::array<float, 16> x;
    for (float& v : x) {
      const bool bottom = rng() % 4 == 0;
      const std::uint32_t field = widest ? (bottom ? lo : lo + kSpan) : lo + rng() % (kSpan + 1);
      const std::uint32_t mantissa = widest ? (bottom ? (rng() % 128) | 1 : 127) : rng() % 128;
      const std::uint32_t sign = widest ? 0 : rng() % 2;
      v = !widest && rng() % 8 == 0 ? 0.0f : bf16_to_float(std::uint16_t(sign << 15 | field << 7 | mantissa));
    }
    const std::uint16_t mask = widest ? 0 : std::uint16_t(rng());
    const Butterflies b = butterflies(x, mask);
    for (int n = 0; n < 16; ++n)
      ASSERT_EQ(double(b.single[n]), b.twice[n]) << "trial " << trial << " output " << n << " fields from " << lo;
  }
}

// Spans of 13 to 25 binades: the inputs of the top 13 fields and the others each span at most 12,
// so two binary32 butterflies sum them exactly, and one binary32 addition of the two sums is the
// single rounding RN32 of the exact sum (device/kernels/hadamard16.cuh's split path).
TEST(Rht16Binary32Bound, ChunksSpanningTwentyFiveBinadesSumByTwoButterflies) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 100000; ++trial) {
    const int span = 13 + int(rng() % 13), lo = 1 + int(rng() % (250 - span)), hi = lo + span;
    std::array<float, 16> high, low, all;
    for (int k = 0; k < 16; ++k) {
      const std::uint32_t field = k == 0 ? hi : k == 1 ? lo : lo + rng() % (span + 1);
      all[k] = bf16_to_float(std::uint16_t((rng() % 2) << 15 | field << 7 | (rng() % 128)));
      const bool top = int(field) >= hi - 12;
      high[k] = top ? all[k] : 0.0f;
      low[k] = top ? 0.0f : all[k];
    }
    const std::uint16_t mask = std::uint16_t(rng());
    const Butterflies h = butterflies(high, mask), l = butterflies(low, mask), a = butterflies(all, mask);
    for (int n = 0; n < 16; ++n) {
      ASSERT_EQ(double(h.single[n]), h.twice[n]) << "trial " << trial << " output " << n;
      ASSERT_EQ(double(l.single[n]), l.twice[n]) << "trial " << trial << " output " << n;
      ASSERT_EQ(add_rn(h.single[n], l.single[n]), float(a.twice[n])) << "trial " << trial << " output " << n;
    }
  }
}

TEST(Rht16Binary32Bound, ThirteenBinadesCanNeedTwentyFiveBits) {
  std::array<float, 16> x;
  x.fill(bf16_to_float(0x3FFF));  // 1.9921875: field 127, every mantissa bit set
  x[15] = bf16_to_float(0x3901);  // 2^-13 * (1 + 2^-7): field 114
  // Output 0 with mask 0 sums 15 * 1.9921875 + 2^-13 + 2^-20: bits 2^4 down to 2^-20.
  const Butterflies b = butterflies(x, 0);
  EXPECT_NE(double(b.single[0]), b.twice[0]);
}

TEST(Rht16Binary32Bound, FieldAbove250CanOverflow) {
  std::array<float, 16> x;
  x.fill(bf16_to_float(0x7DFF));  // 1.9921875 * 2^124: field 251
  // Output 0 with mask 0 sums 16 of them: 1.9921875 * 2^128, past FLT_MAX.
  const Butterflies b = butterflies(x, 0);
  EXPECT_NE(double(b.single[0]), b.twice[0]);
}

// ---- [knob RHT] MMA_SM90: the sums of one BF16 tensor-core instruction (NUMERICS.md §3.19) ----

// Within 18 binades no product loses a bit to the alignment (each keeps 25 - 7 bits of headroom
// below the largest), so the model is the exact sum rounded toward zero, then to BF16. The exact
// sum here: an int64 of units 2^(lo - 136); its rounding: the FPU's conversion under FE_TOWARDZERO.
float toward_zero_then_bf16(std::int64_t units, int lo) {
  if (units == 0) return 0.0f;
  const int saved = std::fegetround();
  std::fesetround(FE_TOWARDZERO);
  volatile std::int64_t in = units;
  volatile float f = static_cast<float>(in);
  std::fesetround(saved);
  return bf16_to_float(float_to_bf16(std::ldexp(float(f), lo - 136)));  // normal here: the scaling is exact
}

TEST(Rht16Mma, WithinEighteenBinadesIsTheExactSumRoundedTowardZero) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 20000; ++trial) {
    const int span = int(rng() % 19), lo = 40 + int(rng() % (200 - span)), hi = lo + span;
    std::array<float, 16> x;
    std::array<std::int64_t, 16> units;  // |x[k]| / 4 in units of 2^(lo - 136), signed
    for (int k = 0; k < 16; ++k) {
      const std::uint32_t field = k == 0 ? hi : lo + rng() % (span + 1), mantissa = rng() % 128, sign = rng() % 2;
      const bool zero = k > 0 && rng() % 8 == 0;
      x[k] = zero ? 0.0f : bf16_to_float(std::uint16_t(sign << 15 | field << 7 | mantissa));
      units[k] = zero ? 0 : std::int64_t(mantissa | 0x80u) << (field - lo);
      if (sign) units[k] = -units[k];
    }
    const std::uint16_t mask = std::uint16_t(rng());
    const std::array<float, 16> y = rht16(x, mask, RhtSum::MMA_SM90);
    for (unsigned n = 0; n < 16; ++n) {
      std::int64_t sum = 0;
      for (unsigned k = 0; k < 16; ++k) {
        const bool negative = ((std::popcount(k & n) & 1) != 0) != (((mask >> k) & 1u) != 0);
        sum += negative ? -units[k] : units[k];
      }
      ASSERT_EQ(bits_of(y[n]), bits_of(toward_zero_then_bf16(sum, lo))) << "trial " << trial << " output " << n;
    }
  }
}

// A product more than 18 binades below the largest loses its low bits: 1 - 1 + t with
// t = (1 + 2^-7) * 2^-20 sums to 0.25 t exactly, and the model keeps trunc(129 / 4) = 32 units of
// 2^-27, 2^-22 (BF16 0x3480), where the exact path gives (1 + 2^-7) * 2^-22 (0x3481).
TEST(Rht16Mma, TruncatesWhatLiesBelowTwentyFiveFractionBits) {
  std::array<float, 16> x{};
  x[0] = 1.0f;
  x[1] = -1.0f;
  x[2] = bf16_to_float(0x3581);  // (1 + 2^-7) * 2^-20
  EXPECT_EQ(bf16_bits(rht16(x, 0, RhtSum::MMA_SM90))[0], 0x3480);
  EXPECT_EQ(bf16_bits(rht16(x, 0, RhtSum::EXACT))[0], 0x3481);
  const Rht16Sum s = rht16_sum(x, 0, 0);
  EXPECT_EQ(bits_of(s.mma), bits_of(std::ldexp(1.0f, -22)));
  EXPECT_EQ(bits_of(s.bf16_mma), bits_of(std::ldexp(1.0f, -22)));
}

// TE's reference's differences on an H200 (the te-pyref row of docs/peers.md) in small: the exact
// sum (1 + 3 * 2^-8) / 4 - 2^-26 is half a binary32 ulp below the BF16 midpoint (1 + 3 * 2^-8) / 4.
// RN ties it up to the midpoint, which BF16 ties to even, 0x3E82; toward zero it stays below, 0x3E81.
TEST(Rht16Mma, RoundsTowardZeroWhereTheExactPathRoundsToNearest) {
  std::array<float, 16> x{};
  x[0] = bf16_to_float(0x3F81);  // 1 + 2^-7
  x[1] = bf16_to_float(0x3B80);  // 2^-8
  x[2] = bf16_to_float(0xB380);  // -2^-24
  EXPECT_EQ(bf16_bits(rht16(x, 0, RhtSum::EXACT))[0], 0x3E82);
  EXPECT_EQ(bf16_bits(rht16(x, 0, RhtSum::MMA_SM90))[0], 0x3E81);
}

TEST(Rht16Mma, ZeroSumsArePositiveAndSpecialValuesAreIeee) {
  std::array<float, 16> x;
  x.fill(-0.0f);  // output 0 (mask 0): every product -0.0
  EXPECT_EQ(bits_of(rht16(x, 0, RhtSum::EXACT)[0]), 0x80000000u);
  EXPECT_EQ(bits_of(rht16(x, 0, RhtSum::MMA_SM90)[0]), 0x00000000u);
  x.fill(0.0f);
  x[3] = INFINITY;
  const std::array<float, 16> inf = rht16(x, 0, RhtSum::MMA_SM90);
  EXPECT_EQ(bits_of(inf[0]), bits_of(INFINITY));   // output 0: +inf
  EXPECT_EQ(bits_of(inf[1]), bits_of(-INFINITY));  // output 1: (-1)^popcount(3 & 1) = -1
  x[5] = -INFINITY;                                // output 0: +inf - inf
  EXPECT_TRUE(std::isnan(rht16(x, 0, RhtSum::MMA_SM90)[0]));
  x[5] = std::numeric_limits<float>::quiet_NaN();
  for (float v : rht16(x, kRhtDefaultMask, RhtSum::MMA_SM90)) EXPECT_TRUE(std::isnan(v));
}

// The three te-pyref cases that TransformerEngine's reference failed under the gate with the RHT
// rule EXACT (corpora/found/): its columnwise amax was one BF16 ulp below the profile's. With
// MMA_SM90, te-pyref's own value, the reference's amax is that one ulp lower in the same row, and
// the metamorphic relation (the copy quantized from the rht operation's output) agrees with it.
TEST(Rht16Mma, TePyrefFoundCasesAreOneBf16UlpBelowTheExactSums) {
  for (const char* name : {"case-1aa94be5d158de71", "case-95986ac85e116def", "case-795f17861377ed44"}) {
    SCOPED_TRACE(name);
    const cases::Case c =
        cases::load_case(std::filesystem::path(NVFP4_SOURCE_DIR) / "corpora" / "found" / (std::string(name) + ".safetensors")).c;
    const FloatMatrix x = io::to_float_matrix(c.inputs.at("x"), "test", "x");
    QuantizeOptions o = cases::quantize_options(c);
    ASSERT_EQ(o.profile.rht, RhtSum::MMA_SM90);
    const FloatVector mma = quantize(x, o).columnwise->amax;
    o.profile.rht = RhtSum::EXACT;
    const FloatVector exact = quantize(x, o).columnwise->amax;
    ASSERT_EQ(mma.size(), exact.size());
    int lower = 0;
    for (std::size_t r = 0; r < mma.size(); ++r) {
      if (bits_of(mma(r)) == bits_of(exact(r))) continue;
      EXPECT_EQ(bits_of(mma(r)) + 0x10000u, bits_of(exact(r))) << "row " << r;
      ++lower;
    }
    EXPECT_GE(lower, 1);
    EXPECT_EQ(compare::describe(compare::diff_outputs(cases::ReferenceBackend().run(c), cases::MetamorphicBackend().run(c))), "");
  }
}

}  // namespace
}  // namespace nvfp4
