#include "compare/ulp_report.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace nvfp4::compare {
namespace {

std::uint32_t element_bits(const io::Tensor& t, std::int64_t i) {
  const std::size_t size = io::dtype_size(t.dtype);
  std::uint32_t bits = 0;
  std::memcpy(&bits, t.bytes.data() + std::size_t(i) * size, size);
  return bits;
}

// Worst first: larger distances, then (for a stable order) the earlier kept element.
bool worse(const UlpElement& a, const UlpElement& b) { return a.ulps > b.ulps; }

// Inserts e into the sorted list `worst`, keeping at most `keep`.
void keep_worst(std::vector<UlpElement>& worst, UlpElement e, std::size_t keep) {
  if (keep == 0 || (worst.size() == keep && !worse(e, worst.back()))) return;
  worst.insert(std::upper_bound(worst.begin(), worst.end(), e, worse), std::move(e));
  if (worst.size() > keep) worst.pop_back();
}

double mean_of(const UlpHistogram& h, double sum) {
  const std::uint64_t n = h.total() - h.count[UlpHistogram::kNan];
  return n == 0 ? 0.0 : sum / double(n);
}

std::string plural(std::uint64_t n, std::string_view word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

}  // namespace

std::size_t UlpHistogram::bucket(std::uint64_t ulps) {
  if (ulps == kUlpNan) return kNan;
  if (ulps == 0) return 0;
  return std::min<std::size_t>(kFinite - 1, 1 + std::bit_width(ulps - 1));
}

std::string UlpHistogram::label(std::size_t bucket) {
  if (bucket == kNan) return "nan";
  if (bucket <= 2) return std::to_string(bucket);
  if (bucket == kFinite - 1) return fmt::format(">{}", std::uint64_t(1) << (kFinite - 3));
  return fmt::format("{}-{}", (std::uint64_t(1) << (bucket - 2)) + 1, std::uint64_t(1) << (bucket - 1));
}

void UlpHistogram::merge(const UlpHistogram& other) {
  for (std::size_t i = 0; i < count.size(); ++i) count[i] += other.count[i];
}

std::uint64_t UlpHistogram::total() const {
  std::uint64_t n = 0;
  for (const std::uint64_t c : count) n += c;
  return n;
}

double UlpReport::mean() const { return mean_of(histogram, sum); }

std::string UlpReport::brief() const {
  const std::uint64_t n = histogram.total(), nan = histogram.count[UlpHistogram::kNan];
  return fmt::format("{}: {} of {} differ, max {}, mean {:.3g} ulp{}", tensor, n - histogram.count[0], plural(n, "element"),
                     plural(max, "ulp"), mean(), nan ? fmt::format(", {} NaN mismatch{}", nan, nan == 1 ? "" : "es") : "");
}

std::string UlpReport::problem() const {
  if (passed()) return "";
  std::string text = fmt::format("{}: {} of {} beyond {}", tensor, beyond, plural(histogram.total(), "element"),
                                 plural(bound.value_or(0), "ulp"));
  if (!worst.empty()) {
    const UlpElement& w = worst.front();
    text += fmt::format("; worst {} ulps at [{}, {}]: exact {}, actual {}", ulps_text(w.ulps), w.row, w.col,
                        ulp_value_text(dtype, w.expected), ulp_value_text(dtype, w.actual));
  }
  return text;
}

UlpReport ulp_report(std::string tensor, const io::Tensor& expected, const io::Tensor& actual, std::optional<std::uint64_t> bound,
                     std::size_t worst) {
  if (!has_ulps(expected.dtype) || expected.dtype != actual.dtype || expected.shape != actual.shape)
    throw std::invalid_argument(fmt::format("ulp_report: '{}' needs two tensors of one float dtype and shape", tensor));
  UlpReport r;
  r.tensor = std::move(tensor);
  r.dtype = expected.dtype;
  r.bound = bound;
  r.cols = expected.shape.empty() ? 1 : expected.shape.back();
  r.rows = r.cols == 0 ? 0 : expected.numel() / r.cols;
  UlpGrid& g = r.grid;
  g.cell_rows = std::max<std::int64_t>(1, (r.rows + UlpGrid::kMaxCells - 1) / UlpGrid::kMaxCells);
  g.cell_cols = std::max<std::int64_t>(1, (r.cols + UlpGrid::kMaxCells - 1) / UlpGrid::kMaxCells);
  g.rows = (r.rows + g.cell_rows - 1) / g.cell_rows;
  g.cols = (r.cols + g.cell_cols - 1) / g.cell_cols;
  g.max.assign(std::size_t(g.rows * g.cols), 0);
  for (std::int64_t row = 0; row < r.rows; ++row)
    for (std::int64_t col = 0; col < r.cols; ++col) {
      const std::int64_t i = row * r.cols + col;
      const std::uint32_t e = element_bits(expected, i), a = element_bits(actual, i);
      const std::uint64_t d = ulp_distance(r.dtype, e, a);
      r.histogram.add(d);
      if (d != kUlpNan) {
        r.max = std::max(r.max, d);
        r.sum += double(d);
      }
      if (bound && d > *bound) ++r.beyond;
      std::uint64_t& cell = g.max[std::size_t((row / g.cell_rows) * g.cols + col / g.cell_cols)];
      cell = std::max(cell, d);
      if (d != 0 && (r.worst.size() < worst || d > r.worst.back().ulps))
        keep_worst(r.worst, {"", r.tensor, row, col, d, r.dtype, e, a}, worst);
    }
  return r;
}

std::vector<UlpReport> ulp_reports(const cases::TensorMap& expected, const cases::TensorMap& actual,
                                   std::optional<std::uint64_t> bound) {
  std::vector<UlpReport> reports;
  for (const auto& [name, e] : expected) {
    const auto it = actual.find(name);
    if (has_ulps(e.dtype) && it != actual.end() && it->second.dtype == e.dtype && it->second.shape == e.shape)
      reports.push_back(ulp_report(name, e, it->second, bound));
  }
  return reports;
}

void UlpTotals::add(const UlpReport& r, std::string_view where, std::size_t keep) {
  histogram.merge(r.histogram);
  max = std::max(max, r.max);
  sum += r.sum;
  ++tensors;
  failed += !r.passed();
  for (UlpElement e : r.worst) {
    e.where = where;
    keep_worst(worst, std::move(e), keep);
  }
}

void UlpTotals::merge(const UlpTotals& other, std::size_t keep) {
  histogram.merge(other.histogram);
  max = std::max(max, other.max);
  sum += other.sum;
  tensors += other.tensors;
  failed += other.failed;
  if (other.bound) bound = other.bound;
  for (const UlpElement& e : other.worst) keep_worst(worst, e, keep);
}

double UlpTotals::mean() const { return mean_of(histogram, sum); }

std::string ulp_value_text(io::DType dtype, std::uint32_t bits) {
  // Every value of these formats is a binary32: its shortest round trip is the shortest text.
  return fmt::format("{} (0x{:0{}X})", float(ulp_value(dtype, bits)), bits, 2 * io::dtype_size(dtype));
}

std::string ulps_text(std::uint64_t ulps) { return ulps == kUlpNan ? "nan" : std::to_string(ulps); }

std::string describe_ulp_totals(const UlpTotals& t) {
  const std::uint64_t n = t.histogram.total();
  std::string out = fmt::format("ULP distance to EXACT: {} of {}, max {}, mean {:.4g} ulp\n", plural(n, "element"),
                                plural(t.tensors, "output tensor"), plural(t.max, "ulp"), t.mean());
  out += fmt::format("  {:<22} {:>12} {:>9}\n", "ulps", "elements", "share");
  for (std::size_t b = 0; b < t.histogram.count.size(); ++b)
    if (const std::uint64_t c = t.histogram.count[b])
      out += fmt::format("  {:<22} {:>12} {:>8.3f}%\n", UlpHistogram::label(b), c, 100.0 * double(c) / double(n));
  if (t.bound)
    out += fmt::format("  bound --max-ulp {}: {} of {} beyond it\n", *t.bound, t.failed, plural(t.tensors, "output tensor"));
  else
    out += "  no bound (--max-ulp): every case passes\n";
  if (!t.worst.empty()) {
    out += "  worst elements:\n";
    for (const UlpElement& e : t.worst)
      out += fmt::format("    {:>6} ulps  {}[{}, {}]  exact {}  actual {}  ({})\n", ulps_text(e.ulps), e.tensor, e.row, e.col,
                         ulp_value_text(e.dtype, e.expected), ulp_value_text(e.dtype, e.actual), e.where);
  }
  return out;
}

}  // namespace nvfp4::compare
