// What `--compare ulp` reports about one GEMM output tensor, and about a whole run: the histogram
// of the elements' ULP distances to EXACT, their largest and mean distance, the worst elements, a
// coarse map of where they lie, and whether every element is within the bound.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cases/case.h"
#include "compare/ulp.h"

namespace nvfp4::compare {

// Counts of distances in buckets 0, 1, 2, 3-4, 5-8, ..., (2^23, 2^24], > 2^24, and NaN mismatches.
struct UlpHistogram {
  static constexpr std::size_t kFinite = 27;    // the buckets of distances
  static constexpr std::size_t kNan = kFinite;  // the bucket of NaN mismatches
  std::array<std::uint64_t, kFinite + 1> count{};

  static std::size_t bucket(std::uint64_t ulps);
  static std::string label(std::size_t bucket);  // "0", "1", "3-4", ">16777216", "nan"
  void add(std::uint64_t ulps) { ++count[bucket(ulps)]; }
  void merge(const UlpHistogram& other);
  std::uint64_t total() const;
};

// One element of a tensor viewed as [rows, cols] (rank 1: one row).
struct UlpElement {
  std::string where;  // the case it belongs to (run totals only)
  std::string tensor;
  std::int64_t row = 0, col = 0;
  std::uint64_t ulps = 0;  // kUlpNan: exactly one of the two is NaN
  io::DType dtype = io::DType::F32;
  std::uint32_t expected = 0, actual = 0;  // bits; expected is EXACT's value
};

// The largest distance in each cell of a grid of at most kMaxCells x kMaxCells cells over the
// tensor, each cell `cell_rows` x `cell_cols` elements.
struct UlpGrid {
  static constexpr std::int64_t kMaxCells = 128;
  std::int64_t rows = 0, cols = 0, cell_rows = 1, cell_cols = 1;
  std::vector<std::uint64_t> max;  // rows x cols, row-major
};

struct UlpReport {
  std::string tensor;
  io::DType dtype = io::DType::F32;
  std::int64_t rows = 0, cols = 0;
  UlpHistogram histogram;
  std::uint64_t max = 0;  // largest distance other than a NaN mismatch
  double sum = 0;         // of the distances other than NaN mismatches (for the mean)
  std::optional<std::uint64_t> bound;
  std::uint64_t beyond = 0;       // elements farther than the bound (NaN mismatches included)
  std::vector<UlpElement> worst;  // the largest distances, largest first, then by position
  UlpGrid grid;

  bool passed() const { return beyond == 0; }
  double mean() const;
  // "d: 1 of 4096 elements differ, max 1 ulp, mean 0.000244 ulp"
  std::string brief() const;
  // "" when passed, else "d: 3 of 4096 elements beyond 1 ulp; worst 5 ulps at [3, 7]: exact 1 (0x3F800000), ..."
  std::string problem() const;
};

// The report of one output tensor: `expected` (EXACT) against `actual`, of one dtype with ULPs and
// one shape. No bound: every element passes.
UlpReport ulp_report(std::string tensor, const io::Tensor& expected, const io::Tensor& actual, std::optional<std::uint64_t> bound,
                     std::size_t worst = 16);

// One report per F32, BF16 or F16 tensor of `expected` that `actual` holds with the same dtype and
// shape, in name order.
std::vector<UlpReport> ulp_reports(const cases::TensorMap& expected, const cases::TensorMap& actual,
                                   std::optional<std::uint64_t> bound);

// Every report of a run added up: the histogram, the largest and mean distance, the worst elements
// (with the case each comes from), and how many tensors failed the bound.
struct UlpTotals {
  UlpHistogram histogram;
  std::uint64_t max = 0;
  double sum = 0;
  std::size_t tensors = 0, failed = 0;
  std::optional<std::uint64_t> bound;  // the run's --max-ulp (its owner sets it)
  std::vector<UlpElement> worst;

  void add(const UlpReport& r, std::string_view where, std::size_t keep = 16);
  void merge(const UlpTotals& other, std::size_t keep = 16);
  double mean() const;
};

// The totals as text for the terminal: a histogram table, max, mean and bound, the worst elements.
std::string describe_ulp_totals(const UlpTotals& t);

// "-1.25 (0xBFA00000)": an element's value in decimal (shortest round trip) and its bits.
std::string ulp_value_text(io::DType dtype, std::uint32_t bits);

// "5", or "nan" for kUlpNan.
std::string ulps_text(std::uint64_t ulps);

}  // namespace nvfp4::compare
