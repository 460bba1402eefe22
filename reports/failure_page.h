// Turns a disagreement into its report page: explanation, case description, replay command.
#pragma once

#include <filesystem>
#include <string>

#include "cases/case_io.h"
#include "compare/compare.h"
#include "compare/explain.h"
#include "reports/report.h"

namespace nvfp4::reports {

// Writes dir/<stem>.html for the failing case `r` and returns the page's file name.
// `explanation` is compare::explain_comparison's; `case_file` is where the case is saved (for the
// replay command), empty when unsaved.
std::string write_failure_page(const std::filesystem::path& dir, const std::string& stem, const cases::CaseRecord& r,
                               const compare::Comparison& cmp, const compare::Explanation& explanation,
                               const std::string& backends, const std::filesystem::path& case_file);

}  // namespace nvfp4::reports
