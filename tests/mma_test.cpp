// The modelled MMA instruction (NUMERICS.md §3.20.6) on the worked examples of §6.22: each
// expected value derived by hand from the model's rules (and printed by MMA-Sim 2.1.1's
// TCGen05MMABlockScale.dpa for the same inputs), then the GEMM's chain along K.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/arith.h"
#include "reference/e2m1.h"
#include "reference/gemm.h"
#include "reference/layout.h"
#include "reference/mma.h"
#include "tests/support/gemm_cases.h"

namespace nvfp4 {
namespace {

// One chunk of 64 elements: 2·value per element (the values are E2M1 values), four scale bytes.
struct Chunk {
  std::array<std::int8_t, 64> a{}, b{};
  std::array<std::uint8_t, 4> sa{0x38, 0x38, 0x38, 0x38}, sb{0x38, 0x38, 0x38, 0x38};  // 1.0
  void set(int k, float va, float vb) {
    a[std::size_t(k)] = std::int8_t(2.0f * va);
    b[std::size_t(k)] = std::int8_t(2.0f * vb);
  }
};

std::uint32_t fdpa(GemmAccumulation mode, const Chunk& x, float c, int groups = 4) {
  return bits_of(mma_fused_dot_add(mma_model(mode), c, x.a.data(), x.b.data(), x.sa.data(), x.sb.data(), groups));
}

constexpr GemmAccumulation kModes[] = {GemmAccumulation::MMA_SM100, GemmAccumulation::MMA_SM120};

TEST(MmaModel, TableNamesEveryModeOnce) {
  ASSERT_EQ(mma_models().size(), 2u);
  for (const MmaModel& m : mma_models()) {
    EXPECT_EQ(accumulation_of(m.name), m.mode);
    EXPECT_EQ(accumulation_name(m.mode), m.name);
    EXPECT_EQ(m.chunk, 64);
    EXPECT_EQ(m.fraction_bits, 35);
    EXPECT_EQ(m.zero_exponent, -139);
  }
  EXPECT_EQ(accumulation_of("exact"), GemmAccumulation::EXACT);
  EXPECT_FALSE(accumulation_of("mma-sm90").has_value());
  EXPECT_THROW(mma_model(GemmAccumulation::EXACT), std::logic_error);
}

// 448·448 = 200704 sets the largest exponent to 16, so the adder keeps c only down to 2^-19:
// c = -2^-30 is truncated away (rounding the exact sum toward zero would give 0x4843FFFF).
TEST(MmaModel, TermsBelowTheFractionBitsAreTruncated) {
  for (GemmAccumulation mode : kModes) {
    Chunk x;
    x.set(0, 1.0f, 1.0f);
    x.sa[0] = x.sb[0] = 0x7E;  // 448
    EXPECT_EQ(fdpa(mode, x, -std::ldexp(1.0f, -30)), 0x48440000u);
    EXPECT_EQ(fdpa(mode, x, 0.0f), 0x48440000u);
  }
}

// Group 0's products cancel (1 - 1 = 0) but are not all zero, so its exponent (16) still sets the
// alignment and group 1's 2^-20 falls below it; with group 0's codes zero it takes e_zero instead.
TEST(MmaModel, ACancelledGroupKeepsItsExponentAnAllZeroGroupDoesNot) {
  for (GemmAccumulation mode : kModes) {
    Chunk x;
    x.set(0, 1.0f, 1.0f);
    x.set(1, 1.0f, -1.0f);
    x.set(16, 0.5f, 0.5f);
    x.sa = x.sb = {0x7E, 0x01, 0x38, 0x38};  // 448, 2^-9
    EXPECT_EQ(fdpa(mode, x, 0.0f), 0x00000000u);
    x.set(0, 0.0f, 1.0f);
    x.set(1, 0.0f, -1.0f);
    EXPECT_EQ(fdpa(mode, x, 0.0f), 0x35800000u);  // 2^-20
    x.sa[0] = 0x00;                               // a zero scale is a zero term too
    x.set(0, 1.0f, 1.0f);
    x.set(1, 1.0f, -1.0f);
    EXPECT_EQ(fdpa(mode, x, 0.0f), 0x35800000u);
  }
}

// 2^24 + 1.5·2 = 2^24 + 3 rounds toward zero to 2^24 + 2 (to nearest it would be 2^24 + 4).
TEST(MmaModel, TheSumIsRoundedTowardZero) {
  for (GemmAccumulation mode : kModes) {
    Chunk x;
    x.set(0, 1.5f, 2.0f);
    EXPECT_EQ(fdpa(mode, x, 16777216.0f), 0x4B800001u);
    x.set(0, -1.5f, 2.0f);
    EXPECT_EQ(fdpa(mode, x, -16777216.0f), 0xCB800001u);
  }
}

TEST(MmaModel, SpecialValues) {
  for (GemmAccumulation mode : kModes) {
    Chunk x;
    x.set(0, 1.5f, 2.0f);
    Chunk nan_b = x;
    nan_b.sb[3] = 0xFF;  // NaN in a group whose products are all zero still poisons the sum
    EXPECT_EQ(fdpa(mode, nan_b, 1.0f), 0x7FFFFFFFu);
    nan_b.sb[3] = 0x7F;
    EXPECT_EQ(fdpa(mode, nan_b, 1.0f), 0x7FFFFFFFu);
    EXPECT_EQ(fdpa(mode, x, std::numeric_limits<float>::quiet_NaN()), 0x7FFFFFFFu);
    EXPECT_EQ(fdpa(mode, x, INFINITY), 0x7F800000u);
    EXPECT_EQ(fdpa(mode, x, -INFINITY), 0xFF800000u);
    Chunk negative = x;
    negative.sa = {0xB8, 0xB8, 0xB8, 0xB8};  // -1.0 as E4M3, read as UE4M3 1.0
    EXPECT_EQ(fdpa(mode, negative, 0.0f), 0x40400000u);
    const Chunk zero;
    EXPECT_EQ(fdpa(mode, zero, -0.0f), 0x00000000u);                   // a zero sum is +0.0
    EXPECT_EQ(fdpa(mode, zero, std::ldexp(1.0f, -140)), 0x00000200u);  // a subnormal c passes
    x.set(0, -1.5f, 2.0f);
    EXPECT_EQ(fdpa(mode, x, 3.0f), 0x00000000u);  // exact cancellation: +0.0
  }
}

TEST(MmaModel, RejectsAGroupCountOutsideTheChunk) {
  const Chunk x;
  EXPECT_THROW(fdpa(GemmAccumulation::MMA_SM100, x, 0.0f, 0), std::invalid_argument);
  EXPECT_THROW(fdpa(GemmAccumulation::MMA_SM100, x, 0.0f, 5), std::invalid_argument);
}

// One row of an operand from E2M1 codes, all scales 1.0 except those given.
GemmOperand row_operand(const std::vector<std::uint8_t>& codes, std::vector<std::uint8_t> scales) {
  scales.resize(codes.size() / 16, 0x38);
  return test_support::operand_of_codes({codes}, {scales});
}

// The chain: K = 80 is one whole chunk and one of a single block. Chunk 0 gives 2^24 (block 0:
// sixteen products 4·4 at scales 256 and 256), chunk 1 adds 1.5·2 = 3: 2^24 + 3 rounds toward
// zero to 2^24 + 2, where EXACT gives RN(2^24 + 3) = 2^24 + 4.
TEST(MmaGemm, ChainsOneInstructionPerChunkInIncreasingK) {
  std::vector<std::uint8_t> a(80, 0x0), b(80, 0x0);
  for (std::size_t i = 0; i < 16; ++i) a[i] = b[i] = 0x6;                      // 4
  a[64] = 0x3;                                                                 // 1.5
  b[64] = 0x4;                                                                 // 2
  const GemmOperand oa = row_operand(a, {0x78}), ob = row_operand(b, {0x78});  // 256
  GemmOptions o;
  o.alpha = 1.0f;
  o.accumulation = GemmAccumulation::MMA_SM100;
  EXPECT_EQ(bits_of(gemm(oa, ob, o)(0, 0)), 0x4B800001u);
  o.accumulation = GemmAccumulation::MMA_SM120;
  EXPECT_EQ(bits_of(gemm(oa, ob, o)(0, 0)), 0x4B800001u);
  o.accumulation = GemmAccumulation::EXACT;
  EXPECT_EQ(bits_of(gemm(oa, ob, o)(0, 0)), 0x4B800002u);
}

// The epilogue: RN(α·acc), then fma32(β, C, ·): one rounding for β·C + RN(α·acc).
TEST(MmaGemm, EpilogueIsRnOfAlphaTimesAccThenOneFma) {
  std::vector<std::uint8_t> a(16, 0x0), b(16, 0x0);
  a[0] = 0x3;  // 1.5
  b[0] = 0x3;  // 1.5: acc = 2.25
  const GemmOperand oa = row_operand(a, {}), ob = row_operand(b, {});
  FloatMatrix c = {{1.0f}};
  GemmOptions o;
  o.accumulation = GemmAccumulation::MMA_SM100;
  o.alpha = float_of(0x3F800001u);  // 1 + 2^-23
  o.beta = float_of(0x3F800001u);
  o.c = &c;
  const float t = mul_rn(*o.alpha, 2.25f);
  EXPECT_EQ(bits_of(gemm(oa, ob, o)(0, 0)), bits_of(fma_rn(*o.beta, 1.0f, t)));
  o.alpha = -1.0f;
  o.beta = std::nullopt;
  o.c = nullptr;
  std::vector<std::uint8_t> z(16, 0x0);
  EXPECT_EQ(bits_of(gemm(row_operand(z, {}), ob, o)(0, 0)), 0x80000000u);  // -1 · (+0): IEEE, -0.0
}

}  // namespace
}  // namespace nvfp4
