// Unit tests of the element formats: E2M1 (NUMERICS.md §2.1, §4.2.6, §6.2, §6.3), E4M3 (§2.2, §6.4,
// §6.5) and the bf16/fp16 conversions (§1.1). Expected values come from the specification text or
// from formulas written here independently of reference/ (double arithmetic, nearest-value search).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "reference/e2m1.h"
#include "reference/e4m3.h"
#include "reference/half_float.h"

namespace nvfp4 {
namespace {

// Dense sample of the binary32 patterns: a prime stride, so that the low mantissa bits vary too.
constexpr std::uint64_t kSampleStride = 4093;

template <class F>
void for_each_sampled_pattern(F f) {
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += kSampleStride) f(std::uint32_t(u));
}

// Patterns a stride cannot be relied on to hit: signed zeros, extremes, infinities.
constexpr std::array<std::uint32_t, 10> kEdgePatterns = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x00800000u,
                                                         0x80800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0xFF800000u};

template <class F>
void for_each_sampled_and_edge_pattern(F f) {
  for_each_sampled_pattern(f);
  for (std::uint32_t u : kEdgePatterns) f(u);
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%X", v);
  return buf;
}

// Collects the mismatches of a sweep, so that a broken function reports a count and a few inputs
// rather than a million separate failures.
struct Mismatches {
  std::uint64_t count = 0;
  std::string first;
  void check(std::uint32_t input, std::uint32_t expected, std::uint32_t actual, const char* what = "") {
    if (expected == actual) return;
    if (count++ < 8)
      first += std::string(what) + " input " + hex(input) + ": expected " + hex(expected) + " got " + hex(actual) + "\n";
  }
};

// ---------------------------------------------------------------------------------------------
// E2M1

// §2.1.1 code table, magnitudes of codes 0..7.
constexpr std::array<float, 8> kE2M1Magnitudes = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

constexpr std::array<E2M1Encoder, 7> kAllEncoders = {E2M1Encoder::HW,          E2M1Encoder::TABLE_TE, E2M1Encoder::SEARCHSORTED,
                                                     E2M1Encoder::TORCHAO_INT, E2M1Encoder::MLDTYPES, E2M1Encoder::VALUE_TABLE,
                                                     E2M1Encoder::BF16_TORCH};

const char* encoder_name(E2M1Encoder e) {
  switch (e) {
    case E2M1Encoder::HW:
      return "HW";
    case E2M1Encoder::TABLE_TE:
      return "TABLE_TE";
    case E2M1Encoder::SEARCHSORTED:
      return "SEARCHSORTED";
    case E2M1Encoder::TORCHAO_INT:
      return "TORCHAO_INT";
    case E2M1Encoder::MLDTYPES:
      return "MLDTYPES";
    case E2M1Encoder::VALUE_TABLE:
      return "VALUE_TABLE";
    case E2M1Encoder::BF16_TORCH:
      return "BF16_TORCH";
  }
  return "?";
}

// Independent HW reference for non-NaN v: the nearest grid value, a tie to the even code, and
// saturation to 6 above it (§2.1.2), found by search instead of the bin thresholds under test.
std::uint8_t e2m1_nearest_even(float v) {
  const double a = std::fabs(double(v));
  unsigned best = 7;
  if (a <= 6.0) {
    best = 0;
    for (unsigned m = 1; m < 8; ++m) {
      const double d = std::fabs(a - kE2M1Magnitudes[m]), d_best = std::fabs(a - kE2M1Magnitudes[best]);
      if (d < d_best || (d == d_best && m % 2 == 0)) best = m;
    }
  }
  return std::uint8_t((std::signbit(v) ? 0x8u : 0x0u) | best);
}

// TABLE_TE is defined on inputs pre-clamped to ±6 (§4.2.6, §6.3 "after tclamp ±6").
float clamp6(float v) { return std::isnan(v) ? v : std::min(std::max(v, -6.0f), 6.0f); }

