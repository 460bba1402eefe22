// ULP distances (compare/ulp.h) against an independent oracle, the rank of a value among all the
// format's distinct values sorted by value: exhaustively for the ordering of BF16 and F16, on
// sampled pairs for their distances, and with nextafterf walks across every F32 binade,
// subnormals, zeros and infinities included. Then the reports and the ulp comparison mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "compare/compare.h"
#include "compare/ulp.h"
#include "compare/ulp_report.h"
#include "reference/half_float.h"

namespace nvfp4 {
namespace {

constexpr io::DType kHalves[] = {io::DType::BF16, io::DType::F16};

double value16(io::DType d, std::uint32_t bits) { return d == io::DType::BF16 ? bf16_to_float(bits) : half_to_float(bits); }

// The oracle: every distinct non-NaN value of a 16-bit format, sorted (-0 and +0 are one value).
std::vector<double> sorted_values(io::DType d) {
  std::vector<double> v;
  for (std::uint32_t b = 0; b < 0x10000; ++b)
    if (const double x = value16(d, b); !std::isnan(x)) v.push_back(x == 0 ? 0.0 : x);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::int64_t rank(const std::vector<double>& sorted, double x) {
  return std::lower_bound(sorted.begin(), sorted.end(), x == 0 ? 0.0 : x) - sorted.begin();
}

TEST(UlpDistance, OrdinalsOf16BitFormatsAreTheRanksOfTheirValues) {
  for (const io::DType d : kHalves) {
    SCOPED_TRACE(io::dtype_name(d));
    const std::vector<double> sorted = sorted_values(d);
    const std::int64_t zero = rank(sorted, 0.0);
    std::size_t nans = 0;
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
      const double x = value16(d, b);
      const std::optional<std::int64_t> ordinal = compare::ulp_ordinal(d, b);
      if (std::isnan(x)) {
        EXPECT_FALSE(ordinal) << std::hex << b;
        ++nans;
        continue;
      }
      ASSERT_TRUE(ordinal) << std::hex << b;
      ASSERT_EQ(*ordinal, rank(sorted, x) - zero) << std::hex << b;
      // The inverse gives back the same value (and +0 for -0).
      EXPECT_EQ(compare::ulp_bits(d, *ordinal), x == 0 ? 0u : b) << std::hex << b;
    }
    EXPECT_EQ(nans, d == io::DType::BF16 ? 2u * 127u : 2u * 1023u);
    EXPECT_THROW(compare::ulp_bits(d, std::int64_t(sorted.size())), std::out_of_range);
  }
}

TEST(UlpDistance, SampledPairsOf16BitFormatsEqualTheRankDifference) {
  std::mt19937 rng(12345);
  for (const io::DType d : kHalves) {
    SCOPED_TRACE(io::dtype_name(d));
    const std::vector<double> sorted = sorted_values(d);
    // Every pair of a grid of patterns (every sign, binade and NaN class), then random pairs.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
    for (std::uint32_t a = 0; a < 0x10000; a += 257)
      for (std::uint32_t b = 3; b < 0x10000; b += 263) pairs.emplace_back(a, b);
    for (int i = 0; i < 200000; ++i) pairs.emplace_back(rng() & 0xFFFF, rng() & 0xFFFF);
    for (const auto& [a, b] : pairs) {
      const double x = value16(d, a), y = value16(d, b);
      const std::uint64_t want = std::isnan(x) && std::isnan(y)   ? 0
                                 : std::isnan(x) || std::isnan(y) ? compare::kUlpNan
                                                                  : std::uint64_t(std::abs(rank(sorted, x) - rank(sorted, y)));
      ASSERT_EQ(compare::ulp_distance(d, a, b), want) << std::hex << a << " " << b;
      ASSERT_EQ(compare::ulp_distance(d, b, a), want);
    }
  }
}

TEST(UlpDistance, F32NeighboursAreOneApartInEveryBinadeAndAcrossZero) {
  const auto f = [](float x) { return std::bit_cast<std::uint32_t>(x); };
  const float inf = std::numeric_limits<float>::infinity();
  // Every binade's first value and its neighbours on both sides, both signs.
  for (int e = -149; e <= 127; ++e) {
    for (const float s : {1.0f, -1.0f}) {
      const float x = s * std::ldexp(1.0f, e);
      for (const float to : {inf, -inf}) {
        const float y = std::nextafter(x, to);
        ASSERT_EQ(compare::ulp_distance(io::DType::F32, f(x), f(y)), 1u) << x << " -> " << y;
      }
    }
  }
  // Walks of k nextafterf steps from scattered starts are k apart.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    float x = std::bit_cast<float>(std::uint32_t(rng()));
    if (std::isnan(x) || std::isinf(x)) continue;
    const float to = rng() & 1 ? inf : -inf;
    const int k = int(rng() % 300);
    float y = x;
    for (int j = 0; j < k && !std::isinf(y); ++j) y = std::nextafter(y, to);
    if (std::isinf(y)) continue;
    ASSERT_EQ(compare::ulp_distance(io::DType::F32, f(x), f(y)), std::uint64_t(x == 0 && y == 0 ? 0 : k))
        << x << " " << k << " steps";
  }
  EXPECT_EQ(compare::ulp_distance(io::DType::F32, 0x00000000u, 0x80000000u), 0u);                // +0, -0
  EXPECT_EQ(compare::ulp_distance(io::DType::F32, 0x00000001u, 0x80000001u), 2u);                // ±min subnormal
  EXPECT_EQ(compare::ulp_distance(io::DType::F32, 0x007FFFFFu, 0x00800000u), 1u);                // subnormal -> normal
  EXPECT_EQ(compare::ulp_distance(io::DType::F32, 0x7F7FFFFFu, 0x7F800000u), 1u);                // FLT_MAX -> inf
  EXPECT_EQ(compare::ulp_distance(io::DType::F32, 0xFF800000u, 0x7F800000u), 2u * 0x7F800000u);  // -inf -> +inf
  EXPECT_EQ(compare::ulp_distance(io::DType::F32, 0x7FC00000u, 0xFFFFFFFFu), 0u);                // NaN payloads
  EXPECT_EQ(compare::ulp_distance(io::DType::F32, 0x7F800001u, 0x3F800000u), compare::kUlpNan);
  EXPECT_EQ(compare::ulp_distance(io::DType::F32, 0x7F800000u, 0x7FC00000u), compare::kUlpNan);  // inf is not NaN
  EXPECT_EQ(compare::ulp_bits(io::DType::F32, -1), 0x80000001u);
  EXPECT_EQ(compare::ulp_bits(io::DType::F32, 0x7F800000), 0x7F800000u);
  EXPECT_THROW(compare::ulp_bits(io::DType::F32, 0x7F800001), std::out_of_range);
  EXPECT_THROW(compare::ulp_distance(io::DType::U8, 0, 1), std::invalid_argument);
}

TEST(UlpHistogram, BucketsArePowersOfTwo) {
  const std::map<std::uint64_t, std::string> want = {{0, "0"},
                                                     {1, "1"},
                                                     {2, "2"},
                                                     {3, "3-4"},
                                                     {4, "3-4"},
                                                     {5, "5-8"},
                                                     {8, "5-8"},
                                                     {9, "9-16"},
                                                     {1u << 23, "4194305-8388608"},
                                                     {(1u << 23) + 1, "8388609-16777216"},
                                                     {1u << 24, "8388609-16777216"},
                                                     {(1u << 24) + 1, ">16777216"},
                                                     {std::uint64_t(1) << 40, ">16777216"},
                                                     {compare::kUlpNan, "nan"}};
  for (const auto& [ulps, label] : want)
    EXPECT_EQ(compare::UlpHistogram::label(compare::UlpHistogram::bucket(ulps)), label) << ulps;
  EXPECT_EQ(compare::UlpHistogram::bucket(compare::kUlpNan), compare::UlpHistogram::kNan);
}

io::Tensor f32_tensor(std::vector<std::int64_t> shape, const std::vector<std::uint32_t>& bits) {
  return io::make_tensor_from<std::uint32_t>(io::DType::F32, std::move(shape), bits);
}

TEST(UlpReport, CountsTheDistancesAndListsTheWorstFirst) {
  // [2, 3]: distances 0, 1, 3, NaN mismatch, 0 (both NaN), 1000.
  const io::Tensor exact = f32_tensor({2, 3}, {0x3F800000u, 0x3F800000u, 0x00000000u, 0x3F800000u, 0x7FC00000u, 0x40000000u});
  const io::Tensor actual = f32_tensor({2, 3}, {0x3F800000u, 0x3F800001u, 0x80000003u, 0x7FC00000u, 0xFFC00001u, 0x400003E8u});
  const compare::UlpReport r = compare::ulp_report("d", exact, actual, std::nullopt);
  EXPECT_EQ(r.rows, 2);
  EXPECT_EQ(r.cols, 3);
  EXPECT_EQ(r.histogram.count[0], 2u);
  EXPECT_EQ(r.histogram.count[1], 1u);
  EXPECT_EQ(r.histogram.count[3], 1u);
  EXPECT_EQ(r.histogram.count[compare::UlpHistogram::bucket(1000)], 1u);
  EXPECT_EQ(r.histogram.count[compare::UlpHistogram::kNan], 1u);
  EXPECT_EQ(r.max, 1000u);
  EXPECT_DOUBLE_EQ(r.mean(), (1.0 + 3.0 + 1000.0) / 5.0);
  EXPECT_TRUE(r.passed());  // no bound
  ASSERT_EQ(r.worst.size(), 4u);
  EXPECT_EQ(r.worst[0].ulps, compare::kUlpNan);
  EXPECT_EQ(r.worst[0].row, 1);
  EXPECT_EQ(r.worst[0].col, 0);
  EXPECT_EQ(r.worst[1].ulps, 1000u);
  EXPECT_EQ(r.worst[1].expected, 0x40000000u);
  EXPECT_EQ(r.worst[1].actual, 0x400003E8u);
  EXPECT_EQ(r.worst[2].ulps, 3u);
  EXPECT_EQ(r.worst[3].ulps, 1u);
  EXPECT_EQ(r.brief(), "d: 4 of 6 elements differ, max 1000 ulps, mean 201 ulp, 1 NaN mismatch");

  const compare::UlpReport bounded = compare::ulp_report("d", exact, actual, 3);
  EXPECT_FALSE(bounded.passed());
  EXPECT_EQ(bounded.beyond, 2u);  // 1000 and the NaN mismatch
  EXPECT_EQ(bounded.problem(),
            "d: 2 of 6 elements beyond 3 ulps; worst nan ulps at [1, 0]: exact 1 (0x3F800000), actual nan (0x7FC00000)");
  EXPECT_TRUE(compare::ulp_report("d", exact, exact, 0).passed());
  EXPECT_EQ(compare::ulp_report("d", exact, actual, std::nullopt, 2).worst.size(), 2u);
}

TEST(UlpReport, GridKeepsTheLargestDistanceOfEachCell) {
  // 300 x 200 elements -> cells of 3 x 2 -> a 100 x 100 grid.
  std::vector<std::uint32_t> e(300 * 200, 0x3F800000u), a = e;
  a[0 * 200 + 1] += 5;      // cell (0, 0)
  a[2 * 200 + 0] += 7;      // cell (0, 0): the larger one stays
  a[299 * 200 + 199] += 1;  // cell (99, 99)
  const compare::UlpReport r = compare::ulp_report("d", f32_tensor({300, 200}, e), f32_tensor({300, 200}, a), 6);
  EXPECT_EQ(r.grid.rows, 100);
  EXPECT_EQ(r.grid.cols, 100);
  EXPECT_EQ(r.grid.cell_rows, 3);
  EXPECT_EQ(r.grid.cell_cols, 2);
  EXPECT_EQ(r.grid.max[0], 7u);
  EXPECT_EQ(r.grid.max[99 * 100 + 99], 1u);
  EXPECT_EQ(std::count(r.grid.max.begin(), r.grid.max.end(), 0u), 100 * 100 - 2);
  EXPECT_EQ(r.beyond, 1u);
  // Exactly 128 columns stay one cell each; BF16 and F16 tensors too.
  const std::vector<std::uint16_t> h(128, 0x3C00);
  const io::Tensor t = io::make_tensor_from<std::uint16_t>(io::DType::F16, {1, 128}, h);
  const compare::UlpReport one = compare::ulp_report("d", t, t, std::nullopt);
  EXPECT_EQ(one.grid.cols, 128);
  EXPECT_EQ(one.grid.cell_cols, 1);
  EXPECT_THROW(compare::ulp_report("d", t, f32_tensor({1, 64}, std::vector<std::uint32_t>(64)), std::nullopt),
               std::invalid_argument);
}

TEST(UlpTotals, AddUpReportsAndKeepTheWorstWithTheirCase) {
  const io::Tensor exact = f32_tensor({1, 4}, {0x3F800000u, 0x3F800000u, 0x3F800000u, 0x3F800000u});
  const io::Tensor one = f32_tensor({1, 4}, {0x3F800000u, 0x3F800001u, 0x3F800000u, 0x3F800000u});
  const io::Tensor four = f32_tensor({1, 4}, {0x3F800004u, 0x3F800000u, 0x3F800000u, 0x3F800000u});
  compare::UlpTotals t, u;
  t.bound = 1;
  t.add(compare::ulp_report("d", exact, one, 1), "case-a");
  u.add(compare::ulp_report("d", exact, four, 1), "case-b");
  t.merge(u);
  EXPECT_EQ(t.tensors, 2u);
  EXPECT_EQ(t.failed, 1u);
  EXPECT_EQ(t.max, 4u);
  EXPECT_EQ(t.histogram.total(), 8u);
  EXPECT_DOUBLE_EQ(t.mean(), 5.0 / 8.0);
  ASSERT_EQ(t.worst.size(), 2u);
  EXPECT_EQ(t.worst[0].where, "case-b");
  EXPECT_EQ(t.worst[1].where, "case-a");
  const std::string text = compare::describe_ulp_totals(t);
  EXPECT_NE(text.find("8 elements of 2 output tensors, max 4 ulps"), std::string::npos) << text;
  EXPECT_NE(text.find("bound --max-ulp 1: 1 of 2 output tensors beyond it"), std::string::npos) << text;
  EXPECT_NE(text.find("case-b"), std::string::npos) << text;
}

cases::Outcome ran(cases::TensorMap outputs) {
  cases::Outcome o;
  o.outputs = std::move(outputs);
  return o;
}

TEST(UlpCompare, FloatOutputsPassWithinTheBoundAndOthersStayBitwise) {
  const io::Tensor exact = f32_tensor({1, 2}, {0x3F800000u, 0x40000000u});
  const io::Tensor near = f32_tensor({1, 2}, {0x3F800001u, 0x40000000u});
  const io::Tensor bytes = io::make_tensor(io::DType::U8, {1}, std::vector<std::uint8_t>{1});
  const io::Tensor other = io::make_tensor(io::DType::U8, {1}, std::vector<std::uint8_t>{2});
  compare::CompareMode within{true, 1}, exact_only{true, 0}, report_only{true, std::nullopt};

  compare::Comparison c = compare::compare_outcomes("reference", ran({{"d", exact}}), "worker", ran({{"d", near}}), within);
  EXPECT_TRUE(c.agree);
  EXPECT_EQ(c.verdict, compare::Verdict::kAgree);
  EXPECT_EQ(c.diffs.size(), 1u);  // the bits differ all the same
  ASSERT_EQ(c.ulp.size(), 1u);
  EXPECT_EQ(c.ulp[0].histogram.count[1], 1u);
  EXPECT_TRUE(compare::compare_outcomes("reference", ran({{"d", exact}}), "worker", ran({{"d", near}}), report_only).agree);

  c = compare::compare_outcomes("reference", ran({{"d", exact}}), "worker", ran({{"d", near}}), exact_only);
  EXPECT_FALSE(c.agree);
  EXPECT_EQ(c.verdict, compare::Verdict::kMismatch);
  EXPECT_EQ(c.problem,
            "d: 1 of 2 elements beyond 0 ulps; worst 1 ulps at [0, 0]: exact 1 (0x3F800000), actual 1.0000001 (0x3F800001)");
  // Bitwise, the same outputs mismatch.
  EXPECT_FALSE(compare::compare_outcomes("reference", ran({{"d", exact}}), "worker", ran({{"d", near}})).agree);

  // A non-float output must match bit for bit; a missing tensor is a schema verdict.
  c = compare::compare_outcomes("reference", ran({{"d", exact}, {"n", bytes}}), "worker", ran({{"d", exact}, {"n", other}}),
                                within);
  EXPECT_EQ(c.verdict, compare::Verdict::kMismatch);
  EXPECT_NE(c.problem.find("n: 1 elements differ"), std::string::npos) << c.problem;
  c = compare::compare_outcomes("reference", ran({{"d", exact}}), "worker", ran({}), within);
  EXPECT_EQ(c.verdict, compare::Verdict::kSchema);
  EXPECT_TRUE(c.ulp.empty());
}

TEST(UlpCompare, AppliesToGemmOperationsOnly) {
  const compare::CompareMode ulp{true, 3};
  EXPECT_TRUE(compare::compare_mode_for(ulp, "gemm").ulp);
  EXPECT_TRUE(compare::compare_mode_for(ulp, "grouped_gemm").ulp);
  EXPECT_FALSE(compare::compare_mode_for(ulp, "quantize").ulp);
  EXPECT_FALSE(compare::compare_mode_for(ulp, "quantize").max_ulp);
}

}  // namespace
}  // namespace nvfp4
