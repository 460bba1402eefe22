// A corpus is a directory of case files, one per case, named by a hash of the file's content.
// Writes are atomic, an existing file is never overwritten, and nothing is ever deleted.
#pragma once

#include <filesystem>
#include <vector>

#include "cases/case_io.h"

namespace nvfp4::cases {

// Saves r into dir (created if needed) as "case-<16 hex digits>.safetensors"; returns the path.
// Saving a case that is already there (same content) returns the existing path.
std::filesystem::path save_case(const std::filesystem::path& dir, const CaseRecord& r);

// Copies the case file `file` into dir as save_case would save its case, byte for byte (a campaign's
// saved cases gathered into one corpus). Throws io::FormatError when `file` is not a case file.
std::filesystem::path copy_case_file(const std::filesystem::path& file, const std::filesystem::path& dir);

// The case files named by `paths`: files as given, directories searched (recursively) for
// *.safetensors, sorted, de-duplicated. Throws io::FormatError for a path that does not exist.
std::vector<std::filesystem::path> collect_case_files(const std::vector<std::filesystem::path>& paths);

CaseRecord load_case(const std::filesystem::path& file);

}  // namespace nvfp4::cases
