// Stochastic rounding (docs/NUMERICS.md §3.18): Philox known answers, the canonical assignment of
// §6.18, the element function's thresholds and specials, and the properties of SR quantization.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>

#include "cases/recipe.h"
#include "reference/philox.h"
#include "reference/profiles.h"
#include "reference/quantize.h"

namespace nvfp4 {
namespace {

void expect_words(const PhiloxCounter& o, std::uint32_t x, std::uint32_t y, std::uint32_t z, std::uint32_t w) {
  EXPECT_EQ(o.x, x);
  EXPECT_EQ(o.y, y);
  EXPECT_EQ(o.z, z);
  EXPECT_EQ(o.w, w);
}

TEST(Philox, Random123KnownAnswers) {
  expect_words(philox4x32_10({0, 0, 0, 0}, {0, 0}), 0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8);
  expect_words(philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}), 0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD);
  expect_words(philox4x32_10({0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344}, {0xA4093822, 0x299F31D0}), 0xD16CFE09, 0x94FDCCEB,
               0x5001E420, 0x24126EA1);
}

TEST(Philox, CanonicalAssignmentOfWorkedExample618) {
  EXPECT_EQ(sr_counter(0, SrDirection::kColumnwise, 0), (PhiloxCounter{0, 0, 0, 0x80000000u}));
  expect_words(sr_draw(42, 0, SrDirection::kRowwise, 0), 0x9CEAF053, 0x77F5493B, 0x12BF50AD, 0x5742B3D7);
  expect_words(sr_draw(42, 0, SrDirection::kRowwise, 1), 0x02933769, 0x2051E913, 0x3B68B038, 0xB62C409C);
  expect_words(sr_draw(42, 0, SrDirection::kColumnwise, 0), 0xDC9BA2AD, 0xEF0B17C6, 0x71CFD3E8, 0x5F5D9C07);
  expect_words(sr_draw(0x0123456789ABCDEFull, 0, SrDirection::kRowwise, 0), 0xB850222E, 0xC58CB04B, 0x14A7A020, 0x7A84FFF9);
  EXPECT_EQ(sr_counter(7, SrDirection::kRowwise, 5), (PhiloxCounter{7, 0, 5, 0}));
  expect_words(sr_draw(0x0123456789ABCDEFull, 7, SrDirection::kRowwise, 5), 0x91B7D2E0, 0xA4D4B6C4, 0xC6ACF628, 0xE0E4B442);
}

// §6.18's block: y bits, the byte the canonical assignment gives, and the SR code.
TEST(StochasticRounding, WorkedExample618Block) {
  const std::uint32_t y[16] = {0x3E99999A, 0x3F99999A, 0x402CCCCD, 0x40B00000, 0xBE99999A, 0xBF99999A, 0xC02CCCCD, 0xC0B00000,
                               0x00000000, 0x80000000, 0x3F800000, 0x40C00000, 0x3F3D70A4, 0x4079999A, 0x40833333, 0x40BCCCCD};
  const int r8[16] = {83, 240, 234, 156, 59, 73, 245, 119, 173, 80, 191, 18, 215, 179, 66, 87};
  const std::uint8_t sr[16] = {0x0, 0x3, 0x5, 0x7, 0x8, 0xA, 0xD, 0xF, 0x0, 0x8, 0x2, 0x7, 0x2, 0x6, 0x6, 0x7};
  const PhiloxCounter draw = sr_draw(42, 0, SrDirection::kRowwise, 0);
  std::uint8_t packed[8] = {};
  for (unsigned i = 0; i < 16; ++i) {
    EXPECT_EQ(sr_byte(draw, i), r8[i]) << "element " << i;
    EXPECT_EQ(sr_e2m1(float_of(y[i]), std::uint8_t(r8[i])), sr[i]) << "element " << i;
    packed[i / 2] |= std::uint8_t(sr_e2m1(float_of(y[i]), sr_byte(draw, i)) << (4 * (i % 2)));
  }
  const std::uint8_t expected[8] = {0x30, 0x75, 0xA8, 0xFD, 0x80, 0x72, 0x62, 0x76};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(packed[j], expected[j]) << "byte " << j;
}

