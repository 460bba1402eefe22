#include "reports/failure_page.h"

#include <fmt/format.h>

namespace nvfp4 {

std::string write_failure_page(const std::filesystem::path& dir, const std::string& stem, const CaseRecord& r,
                               const Comparison& cmp, const std::string& backends, const std::filesystem::path& case_file) {
  FailureReport page;
  page.title = fmt::format("{} {}: {}", r.c.op, case_profile_name(r.c), cmp.problem);
  page.case_description = describe_case(r).dump(2);
  page.replay_command = case_file.empty() ? "(case not saved)" : "nvfp4-verify replay " + case_file.string();
  page.backends = backends;
  page.c = r.c;
  page.diffs = cmp.diffs;
  if (!cmp.expected.empty() && !cmp.actual.empty()) page.explanation = explain(r.c, cmp.expected, cmp.actual);
  else page.explanation.verdict = cmp.problem;
  const std::string name = stem + ".html";
  write_page(dir, name, render_failure(page));
  return name;
}

}  // namespace nvfp4
