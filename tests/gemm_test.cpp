// The EXACT GEMM oracle (docs/NUMERICS.md §3.20): the α formula's worked values, the one rounding
// of the exact result (ties, cancellation, subnormal and overflowing results, special values),
// the row-scaled post-scale, and agreement with binary32 accumulation wherever that is exact.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "cases/seeds/seed_corpus.h"
#include "io/tensor_convert.h"
#include "reference/e2m1.h"
#include "reference/e4m3.h"
#include "reference/error.h"
#include "reference/exact_round.h"
#include "reference/gemm.h"
#include "reference/layout.h"
#include "tests/support/gemm_cases.h"

namespace nvfp4 {
namespace {

// 16·blocks codes: `block_codes[j]` repeated over block j.
std::vector<std::uint8_t> codes_of(std::initializer_list<std::vector<std::uint8_t>> blocks) {
  std::vector<std::uint8_t> v;
  for (const auto& b : blocks) {
    std::vector<std::uint8_t> block(16, 0);
    std::copy(b.begin(), b.end(), block.begin());
    v.insert(v.end(), block.begin(), block.end());
  }
  return v;
}

std::uint32_t single(const GemmOperand& a, const GemmOperand& b, GemmOptions o = {}) { return bits_of(gemm(a, b, o)(0, 0)); }

const std::vector<std::uint8_t> kSixes(16, 0x6), kMinusSixes(16, 0xE);

TEST(GemmAlpha, WorkedValuesOfSection6_21) {
  EXPECT_EQ(bits_of(gemm_alpha(1.0f, 2688.0f, 2688.0f)), 0x3F800000u);
  EXPECT_EQ(bits_of(gemm_alpha(1.0f, 1.0f, 1.0f)), 0x34149B93u);
  EXPECT_EQ(bits_of(gemm_alpha(1.0f, 6.0f, 448.0f)), 0x39C30C31u);
}

TEST(GemmExact, CancellationAcrossBlocksGivesTheExactOneWhereBinary32AccumulationGivesZero) {
  const GemmOperand a = test_support::operand_of_codes({codes_of({kSixes, {0x2}, kSixes})}, {{0x78, 0x38, 0x78}});
  const GemmOperand b = test_support::operand_of_codes({codes_of({kSixes, {0x2}, kMinusSixes})}, {{0x78, 0x38, 0x78}});
  EXPECT_EQ(single(a, b), 0x3F800000u);
  // The order-dependent binary32 sum of the three exact block values, in block order: 0.
  const float blocks[] = {16777216.0f, 1.0f, -16777216.0f};
  float sequential = 0.0f;
  for (float v : blocks) sequential = add_rn(sequential, v);
  EXPECT_EQ(bits_of(sequential), 0u);
}

TEST(GemmExact, TiesAtBinary32RoundToEven) {
  const std::vector<std::uint8_t> one = {0x2}, three = {0x2, 0x2, 0x2};
  const GemmOperand big_one = test_support::operand_of_codes({codes_of({kSixes, one})}, {{0x78, 0x38}});
  const GemmOperand big_three = test_support::operand_of_codes({codes_of({kSixes, three})}, {{0x78, 0x38}});
  EXPECT_EQ(gemm(big_one, big_one, {})(0, 0), 16777216.0f);      // 2^24 + 1 -> 2^24
  EXPECT_EQ(gemm(big_three, big_three, {})(0, 0), 16777220.0f);  // 2^24 + 3 -> 2^24 + 4
}

TEST(GemmExact, TieAtBf16AfterAnExactBinary32Result) {
  // S = 1 + 2^-8: exact in binary32, halfway between BF16 1.0 and 1 + 2^-7.
  const GemmOperand x = test_support::operand_of_codes({codes_of({{0x2}, {0x1}})}, {{0x38, 0x20}});
  EXPECT_EQ(gemm(x, x, {})(0, 0), 1.0f + 0x1p-8f);
  GemmOptions o;
  o.output = GemmOutput::BF16;
  EXPECT_EQ(gemm(x, x, o)(0, 0), 1.0f);
  o.output = GemmOutput::F16;  // F16 holds 1 + 2^-8 exactly
  EXPECT_EQ(gemm(x, x, o)(0, 0), 1.0f + 0x1p-8f);
}

TEST(GemmExact, SubnormalAndOverflowingResults) {
  const GemmOperand one_and_half = test_support::operand_of_codes({codes_of({{0x3}})}, {{0x38}}),
                    one = test_support::operand_of_codes({codes_of({{0x2}})}, {{0x38}});
  GemmOptions o;
  o.alpha = float_of(0x00000001u);  // 2^-149 · 1.5: a tie between 2^-149 and 2^-148, to even
  EXPECT_EQ(single(one_and_half, one, o), 0x00000002u);
  o.alpha = float_of(0x7F7FFFFFu);
  const GemmOperand big = test_support::operand_of_codes({codes_of({std::vector<std::uint8_t>(16, 0x7)})}, {{0x7E}});
  EXPECT_EQ(single(big, big, o), 0x7F800000u);
  o.alpha = -float_of(0x7F7FFFFFu);
  EXPECT_EQ(single(big, big, o), 0xFF800000u);
  // A result below half the smallest subnormal underflows to a zero of its sign.
  o.alpha = float_of(0x00000001u);
  const GemmOperand tiny = test_support::operand_of_codes({codes_of({{0x1}})}, {{0x01}}),
                    minus_tiny = test_support::operand_of_codes({codes_of({{0x9}})}, {{0x01}});
  EXPECT_EQ(single(tiny, minus_tiny, o), 0x80000000u);
}

TEST(GemmExact, BetaTimesCAddsExactlyBeforeTheOneRounding) {
  const GemmOperand a = test_support::operand_of_codes({codes_of({kSixes, {0x2}, kSixes})}, {{0x78, 0x38, 0x78}});
  const GemmOperand b = test_support::operand_of_codes({codes_of({kSixes, {0x2}, kMinusSixes})}, {{0x78, 0x38, 0x78}});
  FloatMatrix c = {{1.0f}};
  GemmOptions o;
  o.beta = -1.0f;
  o.c = &c;
  EXPECT_EQ(single(a, b, o), 0x00000000u) << "exact cancellation is +0.0";
  c(0, 0) = 1.0f + 0x1p-23f;
  EXPECT_EQ(gemm(a, b, o)(0, 0), -0x1p-23f);
  // α·S = 2^24 exactly and β·C = 1 + 2^-30 (a term far below the result's last bit): only the
  // exact sum 2^24 + 1 + 2^-30, just above the tie, rounds up.
  const GemmOperand big = test_support::operand_of_codes({codes_of({kSixes})}, {{0x78}});
  c(0, 0) = 1.0f + 0x1p-23f;
  o.beta = 1.0f;
  EXPECT_EQ(gemm(big, big, o)(0, 0), 16777218.0f);
  c(0, 0) = 1.0f;
  EXPECT_EQ(gemm(big, big, o)(0, 0), 16777216.0f);
  // β = 0: C is not read, even when it holds NaN.
  c(0, 0) = canonical_nan();
  o.beta = 0.0f;
  EXPECT_EQ(gemm(big, big, o)(0, 0), 16777216.0f);
  o.beta = 1.0f;
  EXPECT_TRUE(is_nan(gemm(big, big, o)(0, 0)));
}

TEST(GemmExact, SpecialValues) {
  const GemmOperand nan_scale = test_support::operand_of_codes({codes_of({{0x2}, {0x2}})}, {{0x38, 0x7F}});
  const GemmOperand one = test_support::operand_of_codes({codes_of({{0x2}, {0x2}})}, {{0x38, 0x38}});
  EXPECT_EQ(single(nan_scale, one), bits_of(canonical_nan()));
  EXPECT_EQ(single(one, nan_scale), bits_of(canonical_nan()));
  const GemmOperand zero = test_support::operand_of_codes({codes_of({{0x0}})}, {{0x38}}),
                    unit = test_support::operand_of_codes({codes_of({{0x2}})}, {{0x38}});
  GemmOptions o;
  o.alpha = INFINITY;
  EXPECT_EQ(single(zero, unit, o), bits_of(canonical_nan())) << "inf · 0";
  EXPECT_EQ(single(unit, unit, o), 0x7F800000u);
  o.alpha = 0.0f;
  EXPECT_EQ(single(unit, unit, o), 0x00000000u);
  const GemmOperand minus_zero = test_support::operand_of_codes({codes_of({{0x8}})}, {{0x38}});
  o.alpha.reset();
  EXPECT_EQ(single(minus_zero, unit, o), 0x00000000u) << "an exact zero is +0.0, -0.0 codes included";
}

TEST(GemmExact, ErrorsNameTheOperandAndTheRule) {
  const GemmOperand a = test_support::operand_of_codes({codes_of({{0x2}})}, {{0x38}}),
                    b = test_support::operand_of_codes({codes_of({{0x2}, {0x2}})}, {{0x38, 0x38}});
  EXPECT_THROW(
      {
        try {
          gemm(a, b, {});
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::E_GEMM_K);
          EXPECT_STREQ(e.what(), "gemm: E_GEMM_K: A has K=16 and B has K=32");
          throw;
        }
      },
      Error);
  GemmOperand bad = a;
  bad.scale = xt::zeros<std::uint8_t>({std::size_t(64), std::size_t(4)});
  EXPECT_THROW(gemm(bad, a, {}), Error);
  bad = a;
  bad.amax = FloatVector({1.0f, 2.0f});
  EXPECT_THROW(gemm(bad, a, {}), Error);
}

// Random operands whose binary32 accumulation never rounds (checked with TwoSum): there, the
// block-ordered float sum is the exact sum, and EXACT must equal it.
TEST(GemmExact, EqualsBinary32AccumulationWhereverEveryPartialSumIsExact) {
  std::mt19937 rng(20261125);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t blocks = 1 + rng() % 6;
    std::vector<std::uint8_t> ca(16 * blocks), cb(16 * blocks), sa(blocks), sb(blocks);
    for (auto& v : ca) v = std::uint8_t(rng() % 16);
    for (auto& v : cb) v = std::uint8_t(rng() % 16);
    for (std::size_t j = 0; j < blocks; ++j) {
      sa[j] = std::uint8_t(0x20 + rng() % 0x30);
      sb[j] = std::uint8_t(0x20 + rng() % 0x30);
    }
    float sum = 0.0f;
    bool exact = true;
    for (std::size_t j = 0; j < blocks; ++j) {
      float block = 0.0f;
      for (int i = 0; i < 16; ++i)
        block = add_rn(block, mul_rn(e2m1_decode(ca[16 * j + i]), e2m1_decode(cb[16 * j + i])));  // exact: few bits
      const float term = mul_rn(mul_rn(block, e4m3_decode(sa[j])), e4m3_decode(sb[j]));
      const float s = add_rn(sum, term);
      const float bb = add_rn(s, -sum);  // TwoSum: the rounding error of sum + term
      const float err = add_rn(add_rn(sum, -add_rn(s, -bb)), add_rn(term, -bb));
      exact = exact && err == 0.0f;
      sum = s;
    }
    if (!exact) continue;
    ++checked;
    const GemmOperand a = test_support::operand_of_codes({ca}, {sa}), b = test_support::operand_of_codes({cb}, {sb});
    EXPECT_EQ(bits_of(gemm(a, b, {})(0, 0)), bits_of(sum == 0.0f ? 0.0f : sum)) << "trial " << trial;
  }
  EXPECT_GT(checked, 100);
}