TEST(StochasticRounding, ThresholdsAndSpecials) {
  // 0.3 rounds up to 0.5 iff r8 >= 103; 1.2 up to 1.5 iff r8 >= 154.
  EXPECT_EQ(sr_e2m1(float_of(0x3E99999A), 102), 0x0);
  EXPECT_EQ(sr_e2m1(float_of(0x3E99999A), 103), 0x1);
  EXPECT_EQ(sr_e2m1(float_of(0x3F99999A), 153), 0x2);
  EXPECT_EQ(sr_e2m1(float_of(0x3F99999A), 154), 0x3);
  for (int r = 0; r < 256; ++r) {
    EXPECT_EQ(sr_e2m1(std::nanf(""), std::uint8_t(r)), 0x7);
    EXPECT_EQ(sr_e2m1(INFINITY, std::uint8_t(r)), 0x7);
    EXPECT_EQ(sr_e2m1(-INFINITY, std::uint8_t(r)), 0xF);
    EXPECT_EQ(sr_e2m1(-0.0f, std::uint8_t(r)), 0x8);
    EXPECT_EQ(sr_e2m1(7.0f, std::uint8_t(r)), 0x7);  // beyond 6 saturates
  }
  EXPECT_EQ(sr_e2m1(-1e-30f, 255), 0x8);
}

// Every grid value keeps its code for every random byte; every value between two grid
// neighbours rounds to one of them, up exactly when r8 reaches the 1/256-quantised threshold.
// add_rz against round-to-nearest in binary64 stepped toward zero: for floats whose exponents
// differ by less than 29 the binary64 sum is exact.
TEST(StochasticRounding, AddTowardZeroTruncatesTheExactSum) {
  std::mt19937 rng(std::random_device{}());
  auto rz_of_exact = [](double d) {
    float f = static_cast<float>(d);  // round to nearest
    if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    return f;
  };
  for (int i = 0; i < 1000000; ++i) {
    const float a = float_of(rng());
    if (!std::isfinite(a) || a == 0.0f) continue;  // ilogb(0) is INT_MIN: b's exponent would overflow
    const float b = std::ldexp(1.0f + float(rng() % (1u << 23)) / float(1u << 23), std::ilogb(a) - int(rng() % 28)) *
                    (rng() & 1 ? -1.0f : 1.0f);
    if (!std::isfinite(b) || !std::isfinite(a + b)) continue;
    ASSERT_EQ(bits_of(add_rz(a, b)), bits_of(rz_of_exact(double(a) + double(b)))) << a << " + " << b;
  }
  EXPECT_EQ(add_rz(FLT_MAX, FLT_MAX), FLT_MAX);
  EXPECT_EQ(add_rz(-FLT_MAX, -FLT_MAX), -FLT_MAX);
  EXPECT_EQ(bits_of(add_rz(1.0f, 0x1p-30f)), bits_of(1.0f));
  EXPECT_EQ(bits_of(add_rz(-1.0f, -0x1p-30f)), bits_of(-1.0f));
  EXPECT_EQ(bits_of(add_rz(1.0f, -0x1p-30f)), bits_of(std::nextafter(1.0f, 0.0f)));
}

// The kernels' arithmetic SR (sr_e2m1_value_over_64, scaled back by 64) equals sr_e2m1's code's
// value for every random byte on a grid of y around every E2M1 step and threshold (k / 1024 for
// |y| up to 8 and their neighbours), and on random y; all 2^32 y for two bytes in the exhaustive test.
// A negative NaN, which kernels never pass, keeps its sign: -6.
void expect_arithmetic_value_is_the_element_functions(float y, unsigned r) {
  const unsigned l = r % 4;  // the byte of a word that also holds other bytes
  const std::uint32_t word = (0xA55AC33Cu & ~(0xFFu << (8 * l))) | (r << (8 * l));
  const float got = mul_rn(sr_e2m1_value_over_64(y, word, l), 64.0f);
  const float want = is_nan(y) && sign_bit(y) ? -6.0f : e2m1_decode(sr_e2m1(y, std::uint8_t(r)));
  ASSERT_EQ(bits_of(got), bits_of(want)) << "y=0x" << std::hex << bits_of(y) << " r8=" << std::dec << r;
}

