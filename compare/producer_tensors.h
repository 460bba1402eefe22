// Another producer's tensors read under the reference's names, dtypes and layouts, for `check`
// (docs/guides/check.md). Real producers store NVFP4 tensors under their own names (weight_packed,
// weight_scale), as other 1-byte dtypes (I8 packed data, F8_E4M3 scales) and scales without the
// 128x4 padding; this is the one place that bridges those differences, and it bridges only
// differences that keep every stored byte's meaning.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cases/case.h"
#include "reference/error.h"

namespace nvfp4::compare {

// Tensors keyed by the reference's names. A tensor that a rename names is used only under the
// reference name it is mapped to; the others keep their own names.
struct RenamedTensors {
  cases::TensorMap tensors;
  std::map<std::string, std::string> stored;  // reference name -> the file's name, where they differ

  // "'scale'" or "'weight_scale' (as scale)", for messages.
  std::string label(const std::string& ours) const;
  // The file's name of a tensor.
  std::string stored_name(const std::string& ours) const;
};

// `file`'s tensors under `renames` (reference name -> the file's name). Throws nvfp4::Error
// (E_UNSUPPORTED) when `file`, labelled `side` ("X", "THEIRS"), lacks a renamed tensor.
RenamedTensors rename_tensors(const cases::TensorMap& file, const std::map<std::string, std::string>& renames,
                              std::string_view side);

// `theirs` as the reference's tensor `ref` for comparison: the same bytes, and
// - a byte tensor of the reference (U8: packed codes, E4M3 scales) accepts any other 1-byte dtype
//   of theirs (I8, F8_E4M3, F8_E5M2), whose bytes it reinterprets;
// - where `unpadded` is given (a compact scale matrix), a tensor of that shape is the matrix
//   stored without its padding, which is filled from `ref` (padding that is not stored cannot
//   differ).
// Every other dtype or shape difference throws nvfp4::Error (E_DTYPE, or `shape_code`) naming
// `label`. Each reinterpretation or expansion adds a line to `notes`.
io::Tensor as_reference_tensor(const io::Tensor& theirs, const io::Tensor& ref, const std::string& label,
                               const std::optional<std::vector<std::int64_t>>& unpadded, ErrorCode shape_code,
                               std::vector<std::string>& notes);

}  // namespace nvfp4::compare