TEST(GemmRowScaled, PostScaleIsFoldedForAScalarSideAndTwoStepsForTwoVectors) {
  // D0 of §6.21's post-scale example is not a GEMM result; check the rule on a real D0 instead.
  const GemmOperand x = test_support::operand_of_codes({codes_of({{0x3, 0x5}}), codes_of({{0x7, 0x1}})}, {{0x41}, {0x2B}});
  GemmOptions plain;
  plain.alpha = gemm_alpha(1.0f, 1.0f, 1.0f);
  const FloatMatrix d0 = gemm(x, x, plain);
  GemmOptions rs;
  rs.row_scaled = true;
  GemmOperand a = x, b = x;
  a.amax = FloatVector({3.25f, 7.1f});
  b.amax = FloatVector({5.5f});
  FloatMatrix d = gemm(a, b, rs);
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 2; ++n) EXPECT_EQ(d(m, n), mul_rn(d0(m, n), mul_rn(a.amax(m), 5.5f)));
  b.amax = FloatVector({0.3f, 11.0f});
  d = gemm(a, b, rs);
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 2; ++n) EXPECT_EQ(d(m, n), mul_rn(mul_rn(d0(m, n), a.amax(m)), b.amax(n)));
  // §6.21's numbers: folded and two-step differ in the last bit.
  const float D0 = float_of(0x3FB798DDu), r = float_of(0x40C20765u), c = float_of(0x40CED8B1u);
  EXPECT_EQ(bits_of(mul_rn(D0, mul_rn(r, c))), 0x4260DE93u);
  EXPECT_EQ(bits_of(mul_rn(mul_rn(D0, r), c)), 0x4260DE92u);
}

