#include "cli/campaign_report.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "reports/failure_page.h"

namespace nvfp4::cli {

double parse_duration(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit = end ? std::string(end) : "";
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (end == text.c_str() || scale < 0 || !(v >= 0))
    throw UsageError(fmt::format("duration '{}' is not like 60s, 2m, 90 or 1.5h", text));
  return v * scale;
}

std::function<void(const fuzz::CampaignProgress&)> terminal_progress() {
  if (!isatty(fileno(stderr))) return {};
  auto last = std::make_shared<double>(-1);
  return [last](const fuzz::CampaignProgress& p) {
    if (p.seconds - *last < 0.25) return;
    *last = p.seconds;
    fmt::print(stderr, "\r  {} cases  {:.1f} cases/s  {} failures  {:.0f} s   ", p.cases, p.cases / std::max(p.seconds, 1e-9),
               p.failures, p.seconds);
  };
}

void state_space(const std::string& command, fuzz::CaseSpace space, const cases::Backend& expected, const cases::Backend& actual,
                 reports::Summary& summary) {
  space.declarations = {expected.declaration(), actual.declaration()};
  if (!expected.declaration() && !actual.declaration()) {
    const std::string all =
        fmt::format("{}, every parameter and profile{}",
                    space.ops.empty() ? "every operation" : fmt::format("{}", fmt::join(space.ops, ", ")),
                    space.profiles.empty() ? "" : fmt::format(" (profiles {})", fmt::join(space.profiles, ", ")));
    fmt::print("{}: space: {}\n", command, all);
    summary.facts.emplace_back("space", all);
    return;
  }
  for (const std::string& line : fuzz::describe_space(space)) {
    fmt::print("{}: space: {}\n", command, line);
    summary.facts.emplace_back("space", line);
  }
}

void print_campaign_summary(const fuzz::CampaignResult& r, const std::string& backends) {
  if (isatty(fileno(stderr))) fmt::print(stderr, "\n");
  fmt::print("campaign ({}): {} cases in {:.1f} s, {:.1f} cases/s, {} failures\n", backends, r.cases, r.seconds,
             r.cases / std::max(r.seconds, 1e-9), r.failures.size());
  print_operation_table(r.per_operation);
  for (const fuzz::CampaignFailure& f : r.failures)
    fmt::print("  FAIL {} {} after {} cases: {}\n       verdict: {}\n       saved {}\n", f.shrunk.c.op,
               cases::case_profile_name(f.shrunk.c), f.cases_to_detection, f.comparison.problem, f.explanation.verdict,
               f.saved.empty() ? "(not saved)" : f.saved.string());
}

void print_operation_table(const std::map<std::string, fuzz::OperationStats>& per_operation) {
  fmt::print("  {:<22} {:>8} {:>10} {:>9}\n", "operation", "cases", "cases/s", "failures");
  for (const auto& [op, s] : per_operation)
    fmt::print("  {:<22} {:>8} {:>10.1f} {:>9}\n", op, s.cases, s.cases / std::max(s.seconds, 1e-9), s.failures);
}

void count_generated(const std::map<std::string, fuzz::OperationStats>& per_operation, reports::Summary& summary) {
  for (const auto& [op, st] : per_operation) {
    reports::GeneratedCases& g = summary.generated[op];
    g.cases += st.cases;
    g.failed += st.failures;
  }
}

std::vector<std::string> report_failures(const fuzz::CampaignResult& r, const std::string& backends,
                                         const std::filesystem::path& dir, reports::Summary& summary) {
  std::vector<std::string> pages;
  for (std::size_t i = 0; i < r.failures.size(); ++i) {
    const fuzz::CampaignFailure& f = r.failures[i];
    const std::string stem = f.saved.empty() ? fmt::format("failure-{}", i) : f.saved.stem().string();
    reports::SummaryEntry e;
    e.name = f.saved.empty() ? stem : f.saved.filename().string();
    e.operation = f.shrunk.c.op;
    e.profile = cases::case_profile_name(f.shrunk.c);
    e.passed = false;
    e.generated = true;
    e.detail = f.comparison.problem + ". " + f.explanation.verdict;
    e.report_link = reports::write_failure_page(dir, stem, f.shrunk, f.comparison, f.explanation, backends, f.saved);
    pages.push_back(e.report_link);
    summary.entries.push_back(std::move(e));
  }
  return pages;
}

reports::JunitSuite campaign_suite(const fuzz::CampaignRecord& r, const std::string& name, const std::filesystem::path& dir) {
  reports::JunitSuite suite{name, name, {}};
  for (const auto& [op, s] : r.per_operation) {
    std::string failure;
    for (const fuzz::FailureRecord& f : r.failures)
      if (f.operation == op)
        failure += f.problem + ". " + f.explanation +
                   (f.case_file.empty() ? " (not saved); " : " (saved " + (dir / f.case_file).string() + "); ");
    suite.cases.push_back({op + " (" + std::to_string(s.cases) + " cases)", s.seconds, failure});
  }
  return suite;
}

}  // namespace nvfp4::cli
