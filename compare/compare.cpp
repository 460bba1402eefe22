#include "compare/compare.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace nvfp4::compare {
namespace {

constexpr std::array<std::pair<Verdict, std::string_view>, 7> kVerdictNames = {{
    {Verdict::kAgree, "agree"},
    {Verdict::kMismatch, "mismatch"},
    {Verdict::kError, "error"},
    {Verdict::kSchema, "schema"},
    {Verdict::kProtocol, "protocol"},
    {Verdict::kTimeout, "timeout"},
    {Verdict::kCrash, "crash"},
}};

Verdict fault_verdict(cases::FaultKind k) {
  switch (k) {
    case cases::FaultKind::kCrash:
      return Verdict::kCrash;
    case cases::FaultKind::kTimeout:
      return Verdict::kTimeout;
    case cases::FaultKind::kProtocol:
      return Verdict::kProtocol;
  }
  return Verdict::kCrash;
}

std::string said(std::string_view backend, const cases::Outcome& o) {
  if (o.fault) return fmt::format("{}: {}: {}", backend, cases::fault_kind_name(*o.fault), o.message);
  return fmt::format("{}: {}", backend, o.rejected ? o.message : "ran");
}

// Outputs of one schema in ulp mode: floating-point tensors pass within the bound, the others only
// when their bits are equal.
Comparison with_tolerance(Comparison r, const CompareMode& mode) {
  r.ulp = ulp_reports(r.expected, r.actual, mode.max_ulp);
  std::string problem;
  for (const UlpReport& u : r.ulp)
    if (problem.empty()) problem = u.problem();
  for (const TensorDiff& d : r.diffs)
    if (problem.empty() && !has_ulps(r.expected.at(d.tensor).dtype)) problem = describe({d});
  r.agree = problem.empty();
  r.verdict = r.agree ? Verdict::kAgree : Verdict::kMismatch;
  r.problem = problem.substr(0, problem.find('\n'));
  return r;
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  for (const auto& [verdict, name] : kVerdictNames)
    if (verdict == v) return name;
  return "?";
}

Comparison compare_outcomes(std::string_view expected, cases::Outcome e, std::string_view actual, cases::Outcome a,
                            const CompareMode& mode) {
  Comparison r;
  if (e.fault || a.fault) {
    r.verdict = fault_verdict(a.fault ? *a.fault : *e.fault);
    r.problem = a.fault ? said(actual, a) : said(expected, e);
    return r;
  }
  if (e.rejected || a.rejected) {
    r.agree = e.rejected && a.rejected && (e.any_code || a.any_code || e.code == a.code);
    r.verdict = r.agree ? Verdict::kAgree : Verdict::kError;
    if (!r.agree) r.problem = said(expected, e) + "; " + said(actual, a);
    return r;
  }
  r.expected = std::move(e.outputs);
  r.actual = std::move(a.outputs);
  r.diffs = diff_outputs(r.expected, r.actual);
  // A tensor missing, extra, or of another dtype or shape: the outputs' schema differs.
  const bool schema = std::any_of(r.diffs.begin(), r.diffs.end(), [](const TensorDiff& d) { return !d.problem.empty(); });
  if (mode.ulp && !schema) return with_tolerance(std::move(r), mode);
  r.agree = r.diffs.empty();
  if (r.agree) {
    r.verdict = Verdict::kAgree;
    return r;
  }
  r.verdict = schema ? Verdict::kSchema : Verdict::kMismatch;
  const std::string d = describe(r.diffs);
  r.problem = d.substr(0, d.find('\n'));
  return r;
}

Comparison compare_backends(const cases::Case& c, cases::Backend& expected, cases::Backend& actual, const CompareMode& mode) {
  cases::Outcome e = cases::run_outcome(expected, c), a = cases::run_outcome(actual, c);
  return compare_outcomes(expected.name(), std::move(e), actual.name(), std::move(a), compare_mode_for(mode, c.op));
}

}  // namespace nvfp4::compare
