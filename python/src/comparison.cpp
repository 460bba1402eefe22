#include "comparison.h"

#include <algorithm>

#include "cases/case_io.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/compare.h"
#include "compare/explain.h"
#include "reports/failure_page.h"

namespace nvfp4::python {
namespace {

using nlohmann::json;

// How many mismatching elements and traced blocks the JSON lists: enough for a message, small.
constexpr std::size_t kListed = 16;

json diffs_json(const std::vector<compare::TensorDiff>& diffs) {
  json a = json::array();
  for (const compare::TensorDiff& d : diffs)
    a.push_back({{"tensor", d.tensor},
                 {"problem", d.problem},
                 {"mismatches", d.mismatches},
                 {"first_index", d.first_index},
                 {"first_expected", d.first_expected},
                 {"first_actual", d.first_actual}});
  return a;
}

json explanation_json(const compare::Explanation& x) {
  json kinds = json::array(), mismatches = json::array(), blocks = json::array(), traces = json::array(), rht = json::array();
  for (const auto& [kind, count] : x.kind_counts)
    kinds.push_back({{"kind", compare::mismatch_kind_name(kind)}, {"count", count}});
  for (std::size_t i = 0; i < std::min(kListed, x.mismatches.size()); ++i) {
    const compare::ElementMismatch& m = x.mismatches[i];
    mismatches.push_back({{"tensor", m.tensor},
                          {"row", m.row},
                          {"col", m.col},
                          {"input_bits", m.input_bits},
                          {"expected", m.expected},
                          {"actual", m.actual},
                          {"kind", compare::mismatch_kind_name(m.kind)}});
  }
  // The first mismatching block of each stored tensor, row-major.
  for (const compare::Explanation::BlockMap& m : x.maps) {
    const auto it = std::find(m.mismatching.begin(), m.mismatching.end(), 1);
    if (it == m.mismatching.end()) continue;
    const std::int64_t i = it - m.mismatching.begin();
    blocks.push_back({{"tensor", m.tensor}, {"row", i / m.blocks}, {"block", i % m.blocks}});
  }
  for (std::size_t i = 0; i < std::min(kListed, x.traces.size()); ++i) {
    const compare::BlockTrace& t = x.traces[i];
    traces.push_back({{"direction", t.direction},
                      {"row", t.row},
                      {"block", t.block},
                      {"global_amax", t.global_amax},
                      {"block_amax", t.block_amax},
                      {"scale_byte", t.scale_byte},
                      {"expected_codes", t.expected_codes},
                      {"actual_codes", t.actual_codes}});
  }
  for (std::size_t i = 0; i < std::min(kListed, x.rht_traces.size()); ++i) {
    const compare::RhtTrace& t = x.rht_traces[i];
    rht.push_back({{"tensor", t.tensor},
                   {"row", t.row},
                   {"col", t.col},
                   {"expected", t.expected},
                   {"actual", t.actual},
                   {"single_rounding", t.single_rounding}});
  }
  json causes = json::array();
  for (const compare::Explanation::Cause& c : x.causes)
    causes.push_back({{"name", c.name}, {"summary", c.summary}, {"exact", c.exact}});
  return {{"total_mismatches", x.total_mismatches},
          {"verdict", x.verdict},
          {"causes", std::move(causes)},
          {"tied", x.tied},
          {"ties", x.ties},
          {"kinds", std::move(kinds)},
          {"mismatches", std::move(mismatches)},
          {"blocks", std::move(blocks)},
          {"traces", std::move(traces)},
          {"rht_traces", std::move(rht)}};
}

}  // namespace

json compare_with_reference(const cases::Case& c, cases::TensorMap actual, const std::filesystem::path& report_dir,
                            const std::string& report_stem) {
  cases::Outcome e, a;
  e.outputs = cases::ReferenceBackend().run(c);  // a rejection propagates: the case itself is invalid
  a.outputs = std::move(actual);
  compare::Comparison cmp = compare::compare_outcomes("reference", std::move(e), "actual", std::move(a));
  json out = {{"agree", cmp.agree},
              {"verdict", compare::verdict_name(cmp.verdict)},
              {"label", cases::case_label(c)},
              {"problem", cmp.problem},
              {"diffs", diffs_json(cmp.diffs)}};
  if (cmp.agree) return out;
  // Only same-schema outputs are explained element by element; a schema difference is its own story.
  if (cmp.verdict != compare::Verdict::kMismatch) cmp.expected.clear();  // the page shows the schema problem
  const compare::Explanation x = compare::explain_comparison(c, cmp);
  if (cmp.verdict == compare::Verdict::kMismatch) out["explanation"] = explanation_json(x);
  if (!report_dir.empty()) {
    cases::CaseRecord record;
    record.c = c;
    record.origin = "nvfp4_verify.assert_matches";
    out["report"] =
        (report_dir / reports::write_failure_page(report_dir, report_stem, record, cmp, x, "reference vs actual", {})).string();
  }
  return out;
}

}  // namespace nvfp4::python
