// Explanations of stochastic-rounding and Hadamard-transform mismatches (reports' raw material):
// each SR element's random byte and threshold, and each transform output's exact sum and both
// roundings, checked against values recomputed here from the reference formulas or taken from
// docs/NUMERICS.md §6.18 and §6.19.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/explain.h"
#include "io/tensor_convert.h"
#include "reference/arith.h"
#include "reference/e2m1.h"
#include "reference/hadamard.h"
#include "reference/half_float.h"
#include "reference/philox.h"

namespace nvfp4 {
namespace {

cases::Case sr_case(const FloatMatrix& x, std::uint64_t seed, std::uint64_t offset, Direction direction) {
  cases::Case c = cases::make_case("quantize");
  c.params.set("profile", std::string("te"));
  cases::set_quantize_params(c, BlockShape::k1D, direction);
  c.params.set("rounding", std::string("stochastic"));
  c.params.set("seed", seed);
  c.params.set("offset", offset);
  c.inputs["x"] = io::from_float_matrix(x, io::FloatType::F32);
  return c;
}

FloatMatrix random_matrix(std::size_t M, std::size_t K, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n;
  FloatMatrix x = xt::empty<float>({M, K});
  for (float& v : x) v = n(rng);
  return x;
}

// A backend whose seed differs gives other codes off the grid: every mismatch names the random
// byte the reference drew for that element and the byte from which it rounds up, and the
// expected code is the upper neighbour exactly when the byte reaches the threshold.
TEST(ExplainStochasticRounding, NamesEachMismatchingElementsRandomByteAndThreshold) {
  const std::uint32_t seed = std::random_device{}();
  const FloatMatrix x = random_matrix(32, 48, seed);
  for (Direction direction : {Direction::kRowwise, Direction::kColumnwise}) {
    const cases::Case c = sr_case(x, 42, 7, direction);
    cases::Case other = c;
    other.params.set("seed", std::uint64_t(43));
    const cases::TensorMap expected = cases::ReferenceBackend().run(c), actual = cases::ReferenceBackend().run(other);
    const compare::Explanation e = compare::explain(c, expected, actual);
    ASSERT_GT(e.total_mismatches, 0u) << "seed " << seed;
    ASSERT_EQ(e.kind_counts.size(), 1u);
    EXPECT_EQ(e.kind_counts[0].first, compare::MismatchKind::kSrOtherNeighbour);
    const bool rowwise = direction == Direction::kRowwise;
    const std::size_t K = rowwise ? 48 : 32;  // the stored copy's row length
    for (const compare::ElementMismatch& m : e.mismatches) {
      ASSERT_TRUE(m.sr.has_value());
      const std::uint64_t block = (std::uint64_t(m.row) * K + std::uint64_t(m.col)) / 16;
      const SrDirection dir = rowwise ? SrDirection::kRowwise : SrDirection::kColumnwise;
      EXPECT_EQ(m.sr->random_byte, sr_byte(sr_draw(42, 7, dir, block), unsigned(m.col % 16)));
      ASSERT_GT(m.sr->threshold, 0);
      ASSERT_LT(m.sr->threshold, 256);  // a mismatching element is off the grid
      const bool up = m.sr->random_byte >= m.sr->threshold;
      EXPECT_EQ(e2m1_decode(m.expected & 7) > e2m1_decode(m.actual & 7), up) << "row " << m.row << " col " << m.col;
    }
    ASSERT_FALSE(e.traces.empty());
    EXPECT_EQ(e.traces[0].sr.size(), 16u);
  }
}

// Two neighbouring elements of one byte that both rounded the other way look like that byte with
// its nibbles swapped; a byte-order bug would also swap the bytes at that position in the other
// rows, so the explanation names stochastic rounding. Swapping the position in every row is a
// byte-order bug.
TEST(ExplainStochasticRounding, OneByteOfNeighboursFlippedIsNotANibbleOrderBug) {
  const std::uint32_t seed = std::random_device{}();
  const cases::Case c = sr_case(random_matrix(32, 64, seed), 42, 7, Direction::kRowwise);
  const cases::TensorMap expected = cases::ReferenceBackend().run(c);
  const ByteMatrix data = io::to_byte_matrix(expected.at("data"), "test", "data");
  const auto swapped = [](std::uint8_t b) { return std::uint8_t((b << 4) | (b >> 4)); };
  std::optional<std::pair<std::size_t, std::size_t>> pick;  // a byte of two neighbouring codes of one sign
  for (std::size_t r = 0; r < data.shape(0) && !pick; ++r)
    for (std::size_t b = 0; b < data.shape(1) && !pick; ++b) {
      const std::uint8_t lo = data(r, b) & 0xF, hi = data(r, b) >> 4;
      if ((lo & 8) == (hi & 8) && std::abs(int(lo & 7) - int(hi & 7)) == 1) pick = {r, b};
    }
  ASSERT_TRUE(pick) << "seed " << seed;
  const auto [row, col] = *pick;
  cases::TensorMap one = expected, every = expected;
  ByteMatrix one_data = data, every_data = data;
  one_data(row, col) = swapped(data(row, col));
  for (std::size_t r = 0; r < data.shape(0); ++r) every_data(r, col) = swapped(data(r, col));
  one.at("data") = io::from_byte_matrix(one_data);
  every.at("data") = io::from_byte_matrix(every_data);
  const bool other_rows_differ = every_data != one_data;  // else the two are the same bug
  ASSERT_TRUE(other_rows_differ) << "seed " << seed;

  const compare::Explanation e_one = compare::explain(c, expected, one);
  ASSERT_EQ(e_one.kind_counts.size(), 1u) << "seed " << seed;
  EXPECT_EQ(e_one.kind_counts[0].first, compare::MismatchKind::kSrOtherNeighbour) << "seed " << seed;
  const compare::Explanation e_every = compare::explain(c, expected, every);
  ASSERT_EQ(e_every.kind_counts.size(), 1u) << "seed " << seed;
  EXPECT_EQ(e_every.kind_counts[0].first, compare::MismatchKind::kNibbleOrder) << "seed " << seed;
}

// §6.18: with the scale factor 1 (te, amax 2688, block amax 6), y = x; 0.3 rounds up to 0.5 iff
// r8 >= 103 and 1.2 up to 1.5 iff r8 >= 154.
TEST(ExplainStochasticRounding, ThresholdsOfWorkedExample618) {
  FloatMatrix x = xt::zeros<float>({16, 16});
  for (std::size_t r = 0; r < 16; ++r) {
    x(r, 0) = 6.0f;
    x(r, 1) = float_of(0x3E99999Au);
    x(r, 2) = float_of(0x3F99999Au);
    x(r, 3) = 1.0f;
  }
  cases::Case c = sr_case(x, 42, 0, Direction::kRowwise);
  c.params.set("amax", cases::F32Bits{bits_of(2688.0f)});
  const cases::TensorMap expected = cases::ReferenceBackend().run(c);
  cases::TensorMap actual = expected;
  for (std::size_t i = 0; i < actual.at("data").bytes.size(); i += 8)
    actual.at("data").bytes[i] ^= 0x11;  // flip codes of 0 and 1
  const compare::Explanation e = compare::explain(c, expected, actual);
  ASSERT_FALSE(e.traces.empty());
  const compare::BlockTrace& t = e.traces[0];
  ASSERT_EQ(t.sr.size(), 16u);
  EXPECT_EQ(t.scaled[1], float_of(0x3E99999Au));
  EXPECT_EQ(t.sr[1].threshold, 103);
  EXPECT_EQ(t.sr[2].threshold, 154);
  EXPECT_EQ(t.sr[3].threshold, 256);  // 1.0 is on the grid
  EXPECT_EQ(t.sr[0].threshold, 256);  // 6.0 too
}

cases::TensorMap rounded_once(const cases::Case& c) {  // a transform that skips the binary32 rounding
  const FloatMatrix x = io::to_float_matrix(c.inputs.at("x"), "test", "x");
  FloatMatrix y = xt::empty<float>({x.shape(1), x.shape(0)});
  std::array<float, 16> v;
  for (std::size_t col = 0; col < x.shape(1); ++col)
    for (std::size_t b = 0; b < x.shape(0) / 16; ++b) {
      for (std::size_t k = 0; k < 16; ++k) v[k] = x(16 * b + k, col);
      for (unsigned n = 0; n < 16; ++n) y(col, 16 * b + n) = rht16_sum(v, kRhtDefaultMask, n).bf16_single;
    }
  return {{"x_t", io::from_float_matrix(y, io::FloatType::BF16)}};
}

// §6.19's double-rounding vector in column 1 of a 32x16 input: a transform that rounds the exact
// sum once to BF16 differs in output 0 of that chunk; the explanation shows the exact sum, both
// roundings, and names the kind.
TEST(ExplainRht, ShowsTheExactSumAndBothRoundingsAndNamesASkippedBinary32Rounding) {
  FloatMatrix x = xt::zeros<float>({32, 16});
  x(16, 1) = 1.0f;
  x(17, 1) = std::ldexp(1.0f, -8);
  x(18, 1) = std::ldexp(1.0f, -38);
  cases::Case c = cases::make_case("rht");
  c.inputs["x"] = io::from_float_matrix(x, io::FloatType::BF16);
  const cases::TensorMap expected = cases::ReferenceBackend().run(c), actual = rounded_once(c);
  const compare::Explanation e = compare::explain(c, expected, actual);
  // Outputs 0, 4, 8 and 12 of chunk 1 of column 1: 0.25 + 2^-10 + 2^-40 (§6.19: 0x3E80, once 0x3E81).
  // The other even outputs subtract the 2^-40 and round to 0x3E80 either way; the odd ones are 0x3E7F.
  ASSERT_EQ(e.rht_traces.size(), 4u);
  EXPECT_EQ(e.total_mismatches, 4u);
  EXPECT_EQ(e.rht_traces[1].col, 20);
  const compare::RhtTrace& t = e.rht_traces[0];
  EXPECT_EQ(t.row, 1);
  EXPECT_EQ(t.col, 16);
  EXPECT_EQ(t.exact_sum, "0x1.0100000004p-2");  // 0.25 + 2^-10 + 2^-40
  EXPECT_EQ(bits_of(t.binary32), 0x3E808000u);
  EXPECT_EQ(bits_of(t.expected), 0x3E800000u);
  EXPECT_EQ(bits_of(t.actual), 0x3E810000u);
  EXPECT_EQ(bits_of(t.single_rounding), 0x3E810000u);
  ASSERT_EQ(e.kind_counts.size(), 1u);
  EXPECT_EQ(e.kind_counts[0].first, compare::MismatchKind::kRhtSingleRounding);
  EXPECT_NE(e.verdict.find("rounded once to BF16"), std::string::npos) << e.verdict;
  ASSERT_EQ(e.maps.size(), 1u);
  ASSERT_EQ(e.maps[0].mismatching.size(), 32u);  // [16 columns, 2 chunks]
  EXPECT_EQ(std::count(e.maps[0].mismatching.begin(), e.maps[0].mismatching.end(), 1), 1);
  EXPECT_EQ(e.maps[0].mismatching[3], 1);  // column 1, chunk 1
}

// One BF16 ulp away from the expected output, not the single rounding: a kernel's summation error.
TEST(ExplainRht, NamesAnOutputOneUlpOff) {
  std::mt19937 rng(std::random_device{}());
  FloatMatrix x = xt::empty<float>({16, 16});
  for (float& v : x) v = bf16_to_float(float_to_bf16(std::normal_distribution<float>()(rng)));
  cases::Case c = cases::make_case("rht");
  c.inputs["x"] = io::from_float_matrix(x, io::FloatType::BF16);
  const cases::TensorMap expected = cases::ReferenceBackend().run(c);
  cases::TensorMap actual = expected;
  std::uint8_t& low = actual.at("x_t").bytes[2 * 5];  // element (0, 5): its BF16 bits + 1 (a finite, non-boundary value)
  low = std::uint8_t(low ^ 1);
  const compare::Explanation e = compare::explain(c, expected, actual);
  ASSERT_EQ(e.total_mismatches, 1u);
  EXPECT_EQ(e.rht_traces[0].col, 5);
  const bool single = bits_of(e.rht_traces[0].single_rounding) == bits_of(e.rht_traces[0].actual);
  EXPECT_EQ(e.kind_counts[0].first, single ? compare::MismatchKind::kRhtSingleRounding : compare::MismatchKind::kRhtOneUlp);
}

TEST(ExplainExperts, ExplainsTheFirstExpertWhoseOutputsDifferAsItsOwnTensor) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  std::vector<float> x(3 * 16 * 32);
  for (float& v : x) v = normal(rng);
  cases::Case c = cases::make_case("quantize");
  c.params.set("experts", true);
  c.inputs["x"] = io::make_tensor_from<float>(io::DType::F32, {3, 16, 32}, x);
  const cases::TensorMap expected = cases::ReferenceBackend().run(c);
  cases::TensorMap actual = expected;
  actual.at("data").bytes[16 * 16 + 5] ^= 0x01;  // expert 1, row 0, byte 5: one code off
  const compare::Explanation e = compare::explain(c, expected, actual);
  EXPECT_EQ(e.verdict.rfind("expert 1: ", 0), 0u) << e.verdict;
  EXPECT_EQ(e.total_mismatches, 1u);
}

// Outputs that differ outside every expert's slice (here an output the reference does not write)
// are counted; the [E, N, K] input is never read as a 2-D tensor.
TEST(ExplainExperts, ADifferenceOutsideEveryExpertIsCounted) {
  cases::Case c = cases::make_case("quantize");
  c.params.set("experts", true);
  c.inputs["x"] = io::make_tensor_from<float>(io::DType::F32, {2, 16, 32}, std::vector<float>(2 * 16 * 32, 1.0f));
  const cases::TensorMap expected = cases::ReferenceBackend().run(c);
  cases::TensorMap actual = expected;
  actual["extra"] = io::make_tensor_from<float>(io::DType::F32, {1}, std::vector<float>{0.0f});
  const compare::Explanation e = compare::explain(c, expected, actual);
  EXPECT_EQ(e.total_mismatches, 1u);
}

}  // namespace
}  // namespace nvfp4