TEST(GemmRowScaled, RejectsAlphaBetaAndAccumulateOutsideItsPath) {
  const GemmOperand x = test_support::operand_of_codes({codes_of({{0x2}})}, {{0x38}});
  GemmOptions o;
  o.row_scaled = true;
  o.alpha = 1.0f;
  EXPECT_THROW(gemm(x, x, o), Error);
  o = {};
  o.accumulate = true;
  EXPECT_THROW(gemm(x, x, o), Error);
}

TEST(GemmExactRound, RoundsWideIntegersOnceWithTiesToEven) {
  // 2^100 + 2^76 is halfway between 2^100 and 2^100 + 2^77: to even (2^100).
  Dyadic v{(BigInt(1) << 100) + (BigInt(1) << 76), 0};
  EXPECT_EQ(round_to_binary32(v), 0x1p100f);
  v.n += 1;  // just above the tie
  EXPECT_EQ(round_to_binary32(v), 0x1p100f + 0x1p77f);
  EXPECT_EQ(bits_of(round_to_binary32({BigInt(1), 128})), 0x7F800000u);
  EXPECT_EQ(bits_of(round_to_binary32({BigInt(-3), -151})), 0x80000001u);  // -0.75·2^-149 -> -2^-149
  EXPECT_EQ(bits_of(round_to_binary32({BigInt(1), -151})), 0x00000000u);   // 0.25·2^-149 -> +0
}

