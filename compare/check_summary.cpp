#include "compare/check_summary.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/registry.h"
#include "reference/layout.h"

namespace nvfp4::compare {
namespace {

constexpr std::size_t kListedDifferences = 4;  // of the first mismatching block

// A compared tensor (or an element of it: `index`) by its reference name, with THEIRS' name
// where that differs.
std::string tensor_name(const CheckResult& r, const std::string& ours, const std::string& index = "") {
  const auto it = r.stored_names.find(ours);
  return it == r.stored_names.end() ? ours + index : fmt::format("{}{} ('{}')", ours, index, it->second);
}

// The compared tensors in the order the registry lists the operation's outputs.
std::vector<std::string> compared_in_order(const CheckResult& r) {
  std::vector<std::string> names;
  for (const cases::TensorSpec& t : cases::operation(r.c.op).outputs)
    if (r.expected.count(std::string(t.name))) names.emplace_back(t.name);
  for (const auto& [name, t] : r.expected)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  return names;
}

std::string tensor_counts(const CheckResult& r) {
  std::vector<std::string> parts;
  for (const std::string& name : compared_in_order(r)) {
    const io::Tensor& t = r.expected.at(name);
    const auto d = std::find_if(r.diffs.begin(), r.diffs.end(), [&](const TensorDiff& x) { return x.tensor == name; });
    const char* unit = t.dtype == io::DType::U8 ? "bytes" : "elements";
    if (d == r.diffs.end())
      parts.push_back(fmt::format("{} matches", tensor_name(r, name)));
    else
      parts.push_back(fmt::format("{}: {} of {} {} differ", tensor_name(r, name), d->mismatches, t.numel(), unit));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

// "[3, 5]" for flat index 53 of a [.., 16] tensor.
std::string position(const std::vector<std::int64_t>& shape, std::size_t flat) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = std::int64_t(flat) % shape[d];
    flat /= std::size_t(shape[d]);
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

// The input elements of a copy's stored row and columns: x[row, cols] for the rowwise copy,
// x[cols, row] (or rht(x)'s) for the columnwise one.
std::string elements(const cases::Case& c, const std::string& suffix, std::int64_t row, const std::string& cols) {
  if (suffix.empty()) return fmt::format("x[{}, {}]", row, cols);
  const bool rht = c.params.has("rht") && c.params.flag("rht");
  return fmt::format("{}[{}, {}]", rht ? "rht(x)" : "x", cols, row);
}

std::string difference(const CheckResult& r, const ElementMismatch& m, const std::string& suffix, std::int64_t padded_cols) {
  const std::string_view kind = mismatch_kind_name(m.kind);
  if (m.tensor == "data" + suffix)
    return fmt::format("{} is code 0x{:X} in THEIRS, 0x{:X} in the reference ({})",
                       elements(r.c, suffix, m.row, std::to_string(m.col)), m.actual, m.expected, kind);
  std::string at = fmt::format("[{}, {}]", m.row, m.col);
  if (r.c.params.text("scale_layout") == "swizzled")
    at += fmt::format(" (byte {} of the swizzled layout)", swizzled_offset(m.row, m.col, padded_cols));
  return fmt::format("{} is 0x{:02X} in THEIRS, 0x{:02X} in the reference ({})", tensor_name(r, m.tensor, at), m.actual,
                     m.expected, kind);
}

// The first mismatching quantize block with its differences classified; "" when no block
// differs (only amax, global_scale or padding do).
std::string first_block(const CheckResult& r, const Explanation& e) {
  for (const Explanation::BlockMap& map : e.maps) {
    const auto flag = std::find(map.mismatching.begin(), map.mismatching.end(), 1);
    if (flag == map.mismatching.end()) continue;
    const std::int64_t i = flag - map.mismatching.begin(), row = i / map.blocks, j = i % map.blocks;
    const std::string suffix = map.tensor.substr(4), scale = "scale" + suffix;
    const std::int64_t padded_cols = r.reference.at(scale).shape.at(1);
    std::vector<std::string> listed;
    std::size_t count = 0;
    for (const ElementMismatch& m : e.mismatches)
      if (m.row == row && ((m.tensor == scale && m.col == j) || (m.tensor == map.tensor && m.col / 16 == j)))
        if (++count <= kListedDifferences) listed.push_back(difference(r, m, suffix, padded_cols));
    if (count > listed.size()) listed.push_back(fmt::format("{} more", count - listed.size()));
    return fmt::format("First mismatching block: row {}, block {} of {} and {} ({}): {}.", row, j, tensor_name(r, map.tensor),
                       tensor_name(r, scale), elements(r.c, suffix, row, fmt::format("{}:{}", 16 * j, 16 * j + 16)),
                       fmt::join(listed, "; "));
  }
  return "";
}

std::string first_element(const CheckResult& r) {
  const TensorDiff& d = r.diffs.front();
  return fmt::format("First difference: {} is {} in THEIRS, {} in the reference.",
                     tensor_name(r, d.tensor, position(r.expected.at(d.tensor).shape, d.first_index)), d.first_actual,
                     d.first_expected);
}

std::string kinds(const Explanation& e) {
  std::vector<std::string> parts;
  for (const auto& [kind, n] : e.kind_counts) parts.push_back(fmt::format("{} {}", mismatch_kind_name(kind), n));
  return parts.empty() ? "" : fmt::format(" Kinds: {}.", fmt::join(parts, ", "));
}

}  // namespace

std::string describe_check(const CheckResult& r, const Explanation& e) {
  const std::string label = cases::case_label(r.c);
  if (r.match())
    return fmt::format("{}: THEIRS matches the reference bit for bit ({}; {} blocks).", label, tensor_counts(r), r.blocks.total);
  std::string block = first_block(r, e);
  if (block.empty()) block = first_element(r);
  return fmt::format("{}: THEIRS differs from the reference ({}). {} of {} blocks match ({}). {}{}{}", label, tensor_counts(r),
                     r.blocks.matching, r.blocks.total, r.blocks.percent(), block, kinds(e),
                     e.verdict.empty() ? "" : " Explanation: " + e.verdict + ".");
}

std::vector<std::string> describe_identify(const std::vector<ProfileMatch>& ranking) {
  std::vector<std::string> lines;
  for (const ProfileMatch& m : ranking) {
    if (!m.result) {
      lines.push_back(fmt::format("{}: the reference rejects the case ({})", m.profile, m.rejection));
      continue;
    }
    const CheckResult& r = *m.result;
    std::vector<std::string> differing;
    for (const TensorDiff& d : r.diffs) differing.push_back(d.tensor);
    lines.push_back(fmt::format(
        "matches {} on {} of blocks ({} of {}){}", m.profile, r.blocks.percent(), r.blocks.matching, r.blocks.total,
        r.match()        ? std::string(", bit for bit")
        : r.blocks.all() ? fmt::format(", but {} {}", fmt::join(differing, ", "), differing.size() == 1 ? "differs" : "differ")
                         : std::string()));
  }
  return lines;
}

}  // namespace nvfp4::compare