TEST(StochasticRounding, ArithmeticValueEqualsTheElementFunction) {
  const auto expect_same = expect_arithmetic_value_is_the_element_functions;
  for (unsigned r = 0; r < 256; ++r)
    for (int k = 0; k <= 8 * 1024; ++k)
      for (const float sign : {1.0f, -1.0f}) {
        const float y = sign * float(k) / 1024.0f;
        for (const float v : {y, std::nextafter(y, INFINITY), std::nextafter(y, -INFINITY)}) expect_same(v, r);
      }
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 2000000; ++i) expect_same(float_of(rng()), rng() & 0xFF);
  for (unsigned r = 0; r < 256; ++r)
    for (const float y : {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 6.0f, -6.0f, 7.99f, 1e30f, -1e-30f}) expect_same(y, r);
}

// Where y is below 0.25, §3.18.1's fma rounds t = y + r8/512 to t's binade, which can lift it to
// the threshold 0.5 from up to half its last place below: for every random byte, the 8 floats on
// either side of 0.5 - r8/512 (and of every other threshold k * step - r8 * step/256), in every
// binade they reach down to (y = 0.25 - 2^-26 with r8 = 128 is such a tie, rounded up).
TEST(StochasticRounding, ArithmeticValueEqualsTheElementFunctionNextToEveryThreshold) {
  const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (unsigned r = 0; r < 256; ++r)
    for (int g = 1; g < 8; ++g) {
      const float step = grid[g] - grid[g - 1];
      float y = grid[g] - float(r) * step / 256.0f;  // exact
      for (int k = 0; k < 8; ++k) y = std::nextafter(y, 0.0f);
      for (int k = 0; k <= 16; ++k, y = std::nextafter(y, INFINITY)) {
        expect_arithmetic_value_is_the_element_functions(y, r);
        expect_arithmetic_value_is_the_element_functions(-y, r);
      }
    }
}

TEST(StochasticRounding, GridValuesNeverMoveAndOthersRoundToANeighbour) {
  const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int g = 0; g < 8; ++g)
    for (int r = 0; r < 256; ++r) {
      EXPECT_EQ(sr_e2m1(grid[g], std::uint8_t(r)), g);
      EXPECT_EQ(sr_e2m1(-grid[g], std::uint8_t(r)), g | 8);
    }
  for (int g = 0; g < 7; ++g) {
    const float step = grid[g + 1] - grid[g];
    for (int k = 1; k < 256; ++k) {  // y = lower + step * k/256 (exact): up iff r8 >= 256 - k
      const float y = grid[g] + step * float(k) / 256.0f;
      EXPECT_EQ(sr_e2m1(y, std::uint8_t(255 - k)), g) << y;
      EXPECT_EQ(sr_e2m1(y, std::uint8_t(256 - k)), g + 1) << y;
    }
  }
}

// x built so that every scaled value y is on the E2M1 grid (te, global amax 2688: S = 1, and each
// block holds +-6 * 2^e, so sf = 2^e and y = x * 2^-e exactly), with some elements nudged one ulp
// towards zero (off the grid). SR leaves every on-grid code equal to RN's for any seed and offset,
// its scales equal RN's, and a second seed changes only nudged elements' codes.
RC_GTEST_PROP(StochasticRoundingProperties, OnGridCodesAndScalesAreRoundToNearests, ()) {
  const std::size_t M = 16 * *rc::gen::inRange<std::size_t>(1, 4), K = 16 * *rc::gen::inRange<std::size_t>(1, 4);
  const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  FloatMatrix x = xt::zeros<float>({M, K});
  xt::xtensor<bool, 2> nudged = xt::zeros<bool>({M, K});
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t j = 0; j < K / 16; ++j) {
      const int e = *rc::gen::inRange(-6, 7);
      for (std::size_t i = 0; i < 16; ++i) {
        const int code = i == 0 ? *rc::gen::element(7, 15) : *rc::gen::inRange(0, 16);
        float v = std::ldexp(code & 8 ? -grid[code & 7] : grid[code & 7], e);
        if (i != 0 && v != 0.0f && *rc::gen::inRange(0, 4) == 0) {
          v = std::nextafter(v, 0.0f);
          nudged(r, 16 * j + i) = true;
        }
        x(r, 16 * j + i) = v;
      }
    }
  QuantizeOptions rn;
  rn.profile = find_profile("te")->knobs;
  rn.amax = 2688.0f;
  QuantizeOptions sr = rn, sr2 = rn;
  sr.stochastic = StochasticRounding{*rc::gen::arbitrary<std::uint64_t>(), *rc::gen::arbitrary<std::uint64_t>()};
  sr2.stochastic = StochasticRounding{sr.stochastic->seed + 1, sr.stochastic->offset};
  const Quantization a = quantize(x, rn), b = quantize(x, sr), c = quantize(x, sr2);
  RC_ASSERT(a.rowwise->scale == b.rowwise->scale);
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t k = 0; k < K; ++k) {
      if (nudged(r, k)) continue;
      const auto code = [&](const Quantization& q) { return nibble_at(q.rowwise->data(r, k / 2), int(k % 2)); };
      RC_ASSERT(code(b) == code(a));
      RC_ASSERT(code(c) == code(a));
    }
}

