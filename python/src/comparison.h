// Outputs given from Python against the reference's, for nvfp4_verify.testing.assert_matches.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cases/case.h"

namespace nvfp4::python {

// Runs the reference on c and compares `actual` with its outputs bit for bit: agreement, verdict,
// case label, each differing tensor and, for a mismatch, the explanation's essentials (first
// mismatching elements and blocks, classification counts, verdict). When report_dir is not empty
// it writes the failure page report_dir/<report_stem>.html and adds its path as "report".
nlohmann::json compare_with_reference(const cases::Case& c, cases::TensorMap actual, const std::filesystem::path& report_dir,
                                      const std::string& report_stem);

}  // namespace nvfp4::python
