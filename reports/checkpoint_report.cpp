#include "reports/checkpoint_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "cases/case_io.h"
#include "checkpoint/tensor_case.h"
#include "compare/diff.h"
#include "compare/explain.h"
#include "io/atomic_directory.h"
#include "reports/report.h"

namespace nvfp4::reports {
namespace {

namespace fs = std::filesystem;

// A page name for a module: its name with anything but [A-Za-z0-9._-] replaced.
std::string page_stem(const std::string& module) {
  std::string s = module;
  for (char& ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-')) ch = '_';
  return s;
}

// The kinds of mismatch the explanation found, most frequent first: "element tie flipped x 3, ...".
std::string kinds(const compare::Explanation& e) {
  std::vector<std::pair<compare::MismatchKind, std::size_t>> k = e.kind_counts;
  std::stable_sort(k.begin(), k.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [kind, n] : k) parts.push_back(fmt::format("{} x {}", compare::mismatch_kind_name(kind), n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::size_t mismatching_blocks(const compare::Explanation& e) {
  std::size_t n = 0;
  for (const auto& m : e.maps) n += std::size_t(std::count(m.mismatching.begin(), m.mismatching.end(), 1));
  return n;
}

void write_pages(const fs::path& dir, const checkpoint::HfCheckpoint& source, const checkpoint::HfCheckpoint& quantized,
                 const checkpoint::CheckpointFormat& f, const checkpoint::CheckpointCheck& c, const CheckpointReportInfo& info) {
  std::map<std::string, std::vector<std::string>> matching_under;  // --identify: module -> profiles
  for (const checkpoint::CheckpointCheck& p : info.identify)
    for (const checkpoint::TensorVerdict& v : p.tensors)
      if (v.match()) matching_under[v.module].push_back(p.profile);

  Summary s;
  s.title = fmt::format("nvfp4-verify check-checkpoint of {}", info.quantized);
  s.backends = "reference vs " + info.quantized;
  s.facts = {{"source", info.source}, {"quantized", info.quantized}, {"format", info.format}, {"profile", c.profile}};
  if (!info.identify.empty()) {
    std::vector<std::string> all;
    for (const checkpoint::CheckpointCheck& p : info.identify)
      if (p.mismatches() == 0) all.push_back(p.profile);
    s.facts.push_back({"identify", all.empty() ? fmt::format("no profile matches every tensor (best: {})", c.profile)
                                               : fmt::format("every tensor matches under {}", fmt::join(all, ", "))});
  }
  s.every_entry = true;
  for (const checkpoint::TensorVerdict& v : c.tensors) {
    SummaryEntry e{v.module, "quantize", c.profile, v.match(), "match", ""};
    if (!info.identify.empty() && matching_under.count(v.module))
      e.detail = fmt::format("match under {}", fmt::join(matching_under.at(v.module), ", "));
    if (!v.match() && !info.explanations.count(v.module)) {
      // 3-D expert weights ([E, N, K] stacked, or a BMM expert parameter [E, in, out] stored under
      // its own name): the verdict line says which experts differ; the block-level pages are built
      // for 2-D tensors.
      e.detail = fmt::format("{}{}; no block-level page for 3-D expert tensors", v.counts(),
                             v.fault.empty() ? "" : "; fault: " + v.fault);
    } else if (!v.match()) {
      const checkpoint::TensorCase tc = checkpoint::tensor_case(source, quantized, f, c.profile, v.module);
      FailureReport page;
      page.title = fmt::format("{}: {} differs from the reference", v.module, info.quantized);
      cases::CaseRecord record;
      record.c = tc.c;
      record.origin = "nvfp4-verify check-checkpoint";
      record.note = fmt::format("{} of {} (source {}.weight of {})", v.module, info.quantized, v.module, info.source);
      page.case_description = cases::describe_case(record).dump(2);
      page.replay_command = info.repeat_command;
      page.backends = "reference vs " + info.quantized;
      page.c = tc.c;
      page.diffs = compare::diff_outputs(tc.expected, tc.actual);
      page.explanation = info.explanations.at(v.module);
      std::vector<std::string> verdict;
      if (!page.explanation.verdict.empty()) verdict.push_back(page.explanation.verdict);
      if (!v.fault.empty()) verdict.push_back("checkpoint fault: " + v.fault);
      if (v.global_differs && !tc.expected.count("global_scale"))
        verdict.push_back("weight_scale_2 (the format's own global scale) differs");
      page.explanation.verdict = fmt::format("{}", fmt::join(verdict, "; "));

      std::vector<std::string> detail = {v.counts()};
      if (const std::size_t blocks = mismatching_blocks(page.explanation))
        detail.push_back(fmt::format("{} mismatching blocks", blocks));
      if (!page.explanation.kind_counts.empty()) detail.push_back(kinds(page.explanation));
      if (!v.fault.empty()) detail.push_back("fault: " + v.fault);
      if (!page.explanation.verdict.empty() && page.explanation.verdict != "checkpoint fault: " + v.fault)
        detail.push_back(page.explanation.verdict);
      if (!info.identify.empty() && matching_under.count(v.module))
        detail.push_back(fmt::format("matches under {}", fmt::join(matching_under.at(v.module), ", ")));
      e.detail = fmt::format("{}", fmt::join(detail, "; "));
      e.report_link = page_stem(v.module) + ".html";
      write_page(dir, e.report_link, render_failure(page));
    }
    s.entries.push_back(std::move(e));
  }
  write_page(dir, "index.html", render_summary(s));  // last: its links point to pages written
}

}  // namespace

fs::path write_checkpoint_report(const fs::path& dir, const checkpoint::HfCheckpoint& source,
                                 const checkpoint::HfCheckpoint& quantized, const checkpoint::CheckpointFormat& f,
                                 const checkpoint::CheckpointCheck& c, const CheckpointReportInfo& info) {
  io::AtomicDirectory out(dir);
  write_pages(out.path(), source, quantized, f, c, info);
  out.commit(io::AtomicDirectory::Existing::kReplace);
  fs::path target = dir;
  if (!target.has_filename()) target = target.parent_path();  // "DIR/" is DIR itself
  return target / "index.html";
}

CheckpointExplanations explain_checkpoint(const checkpoint::HfCheckpoint& source, const checkpoint::HfCheckpoint& quantized,
                                          const checkpoint::CheckpointFormat& f, const checkpoint::CheckpointCheck& c) {
  CheckpointExplanations out;
  for (const checkpoint::TensorVerdict& v : c.tensors) {
    if (v.match()) continue;
    const std::string weight = v.module + ".weight";
    const bool three_d = source.has(weight) ? source.info(weight).shape.size() != 2
                                            : source.has(v.module) && source.info(v.module).shape.size() == 3;
    if (three_d) continue;  // the verdict line says which experts differ
    const checkpoint::TensorCase tc = checkpoint::tensor_case(source, quantized, f, c.profile, v.module);
    out[v.module] = compare::explain(tc.c, tc.expected, tc.actual);
  }
  return out;
}

JunitSuite checkpoint_junit_suite(const checkpoint::CheckpointCheck& c, const CheckpointExplanations& explanations) {
  JunitSuite suite{fmt::format("check-checkpoint ({})", c.profile), "check-checkpoint", {}};
  for (const checkpoint::TensorVerdict& v : c.tensors) {
    std::string failure = v.match() ? "" : v.line();
    if (const auto x = explanations.find(v.module); x != explanations.end() && !x->second.verdict.empty())
      failure += ". " + x->second.verdict;
    suite.cases.push_back({v.module, std::nullopt, failure});
  }
  return suite;
}

}  // namespace nvfp4::reports
