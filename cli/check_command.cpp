// `nvfp4-verify check --input X --outputs THEIRS [--op quantize] [--profile P | --identify]
// [--map ours=theirs,...] [--param name=value ...] [--report DIR]`: checks outputs that another
// producer already wrote against the reference (compare/check.h, docs/guides/check.md). Exit 0 when they
// match (with --identify: when some profile matches bit for bit), 1 when they differ, 2 for bad
// input.
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/case_io.h"
#include "cases/registry.h"
#include "cli/commands.h"
#include "compare/check.h"
#include "compare/check_summary.h"
#include "io/output_path.h"
#include "reports/report.h"

namespace nvfp4::cli {
namespace {

namespace fs = std::filesystem;

struct CheckArgs {
  std::string input, outputs, op = "quantize", profile, report;
  bool identify = false;
  std::vector<std::string> renames, params;
};

std::pair<std::string, std::string> split_assignment(const std::string& text, const char* option, const char* form) {
  const std::size_t eq = text.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == text.size())
    throw UsageError(fmt::format("{}: '{}' is not {}", option, text, form));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

compare::CheckRequest request(const CheckArgs& a) {
  compare::CheckRequest r;
  r.op = a.op;
  for (const std::string& p : a.params) {
    auto [name, value] = split_assignment(p, "--param", "name=value");
    if (!r.params.emplace(name, value).second) throw UsageError(fmt::format("--param: '{}' is given twice", name));
  }
  if (!a.profile.empty() && !r.params.emplace("profile", a.profile).second)
    throw UsageError("--profile and --param profile=... are both given");
  for (const std::string& m : a.renames) {
    auto [ours, theirs] = split_assignment(m, "--map", "ours=theirs (e.g. data=weight_packed)");
    if (!r.renames.emplace(ours, theirs).second) throw UsageError(fmt::format("--map: '{}' is mapped twice", ours));
  }
  r.inputs = io::read_file(a.input).tensors;
  r.theirs = io::read_file(a.outputs).tensors;
  return r;
}

// The command that repeats the check with every parameter that is not at its default (inferred
// ones included), for the report.
std::string repeat_command(const CheckArgs& a, const cases::Case& c) {
  std::string s = fmt::format("nvfp4-verify check --input {} --outputs {} --op {}", a.input, a.outputs, c.op);
  if (!a.renames.empty()) s += fmt::format(" --map {}", fmt::join(a.renames, ","));
  for (const cases::ParamSpec& p : cases::operation(c.op).params)
    if (c.params.values().find(p.name)->second != p.default_value || p.name == "profile")
      s += fmt::format(" --param {}={}", p.name, c.params.display(p.name));
  return s;
}

// The failure page of r into dir; returns its file name.
std::string write_failure(const fs::path& dir, const CheckArgs& a, const compare::CheckResult& r, const compare::Explanation& e) {
  reports::FailureReport page;
  page.title = fmt::format("{}: {} differs from the reference", cases::case_label(r.c), a.outputs);
  cases::CaseRecord record;
  record.c = r.c;
  record.origin = "nvfp4-verify check";
  record.note = "outputs of " + a.outputs;
  page.case_description = cases::describe_case(record).dump(2);
  page.replay_command = repeat_command(a, r.c);
  page.backends = "reference vs " + a.outputs;
  page.c = r.c;
  page.diffs = r.diffs;
  page.explanation = e;
  reports::write_page(dir, "check.html", reports::render_failure(page));
  return "check.html";
}

// The summary page last, so that its link never points to a page not yet written.
void write_summary(const fs::path& dir, const CheckArgs& a, std::vector<reports::SummaryEntry> entries) {
  reports::Summary s;
  s.title = fmt::format("nvfp4-verify check of {}", a.outputs);
  s.backends = "reference vs " + a.outputs;
  s.entries = std::move(entries);
  reports::write_page(dir, "index.html", reports::render_summary(s));
  fmt::print("check: report written to {}\n", (dir / "index.html").string());
}

void print_notes(const compare::CheckResult& r) {
  for (const std::string& note : r.notes) fmt::print("check: {}\n", note);
}

int check(const CheckArgs& a) {
  const compare::CheckResult r = compare::check_outputs(request(a));
  print_notes(r);
  const compare::Explanation e = r.match() ? compare::Explanation{} : compare::explain_check(r);
  const std::string paragraph = compare::describe_check(r, e);
  fmt::print("{}\n", paragraph);
  if (!a.report.empty()) {
    reports::SummaryEntry entry{a.outputs, r.c.op, cases::case_profile_name(r.c), r.match(), paragraph, ""};
    if (!r.match()) entry.report_link = write_failure(a.report, a, r, e);
    write_summary(a.report, a, {entry});
  }
  return r.match() ? 0 : 1;
}

int identify(const CheckArgs& a) {
  const std::vector<compare::ProfileMatch> ranking = compare::identify_profile(request(a));
  const compare::CheckResult& best = *ranking.front().result;
  const std::vector<std::string> lines = compare::describe_identify(ranking);
  print_notes(best);
  for (const std::string& line : lines) fmt::print("{}\n", line);
  const compare::Explanation e = best.match() ? compare::Explanation{} : compare::explain_check(best);
  fmt::print("{}\n", compare::describe_check(best, e));
  if (!a.report.empty()) {
    std::vector<reports::SummaryEntry> entries;
    for (std::size_t i = 0; i < ranking.size(); ++i) {
      const compare::ProfileMatch& m = ranking[i];
      entries.push_back({"profile " + m.profile, a.op, m.profile, m.result && m.result->match(), lines[i], ""});
    }
    if (!best.match()) entries.front().report_link = write_failure(a.report, a, best, e);
    write_summary(a.report, a, entries);
  }
  return best.match() ? 0 : 1;
}

}  // namespace

void register_check(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand("check", "Check outputs another producer wrote against the reference, bit for bit");
  cmd->add_option("--input", a->input, "the inputs the producer was given (.safetensors)")->required();
  cmd->add_option("--outputs", a->outputs, "the producer's outputs (.safetensors)")->required();
  cmd->add_option("--op", a->op, "the operation (see `nvfp4-verify ops`)")->capture_default_str();
  CLI::Option* profile = cmd->add_option("--profile", a->profile, "numerics profile (see `nvfp4-verify profiles`)");
  cmd->add_flag("--identify", a->identify, "check under every profile and rank them by matching blocks")->excludes(profile);
  cmd->add_option("--map", a->renames, "reference tensor names to the files' names: data=weight_packed,scale=weight_scale")
      ->delimiter(',');
  cmd->add_option("--param", a->params, "an operation parameter, name=value (repeatable); the others are inferred or default");
  cmd->add_option("--report", a->report, "write an HTML report (index.html, and check.html for a mismatch) into this directory");
  cmd->callback([a, &exit_code] {
    if (!a->report.empty()) io::prepare_output_directory(a->report, "--report");
    exit_code = a->identify ? identify(*a) : check(*a);
    std::fflush(stdout);
  });
}

}  // namespace nvfp4::cli
