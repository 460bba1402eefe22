#include "compare/diff.h"

#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace nvfp4::compare {
namespace {

// Bits of element i, and whether it is a NaN of a floating-point dtype.
struct Element {
  std::uint64_t bits;
  bool nan;
};

Element element(const io::Tensor& t, std::size_t i) {
  const std::size_t size = io::dtype_size(t.dtype);
  std::uint64_t bits = 0;
  std::memcpy(&bits, t.bytes.data() + i * size, size);
  bool nan = false;
  switch (t.dtype) {
    case io::DType::F32:
      nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
      break;
    case io::DType::BF16:
      nan = (bits & 0x7FFFu) > 0x7F80u;
      break;
    case io::DType::F16:
      nan = (bits & 0x7FFFu) > 0x7C00u;
      break;
    case io::DType::F64:
      nan = (bits & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
      break;
    default:
      break;
  }
  return {bits, nan};
}

std::string hex(const io::Tensor& t, std::uint64_t bits) { return fmt::format("0x{:0{}X}", bits, 2 * io::dtype_size(t.dtype)); }

}  // namespace

bool same_element(const io::Tensor& a, const io::Tensor& b, std::size_t i) {
  const Element x = element(a, i), y = element(b, i);
  return x.bits == y.bits || (x.nan && y.nan);
}

std::vector<TensorDiff> diff_outputs(const cases::TensorMap& expected, const cases::TensorMap& actual) {
  std::vector<TensorDiff> diffs;
  auto problem = [&](const std::string& name, std::string text) {
    TensorDiff d;
    d.tensor = name;
    d.problem = std::move(text);
    diffs.push_back(std::move(d));
  };
  for (const auto& [name, e] : expected) {
    const auto it = actual.find(name);
    if (it == actual.end()) {
      problem(name, "missing in actual");
      continue;
    }
    const io::Tensor& a = it->second;
    if (a.dtype != e.dtype || a.shape != e.shape) {
      problem(name, fmt::format("expected {} [{}], actual {} [{}]", io::dtype_name(e.dtype), fmt::join(e.shape, ", "),
                                io::dtype_name(a.dtype), fmt::join(a.shape, ", ")));
      continue;
    }
    TensorDiff d;
    d.tensor = name;
    for (std::int64_t i = 0; i < e.numel(); ++i) {
      if (same_element(e, a, std::size_t(i))) continue;
      const Element x = element(e, i), y = element(a, i);
      if (d.mismatches++ == 0) {
        d.first_index = i;
        d.first_expected = hex(e, x.bits);
        d.first_actual = hex(a, y.bits);
      }
    }
    if (d.mismatches) diffs.push_back(d);
  }
  for (const auto& [name, a] : actual)
    if (!expected.count(name)) problem(name, "unexpected in actual");
  return diffs;
}

std::string describe(const std::vector<TensorDiff>& diffs) {
  std::string out;
  for (const TensorDiff& d : diffs) {
    if (!d.problem.empty())
      out += fmt::format("{}: {}\n", d.tensor, d.problem);
    else
      out += fmt::format("{}: {} elements differ; first at flat index {}: expected {}, actual {}\n", d.tensor, d.mismatches,
                         d.first_index, d.first_expected, d.first_actual);
  }
  return out;
}

}  // namespace nvfp4::compare