TEST(FormatsE2M1, DecodeMatchesSpecCodeTable) {
  // §2.1.1, including the sign of -0 (code 0x8).
  const std::array<float, 16> table = {+0.0f, 0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                       -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  for (unsigned c = 0; c < 16; ++c) EXPECT_EQ(bits_of(e2m1_decode(std::uint8_t(c))), bits_of(table[c])) << "code " << hex(c);
}

TEST(FormatsE2M1, DecodeByBitsEqualsDecodeOnEveryCode) {
  for (int c = 0; c < 16; ++c)
    EXPECT_EQ(bits_of(e2m1_decode_by_bits(std::uint8_t(c))), bits_of(e2m1_decode(std::uint8_t(c)))) << "code " << hex(c);
}

TEST(FormatsE2M1, HwRoundTripsEveryCode) {
  for (unsigned c = 0; c < 16; ++c) {
    EXPECT_EQ(e2m1_hw(e2m1_decode(std::uint8_t(c))), c) << "code " << hex(c);
    EXPECT_EQ(e2m1_encode(E2M1Encoder::HW, e2m1_decode(std::uint8_t(c))), c) << "code " << hex(c);
  }
}

TEST(FormatsE2M1, OtherEncodersRoundTripEveryCodeExceptDocumentedZeros) {
  // §4.2.6: TABLE_TE, BF16_TORCH and SEARCHSORTED give -0 -> 0x0, VALUE_TABLE maps ±0 to 0x0; the
  // rest keep -0.
  for (E2M1Encoder e : kAllEncoders) {
    const bool negative_zero_to_0 = e == E2M1Encoder::TABLE_TE || e == E2M1Encoder::SEARCHSORTED ||
                                    e == E2M1Encoder::VALUE_TABLE || e == E2M1Encoder::BF16_TORCH;
    for (unsigned c = 0; c < 16; ++c) {
      const unsigned expected = (c == 0x8 && negative_zero_to_0) ? 0x0 : c;
      EXPECT_EQ(e2m1_encode(e, e2m1_decode(std::uint8_t(c))), expected) << encoder_name(e) << " code " << hex(c);
    }
  }
}

TEST(FormatsE2M1, HwMatchesSpecTieAndNeighbourTable) {
  // §6.2, verbatim.
  const std::array<std::pair<std::uint32_t, unsigned>, 20> rows = {{
      {0x3E800000u, 0x0}, {0x3E800001u, 0x1}, {0x3F3FFFFFu, 0x1}, {0x3F400000u, 0x2}, {0x3FA00000u, 0x2},
      {0x3FA00001u, 0x3}, {0x3FDFFFFFu, 0x3}, {0x3FE00000u, 0x4}, {0x40200000u, 0x4}, {0x40200001u, 0x5},
      {0x405FFFFFu, 0x5}, {0x40600000u, 0x6}, {0x40A00000u, 0x6}, {0x40A00001u, 0x7}, {0x40C00000u, 0x7},
      {0x40D00000u, 0x7}, {0x00000001u, 0x0}, {0x80000001u, 0x8}, {0xBE800000u, 0x8}, {0xBE800001u, 0x9},
  }};
  for (const auto& [in, code] : rows) EXPECT_EQ(e2m1_hw(float_of(in)), code) << "input " << hex(in);
}

TEST(FormatsE2M1, HwTiesGoToEvenCodeAndNeighboursToNearerCode) {
  // Every midpoint of adjacent grid values, its float neighbours, both signs.
  for (unsigned m = 0; m < 7; ++m) {
    const float tie = (kE2M1Magnitudes[m] + kE2M1Magnitudes[m + 1]) / 2;  // exact: few significant bits
    const unsigned even = m % 2 == 0 ? m : m + 1;
    const float above = std::nextafter(tie, std::numeric_limits<float>::infinity());
    const float below = std::nextafter(tie, 0.0f);
    for (unsigned sign : {0x0u, 0x8u}) {
      const float s = sign ? -1.0f : 1.0f;
      EXPECT_EQ(e2m1_hw(s * tie), sign | even) << "tie " << s * tie;
      EXPECT_EQ(e2m1_hw(s * above), sign | (m + 1)) << "above tie " << s * tie;
      EXPECT_EQ(e2m1_hw(s * below), sign | m) << "below tie " << s * tie;
    }
  }
}

TEST(FormatsE2M1, HwSaturatesAboveSix) {
  for (std::uint32_t in : {0x40C00001u, 0x40E00000u, 0x4B000000u, 0x7F7FFFFFu, 0x7F800000u}) {
    EXPECT_EQ(e2m1_hw(float_of(in)), 0x7u) << "input " << hex(in);
    EXPECT_EQ(e2m1_hw(float_of(in | 0x80000000u)), 0xFu) << "input " << hex(in | 0x80000000u);
  }
}

TEST(FormatsE2M1, HwMatchesNearestEvenReferenceOnDenseSample) {
  Mismatches mm;
  for_each_sampled_and_edge_pattern([&](std::uint32_t u) {
    const float v = float_of(u);
    if (!std::isnan(v)) mm.check(u, e2m1_nearest_even(v), e2m1_hw(v));
  });
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsE2M1, SpecialValuesPerEncoder) {
  // §6.3 (TABLE_TE applied after the ±6 clamp), plus the VALUE_TABLE column of §4.2.6 where it
  // fixes a byte (±0 -> 0x0, ±inf -> ±6). VALUE_TABLE's NaN byte is not fixed by the spec.
  struct Row {
    std::uint32_t in;
    int hw, table_te, searchsorted, torchao, mldtypes, value_table;  // -1: not specified
  };
  const std::array<Row, 7> rows = {{
      {0x80000000u, 0x8, 0x0, 0x0, 0x8, 0x8, 0x0},  // -0.0
      {0xBA83126Fu, 0x8, 0x8, 0x8, 0x8, 0x8, 0x0},  // -0.001
      {0x7FC00000u, 0x7, 0x0, 0x7, 0x3, 0x8, -1},   // NaN
      {0xFFC00000u, 0x7, 0x0, 0x7, 0xB, 0x0, -1},   // -NaN
      {0x7FFFFFFFu, 0x7, 0x0, 0x7, 0x4, 0x8, -1},   // GPU canonical NaN
      {0x7F800000u, 0x7, 0x7, 0x7, 0x7, 0x7, 0x7},  // +inf
      {0xFF800000u, 0xF, 0xF, 0xF, 0xF, 0xF, 0xF},  // -inf
  }};
  for (const Row& r : rows) {
    const float v = float_of(r.in);
    EXPECT_EQ(e2m1_encode(E2M1Encoder::HW, v), r.hw) << "HW " << hex(r.in);
    EXPECT_EQ(e2m1_encode(E2M1Encoder::TABLE_TE, clamp6(v)), r.table_te) << "TABLE_TE " << hex(r.in);
    EXPECT_EQ(e2m1_encode(E2M1Encoder::SEARCHSORTED, v), r.searchsorted) << "SEARCHSORTED " << hex(r.in);
    EXPECT_EQ(e2m1_encode(E2M1Encoder::TORCHAO_INT, v), r.torchao) << "TORCHAO_INT " << hex(r.in);
    EXPECT_EQ(e2m1_encode(E2M1Encoder::MLDTYPES, v), r.mldtypes) << "MLDTYPES " << hex(r.in);
    if (r.value_table >= 0) {
      EXPECT_EQ(e2m1_encode(E2M1Encoder::VALUE_TABLE, v), r.value_table) << "VALUE_TABLE " << hex(r.in);
    }
  }
}

TEST(FormatsE2M1, EveryNanPatternPerEncoder) {
  // §4.2.6 NaN column for every sign and payload; TORCHAO_INT's garbage follows the spec formula.
  Mismatches mm;
  for (std::uint32_t sign : {0x0u, 0x80000000u}) {
    for (std::uint32_t payload = 1; payload < 0x800000u; ++payload) {
      const std::uint32_t u = sign | 0x7F800000u | payload;
      const float v = float_of(u);
      const std::uint32_t a = u & 0x7FFFFFFFu;
      const std::uint32_t torchao = (((a - 0x3F000000u + 0x1FFFFFu + ((a >> 22) & 1u)) >> 22) & 0xFFu) | ((u >> 31) << 3);
      mm.check(u, 0x7, e2m1_encode(E2M1Encoder::HW, v), "HW");
      mm.check(u, 0x0, e2m1_encode(E2M1Encoder::TABLE_TE, v), "TABLE_TE");
      mm.check(u, 0x7, e2m1_encode(E2M1Encoder::SEARCHSORTED, v), "SEARCHSORTED");
      mm.check(u, torchao, e2m1_encode(E2M1Encoder::TORCHAO_INT, v), "TORCHAO_INT");
      mm.check(u, sign ? 0x0 : 0x8, e2m1_encode(E2M1Encoder::MLDTYPES, v), "MLDTYPES");
      mm.check(u, 0x0, e2m1_encode(E2M1Encoder::BF16_TORCH, v), "BF16_TORCH");
    }
  }
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsE2M1, TinyMagnitudesEncodeToZeroCodesPerEncoder) {
  // (0, 0.25] -> 0x0 for every encoder; [-0.25, 0) -> 0x8, except VALUE_TABLE (value -0 -> 0x0)
  // and BF16_TORCH where BF16 rounds the value to -0.0 (torch.sign(-0.0) is +0.0).
  std::vector<std::uint32_t> tiny = {0x00000001u, 0x00800000u, 0x3A83126Fu, 0x3E7FFFFFu, 0x3E800000u};
  for (std::uint64_t u = 1; u <= 0x3E800000u; u += kSampleStride) tiny.push_back(std::uint32_t(u));
  Mismatches mm;
  for (std::uint32_t u : tiny) {
    for (E2M1Encoder e : kAllEncoders) {
      mm.check(u, 0x0, e2m1_encode(e, float_of(u)), encoder_name(e));
      const std::uint32_t n = u | 0x80000000u;
      const bool to_zero =
          e == E2M1Encoder::VALUE_TABLE || (e == E2M1Encoder::BF16_TORCH && float_to_bf16(float_of(n)) == 0x8000u);
      mm.check(n, to_zero ? 0x0 : 0x8, e2m1_encode(e, float_of(n)), encoder_name(e));
    }
  }
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsE2M1, TorchaoIntEqualsHwForFiniteInputs) {
  Mismatches mm;
  for_each_sampled_and_edge_pattern([&](std::uint32_t u) {
    const float v = float_of(u);
    if (std::isfinite(v)) mm.check(u, e2m1_hw(v), e2m1_encode(E2M1Encoder::TORCHAO_INT, v));
  });
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsE2M1, SearchsortedEqualsHwExceptNegativeZero) {
  Mismatches mm;
  for_each_sampled_and_edge_pattern([&](std::uint32_t u) {
    const float v = float_of(u);
    if (std::isfinite(v)) mm.check(u, u == 0x80000000u ? 0x0 : e2m1_hw(v), e2m1_encode(E2M1Encoder::SEARCHSORTED, v));
  });
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsE2M1, TableTeEqualsHwExceptNegativeZeroAfterClamp) {
  Mismatches mm;
  for_each_sampled_and_edge_pattern([&](std::uint32_t u) {
    const float v = float_of(u);
    if (!std::isnan(v)) mm.check(u, u == 0x80000000u ? 0x0 : e2m1_hw(v), e2m1_encode(E2M1Encoder::TABLE_TE, clamp6(v)));
  });
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsE2M1, MldtypesEqualsHwForNonNanInputs) {
  Mismatches mm;
  for_each_sampled_and_edge_pattern([&](std::uint32_t u) {
    const float v = float_of(u);
    if (!std::isnan(v)) mm.check(u, e2m1_hw(v), e2m1_encode(E2M1Encoder::MLDTYPES, v));
  });
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsE2M1, ValueTableEqualsHwExceptZeroResultsLoseTheSign) {
  Mismatches mm;
  for_each_sampled_and_edge_pattern([&](std::uint32_t u) {
    const float v = float_of(u);
    if (std::isnan(v)) return;
    const std::uint8_t hw = e2m1_hw(v);
    mm.check(u, (hw & 0x7) == 0 ? 0x0 : hw, e2m1_encode(E2M1Encoder::VALUE_TABLE, v));
  });
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsE2M1, PackPutsEvenElementInLowNibble) {
  // §2.1.3: byte = q[2k] | q[2k+1] << 4; unpack low nibble = even, high nibble = odd.
  for (unsigned even = 0; even < 16; ++even) {
    for (unsigned odd = 0; odd < 16; ++odd) {
      const std::uint8_t byte = pack_nibbles(std::uint8_t(even), std::uint8_t(odd));
      EXPECT_EQ(byte, even + 16 * odd) << "even " << even << " odd " << odd;
      EXPECT_EQ(nibble_at(byte, 0), even) << "byte " << hex(byte);
      EXPECT_EQ(nibble_at(byte, 1), odd) << "byte " << hex(byte);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// E4M3

// f8(b) from the §2.2.1 formula in double (exact for every byte); NaN for 0x7F/0xFF.
double e4m3_formula(unsigned b) {
  const int e = (b >> 3) & 0xF, m = b & 0x7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::ldexp(double(m), -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return (b & 0x80) ? -mag : mag;
}

TEST(FormatsE4M3, DecodeMatchesFormulaForAllBytes) {
  for (unsigned b = 0; b < 256; ++b) {
    const double expected = e4m3_formula(b);
    const float got = e4m3_decode(std::uint8_t(b));
    if (std::isnan(expected))
      EXPECT_TRUE(std::isnan(got)) << "byte " << hex(b) << " got " << hex(bits_of(got));
    else
      EXPECT_EQ(bits_of(got), bits_of(float(expected))) << "byte " << hex(b);
  }
}

TEST(FormatsE4M3, DecodeMatchesSpecFrequentlyUsedBytes) {
  // §2.2.1 and §6.5.
  const std::array<std::pair<unsigned, float>, 16> rows = {{
      {0x01, 0.001953125f},
      {0x07, 0.013671875f},
      {0x08, 0.015625f},
      {0x14, 0.046875f},
      {0x38, 1.0f},
      {0x62, 40.0f},
      {0x63, 44.0f},
      {0x64, 48.0f},
      {0x68, 64.0f},
      {0x69, 72.0f},
      {0x6E, 112.0f},
      {0x76, 224.0f},
      {0x78, 256.0f},
      {0x7E, 448.0f},
      {0x80, -0.0f},
      {0x00, 0.0f},
  }};
  for (const auto& [b, v] : rows) EXPECT_EQ(bits_of(e4m3_decode(std::uint8_t(b))), bits_of(v)) << "byte " << hex(b);
  EXPECT_TRUE(std::isnan(e4m3_decode(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_decode(0xFF)));
}

TEST(FormatsE4M3, SatAndTorchRoundTripEveryNonNanByte) {
  for (unsigned b = 0; b < 256; ++b) {
    if ((b & 0x7F) == 0x7F) continue;
    const float v = e4m3_decode(std::uint8_t(b));
    EXPECT_EQ(e4m3sat(v), b) << "byte " << hex(b);
    EXPECT_EQ(e4m3torch(v), b) << "byte " << hex(b);
  }
}

TEST(FormatsE4M3, MidpointsGoToEvenCodeAndNeighboursToNearerCode) {
  // Every pair of adjacent positive codes (0x00..0x7E), both signs, both casts (equal below 464).
  for (unsigned lo = 0; lo < 0x7E; ++lo) {
    const unsigned hi = lo + 1, even = lo % 2 == 0 ? lo : hi;
    const double mid_d = (e4m3_formula(lo) + e4m3_formula(hi)) / 2;
    const float mid = float(mid_d);
    ASSERT_EQ(double(mid), mid_d) << "midpoint not exact in binary32";
    const float above = std::nextafter(mid, std::numeric_limits<float>::infinity());
    const float below = std::nextafter(mid, 0.0f);
    for (unsigned sign : {0x00u, 0x80u}) {
      const float s = sign ? -1.0f : 1.0f;
      for (auto cast : {&e4m3sat, &e4m3torch}) {
        const char* name = cast == &e4m3sat ? "e4m3sat" : "e4m3torch";
        EXPECT_EQ(cast(s * mid), sign | even) << name << " midpoint " << s * mid;
        EXPECT_EQ(cast(s * above), sign | hi) << name << " above midpoint " << s * mid;
        EXPECT_EQ(cast(s * below), sign | lo) << name << " below midpoint " << s * mid;
      }
    }
  }
}

TEST(FormatsE4M3, CastsMatchSpecTable) {
  // §6.4, verbatim.
  struct Row {
    std::uint32_t in;
    unsigned sat, torch;
  };
  const std::array<Row, 21> rows = {{
      {0x43E00000u, 0x7E, 0x7E}, {0x43E40000u, 0x7E, 0x7E}, {0x43E80000u, 0x7E, 0x7E}, {0x43E80001u, 0x7E, 0x7F},
      {0x43F00000u, 0x7E, 0x7F}, {0x7149F2CAu, 0x7E, 0x7F}, {0x7F800000u, 0x7E, 0x7F}, {0xFF800000u, 0xFE, 0xFF},
      {0x7FC00000u, 0x7F, 0x7F}, {0xFFC00000u, 0x7F, 0xFF}, {0x3A800000u, 0x00, 0x00}, {0x3A800001u, 0x01, 0x01},
      {0x3B000000u, 0x01, 0x01}, {0x3B400000u, 0x02, 0x02}, {0x3C800000u, 0x08, 0x08}, {0x80000000u, 0x80, 0x80},
      {0x42280000u, 0x62, 0x62}, {0x42280001u, 0x63, 0x63}, {0x4227FFFFu, 0x62, 0x62}, {0x42380000u, 0x64, 0x64},
      {0x43E00001u, 0x7E, 0x7E},
  }};
  for (const Row& r : rows) {
    EXPECT_EQ(e4m3sat(float_of(r.in)), r.sat) << "e4m3sat " << hex(r.in);
    EXPECT_EQ(e4m3torch(float_of(r.in)), r.torch) << "e4m3torch " << hex(r.in);
  }
}

TEST(FormatsE4M3, TorchDiffersFromSatOnlyForNanSignAboveThresholdAndInf) {
  // §2.2.2/§2.2.3: e4m3sat gives 0x7F for every NaN and sign|0x7E above 464 (inf included), where
  // e4m3torch gives sign|0x7F; everything else is identical.
  Mismatches mm;
  auto check = [&](std::uint32_t u) {
    const float v = float_of(u);
    const unsigned sign = (u >> 24) & 0x80;
    const std::uint8_t sat = e4m3sat(v), torch = e4m3torch(v);
    if (std::isnan(v)) {
      mm.check(u, 0x7F, sat, "e4m3sat");
      mm.check(u, sign | 0x7F, torch, "e4m3torch");
    } else if (std::fabs(v) > 464.0f) {
      mm.check(u, sign | 0x7E, sat, "e4m3sat");
      mm.check(u, sign | 0x7F, torch, "e4m3torch");
    } else {
      mm.check(u, sat, torch, "e4m3torch");
    }
  };
  for_each_sampled_and_edge_pattern(check);
  for (std::uint32_t u : {0x43E80000u, 0x43E80001u, 0x43E7FFFFu, 0x7FC00000u, 0x7FFFFFFFu, 0x7F800001u}) {
    check(u);
    check(u | 0x80000000u);
  }
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

// ---------------------------------------------------------------------------------------------
// bf16 / fp16

// Binary16 value from its fields in double (exact); +inf for the infinity code, NaN for NaNs.
double half_formula(unsigned h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double mag;
  if (e == 31)
    mag = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  else
    mag = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
  return (h & 0x8000) ? -mag : mag;
}

// Bfloat16 value from its fields (8 exponent bits, bias 127, 7 mantissa bits) in double.
double bf16_formula(unsigned h) {
  const int e = (h >> 7) & 0xFF, m = h & 0x7F;
  double mag;
  if (e == 255)
    mag = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  else
    mag = e == 0 ? std::ldexp(double(m), -133) : std::ldexp(1.0 + m / 128.0, e - 127);
  return (h & 0x8000) ? -mag : mag;
}

// Checks widening against the formula and widen-then-narrow for all 2^16 patterns.
template <class Widen, class Narrow>
void check_all_16bit_patterns(double (*formula)(unsigned), Widen widen, Narrow narrow) {
  Mismatches widen_mm, round_trip_mm;
  for (unsigned h = 0; h < 65536; ++h) {
    const double expected = formula(h);
    const float w = widen(std::uint16_t(h));
    if (std::isnan(expected)) {
      widen_mm.check(h, 1, std::isnan(w), "widen is NaN");
      round_trip_mm.check(h, 0x7FFF, narrow(w), "narrow");
    } else {
      widen_mm.check(h, bits_of(float(expected)), bits_of(w), "widen");
      round_trip_mm.check(h, h, narrow(w), "narrow");
    }
  }
  EXPECT_EQ(widen_mm.count, 0u) << widen_mm.first;
  EXPECT_EQ(round_trip_mm.count, 0u) << round_trip_mm.first;
}

TEST(FormatsHalf, Bf16AllPatternsWidenExactlyAndRoundTrip) {
  check_all_16bit_patterns(&bf16_formula, &bf16_to_float, &float_to_bf16);
}

TEST(FormatsHalf, Fp16AllPatternsWidenExactlyAndRoundTrip) {
  check_all_16bit_patterns(&half_formula, &half_to_float, &float_to_half);
}

// RNE narrowing at the midpoint of every pair of adjacent positive finite codes, and at the
// overflow threshold (max + half ulp, where the next code is inf). `top` is 2^(emax+1), the value
// the infinity code would have with an unbounded exponent.
template <class Narrow>
void check_midpoints(double (*formula)(unsigned), unsigned max_finite, double top, Narrow narrow) {
  Mismatches mm;
  for (unsigned lo = 0; lo <= max_finite; ++lo) {
    const unsigned hi = lo + 1, even = lo % 2 == 0 ? lo : hi;
    const double hi_value = hi > max_finite ? top : formula(hi);
    const float mid = float((formula(lo) + hi_value) / 2);  // exact: few significant bits
    const float above = std::nextafter(mid, std::numeric_limits<float>::infinity());
    const float below = std::nextafter(mid, 0.0f);
    for (unsigned sign : {0x0000u, 0x8000u}) {
      const float s = sign ? -1.0f : 1.0f;
      mm.check(bits_of(s * mid), sign | even, narrow(s * mid), "midpoint");
      mm.check(bits_of(s * above), sign | hi, narrow(s * above), "above midpoint");
      mm.check(bits_of(s * below), sign | lo, narrow(s * below), "below midpoint");
    }
  }
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsHalf, Bf16NarrowingRoundsMidpointsToEvenAndOverflowsToInf) {
  check_midpoints(&bf16_formula, 0x7F7F, std::ldexp(1.0, 128), &float_to_bf16);
}

TEST(FormatsHalf, Fp16NarrowingRoundsMidpointsToEvenAndOverflowsToInf) {
  check_midpoints(&half_formula, 0x7BFF, 65536.0, &float_to_half);
}

TEST(FormatsHalf, NarrowingGivesCanonicalNanForEveryNan) {
  // §1.1 RNbf16: NaN -> 0x7FFF; half_float.h uses the same canonical NaN for binary16.
  Mismatches mm;
  for (std::uint32_t sign : {0x0u, 0x80000000u}) {
    for (std::uint32_t payload = 1; payload < 0x800000u; payload += 7) {
      const std::uint32_t u = sign | 0x7F800000u | payload;
      mm.check(u, 0x7FFF, float_to_bf16(float_of(u)), "bf16");
      mm.check(u, 0x7FFF, float_to_half(float_of(u)), "fp16");
    }
    const std::uint32_t max_payload = sign | 0x7FFFFFFFu;
    mm.check(max_payload, 0x7FFF, float_to_bf16(float_of(max_payload)), "bf16");
    mm.check(max_payload, 0x7FFF, float_to_half(float_of(max_payload)), "fp16");
  }
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

TEST(FormatsHalf, Bf16MatchesSpecBitFormulaOnDenseSample) {
  // §1.1: RNbf16(u) = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 for non-NaN u.
  Mismatches mm;
  for_each_sampled_and_edge_pattern([&](std::uint32_t u) {
    if (std::isnan(float_of(u))) return;
    mm.check(u, (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16, float_to_bf16(float_of(u)));
  });
  EXPECT_EQ(mm.count, 0u) << mm.first;
}

}  // namespace
}  // namespace nvfp4
