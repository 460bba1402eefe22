#include "reports/failure_page.h"

#include <fmt/format.h>

namespace nvfp4::reports {

std::string write_failure_page(const std::filesystem::path& dir, const std::string& stem, const cases::CaseRecord& r,
                               const compare::Comparison& cmp, const compare::Explanation& explanation,
                               const std::string& backends, const std::filesystem::path& case_file) {
  FailureReport page;
  page.title = fmt::format("{} {}: {}", r.c.op, cases::case_profile_name(r.c), cmp.problem);
  page.case_description = cases::describe_case(r).dump(2);
  page.replay_command = case_file.empty() ? "(case not saved)" : "nvfp4-verify replay " + case_file.string();
  if (!case_file.empty() && !cmp.ulp.empty())  // found by ULP distance: replayed the same way
    page.replay_command +=
        cmp.ulp.front().bound ? fmt::format(" --compare ulp --max-ulp {}", *cmp.ulp.front().bound) : " --compare ulp";
  page.backends = backends;
  page.c = r.c;
  page.diffs = cmp.diffs;
  // A GEMM's bitwise mismatch shows its ULP distances too (compared bitwise, it has none yet).
  page.ulp = cmp.ulp.empty() && compare::is_gemm_operation(r.c.op) ? compare::ulp_reports(cmp.expected, cmp.actual, std::nullopt)
                                                                   : cmp.ulp;
  page.explanation = explanation;
  const std::string name = stem + ".html";
  write_page(dir, name, render_failure(page));
  return name;
}

}  // namespace nvfp4::reports
