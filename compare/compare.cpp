#include "compare/compare.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace nvfp4 {
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

Verdict fault_verdict(FaultKind k) {
  switch (k) {
    case FaultKind::kCrash: return Verdict::kCrash;
    case FaultKind::kTimeout: return Verdict::kTimeout;
    case FaultKind::kProtocol: return Verdict::kProtocol;
  }
  return Verdict::kCrash;
}

std::string said(std::string_view backend, const Outcome& o) {
  if (o.fault) return fmt::format("{}: {}: {}", backend, fault_kind_name(*o.fault), o.message);
  return fmt::format("{}: {}", backend, o.rejected ? o.message : "ran");
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  for (const auto& [verdict, name] : kVerdictNames)
    if (verdict == v) return name;
  return "?";
}

std::optional<Verdict> verdict_from_name(std::string_view name) {
  for (const auto& [verdict, n] : kVerdictNames)
    if (n == name) return verdict;
  return std::nullopt;
}

Comparison compare_outcomes(std::string_view expected, Outcome e, std::string_view actual, Outcome a) {
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
  r.agree = r.diffs.empty();
  if (r.agree) {
    r.verdict = Verdict::kAgree;
    return r;
  }
  // A tensor missing, extra, or of another dtype or shape: the outputs' schema differs.
  const bool schema = std::any_of(r.diffs.begin(), r.diffs.end(), [](const TensorDiff& d) { return !d.problem.empty(); });
  r.verdict = schema ? Verdict::kSchema : Verdict::kMismatch;
  const std::string d = describe(r.diffs);
  r.problem = d.substr(0, d.find('\n'));
  return r;
}

Comparison compare_backends(const Case& c, Backend& expected, Backend& actual) {
  Outcome e = run_outcome(expected, c), a = run_outcome(actual, c);
  return compare_outcomes(expected.name(), std::move(e), actual.name(), std::move(a));
}

}  // namespace nvfp4