// The 128-bit instance of the rounding (the GEMM's usual α·T) gives the cpp_int instance's bits:
// random widths and exponents across the normal, subnormal, underflow and overflow ranges, and
// values on, just below and just above every rounding tie.
TEST(GemmExactRound, The128BitRoundingEqualsTheCppIntRounding) {
  const std::uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 200000; ++i) {
    const int width = 1 + int(rng() % 126);
    __int128 n = (__int128(rng()) << 64 | rng()) & ((__int128(1) << width) - 1);
    n |= __int128(1) << (width - 1);
    const int exponent = int(rng() % 480) - 300;
    if (width > 25 && rng() % 2) {  // a tie at the 24-bit boundary, or one unit beside it
      const int below = width - 25;
      n = (n >> (below + 1) << (below + 1)) | (__int128(1) << below);
      n += __int128(int(rng() % 3) - 1);
    }
    if (rng() % 2) n = -n;
    const float want = round_to_binary32(Dyadic{big_of(n), exponent}), got = round_to_binary32(n, exponent);
    ASSERT_EQ(bits_of(got), bits_of(want)) << "seed " << seed << ", width " << width << ", exponent " << exponent;
  }
}

TEST(GemmCases, TheSeedCorpusHoldsTheSection6_21Example) {
  for (const cases::CaseRecord& r : cases::seed_corpus()) {
    if (r.c.op != "gemm" || r.note.find("§6.21: cancellation") == std::string::npos) continue;
    const cases::TensorMap out = cases::ReferenceBackend().run(r.c);
    EXPECT_EQ(io::to_float_matrix(out.at("d"), "gemm", "d")(0, 0), 1.0f);
    return;
  }
  FAIL() << "no §6.21 seed case";
}

TEST(GemmLimits, AnOutputAboveTwoToThe30ElementsIsRefusedBeforeItIsAllocated) {
  // 2^16 rows each of A and B take 512 KiB; D would take 2^32 binary32 values (16 GiB).
  GemmOperand a;
  a.data = xt::zeros<std::uint8_t>({std::size_t{1} << 16, std::size_t{8}});
  a.scale = xt::zeros<std::uint8_t>({std::size_t{1} << 16, std::size_t{4}});
  a.amax = FloatVector({2688.0f});
  try {
    gemm(a, a, {});
    FAIL() << "a 65536 x 65536 D was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::E_DATA_SHAPE);
    EXPECT_NE(std::string(e.what()).find("2^30"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvfp4