// The mean of SR over many seeds approaches the value. For y = lower + step*k/256 + d (0 <= d <
// step/256), P(up) = (k + [d > 0 and the fma rounds past the threshold]) / 256, so E[SR] is within
// step/256 of y. Over n = 4096 seeds the sample mean of a Bernoulli(p) deviates from p by more
// than 6*sqrt(p(1-p)/n) <= 6*0.5/64 = 0.047 steps with probability below 1e-8; the bound tested
// is 0.047 + 1/256 steps. The seeds are fixed, so the test is deterministic.
TEST(StochasticRounding, MeanOverSeedsApproachesTheValue) {
  const float values[] = {0.3f, 0.74f, 1.2f, 2.7f, 3.9f, 5.5f, -0.3f, -4.1f, 0.01f, 1.0f};
  constexpr int kSeeds = 4096;
  for (const float y : values) {
    double sum = 0;
    for (int s = 0; s < kSeeds; ++s)
      sum += e2m1_decode(sr_e2m1(y, sr_byte(sr_draw(std::uint64_t(s), 0, SrDirection::kRowwise, 0), 3)));
    const double mean = sum / kSeeds, step = e2m1_step(std::fabs(y) - 1e-6f);
    EXPECT_LE(std::fabs(mean - y), (0.047 + 1.0 / 256) * step) << "y = " << y << ", mean " << mean;
  }
}

// The generators' sr-thresholds recipe: below each block's amax 6 * 2^e, every element is
// (lower + step * k/256) * 2^e for k in 1..255, or one ulp from it (block 0 holds the tensor amax).
TEST(SrThresholdsRecipe, EveryElementIsOnAThresholdOrOneUlpFromIt) {
  cases::Recipe rec;
  rec.dist = cases::Distribution::kSrThresholds;
  rec.seed = std::random_device{}();
  rec.M = 32;
  rec.K = 48;
  const FloatMatrix x = cases::generate_values(rec);
  const float lowers[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f};
  std::size_t nudged = 0, on_threshold = 0;
  for (std::size_t r = 0; r < 32; ++r)
    for (std::size_t c0 = r == 0 ? 16 : 0; c0 < 48; c0 += 16) {
      float A = 0.0f;
      for (std::size_t c = c0; c < c0 + 16; ++c) A = std::max(A, std::fabs(x(r, c)));
      const float unit = A / 6.0f;  // 2^e, exact
      for (std::size_t c = c0; c < c0 + 16; ++c) {
        const float a = std::fabs(x(r, c)) / unit;
        if (a == 6.0f) continue;
        bool found = false;
        for (const float lower : lowers)
          for (int k = 1; k < 256 && !found; ++k) {
            const float t = lower + e2m1_step(lower) * float(k) / 256.0f;
            if (a == t)
              found = true, ++on_threshold;
            else if (a == std::nextafter(t, 0.0f) || a == std::nextafter(t, INFINITY))
              found = true, ++nudged;
          }
        EXPECT_TRUE(found) << "x(" << r << ", " << c << ") = " << x(r, c) << " (seed " << rec.seed << ")";
      }
    }
  EXPECT_GT(nudged, 0u);
  EXPECT_GT(on_threshold, 0u);
}

}  // namespace
}  // namespace nvfp4
