#include "compare/producer_tensors.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace nvfp4::compare {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string names_of(const cases::TensorMap& m) {
  std::vector<std::string_view> names;
  for (const auto& [name, t] : m) names.push_back(name);
  return names.empty() ? std::string("no tensors") : fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::string RenamedTensors::label(const std::string& ours) const {
  const auto it = stored.find(ours);
  return it == stored.end() ? fmt::format("'{}'", ours) : fmt::format("'{}' (as {})", it->second, ours);
}

std::string RenamedTensors::stored_name(const std::string& ours) const {
  const auto it = stored.find(ours);
  return it == stored.end() ? ours : it->second;
}

RenamedTensors rename_tensors(const cases::TensorMap& file, const std::map<std::string, std::string>& renames,
                              std::string_view side) {
  RenamedTensors out;
  std::set<std::string> renamed;
  for (const auto& [ours, theirs] : renames) {
    const auto it = file.find(theirs);
    if (it == file.end())
      fail("check", ErrorCode::E_UNSUPPORTED, "--map {}={}: {} holds no tensor '{}' (it holds: {})", ours, theirs, side, theirs,
           names_of(file));
    out.tensors[ours] = it->second;
    if (ours != theirs) out.stored[ours] = theirs;
    renamed.insert(theirs);
  }
  for (const auto& [name, t] : file)
    if (!renamed.count(name) && !renames.count(name)) out.tensors[name] = t;
  return out;
}

io::Tensor as_reference_tensor(const io::Tensor& theirs, const io::Tensor& ref, const std::string& label,
                               const std::optional<std::vector<std::int64_t>>& unpadded, ErrorCode shape_code,
                               std::vector<std::string>& notes) {
  io::Tensor t = theirs;
  if (t.dtype != ref.dtype) {
    const bool byte_tensor = ref.dtype == io::DType::U8 && io::dtype_size(t.dtype) == 1 && t.dtype != io::DType::BOOL;
    if (!byte_tensor)
      fail("check", ErrorCode::E_DTYPE, "their {} is {}; the reference writes {}{}", label, io::dtype_name(t.dtype),
           io::dtype_name(ref.dtype), ref.dtype == io::DType::U8 ? " (or another 1-byte dtype: I8, F8_E4M3, F8_E5M2)" : "");
    notes.push_back(
        fmt::format("their {} is {}: its bytes are compared as the reference's U8 bytes", label, io::dtype_name(t.dtype)));
    t.dtype = ref.dtype;
  }
  if (t.shape == ref.shape) return t;
  if (!unpadded || t.shape != *unpadded)
    fail("check", shape_code, "their {} is {} {}; the reference's is {} {}{}", label, io::dtype_name(theirs.dtype),
         shape_text(t.shape), io::dtype_name(ref.dtype), shape_text(ref.shape),
         unpadded ? fmt::format(" (or {} without the padding of the compact layout)", shape_text(*unpadded)) : "");
  // The unpadded [rows, cols] matrix goes into the top-left corner of the reference's padded one.
  const std::int64_t rows = (*unpadded)[0], cols = (*unpadded)[1], padded_cols = ref.shape[1];
  io::Tensor full = ref;
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(t.bytes.begin() + r * cols, cols, full.bytes.begin() + r * padded_cols);
  notes.push_back(fmt::format("their {} {} is the compact layout without padding: compared on its {}x{} entries", label,
                              shape_text(t.shape), rows, cols));
  return full;
}

}  // namespace nvfp4::compare
