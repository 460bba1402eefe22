// `nvfp4-verify replay PATH... [--backends A,B] [--report DIR] [--max-cases N] [--compare ulp
// [--max-ulp N]]`: runs every case file under the paths on two backends and compares their outputs
// bit for bit (NaN == NaN), or GEMM outputs by ULP distance (then only GEMM cases replay).
// Exit 0 when every case agrees, 1 when some case differs, 2 for bad paths or unreadable case
// files (reported one line each on stderr; the other cases still run).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/corpus.h"
#include "cases/registry.h"
#include "cli/backends.h"
#include "cli/commands.h"
#include "cli/compare_options.h"
#include "cli/replay_report.h"
#include "compare/compare.h"
#include "compare/corpus_replay.h"
#include "io/output_path.h"
#include "reports/failure_page.h"
#include "reports/report.h"

namespace nvfp4::cli {
namespace {

namespace fs = std::filesystem;

struct ReplayArgs {
  std::vector<std::string> paths;
  std::string backends;
  std::string report;
  std::size_t max_cases = 0;  // 0: all
  ExternalOptions external;
  CompareArgs compare;
};

// The message with which a backend rejects c (both backends agreed on rejecting it).
std::string rejection(const cases::Case& c, cases::Backend& b) {
  try {
    b.run(c);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "?";
}

// The case files under the paths, sorted, without duplicates, at most --max-cases. A bad path is
// an error (counted in `errors`), but the other paths still replay.
std::vector<fs::path> case_files(const ReplayArgs& args, int& errors) {
  std::vector<fs::path> files;
  for (const std::string& p : args.paths) {
    try {
      for (fs::path& f : cases::collect_case_files({fs::path(p)})) files.push_back(std::move(f));
    } catch (const io::FormatError& e) {
      fmt::print(stderr, "nvfp4-verify: replay: {}\n", e.what());
      ++errors;
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (args.max_cases && files.size() > args.max_cases) {
    fmt::print("replay: {} case files found, replaying the first {} (--max-cases)\n", files.size(), args.max_cases);
    files.resize(args.max_cases);
  }
  if (files.empty() && !errors) fmt::print("replay: no case files (*.safetensors) under {}\n", fmt::join(args.paths, ", "));
  return files;
}

// Prints a file that was not compared (unreadable, not a GEMM under --compare ulp, outside an
// external backend's declaration) and returns true; an unreadable one is a failed summary entry.
bool print_unreplayed(const compare::ReplayedFile& f, reports::Summary& summary) {
  const std::string file = f.file.string();
  switch (f.kind) {
    case compare::ReplayedFile::Kind::kUnreadable:
      fmt::print(stderr, "nvfp4-verify: replay: {}\n", f.problem);
      fmt::print("ERROR {}  unreadable case file (see stderr)\n", file);
      std::fflush(stdout);
      summary.entries.push_back({file, "", "", false, fmt::format("unreadable: {}", f.problem), ""});
      return true;
    case compare::ReplayedFile::Kind::kNotGemm:
      fmt::print("SKIP  {}  {}  (not a GEMM operation: --compare ulp compares GEMM outputs only)\n", file,
                 cases::case_label(f.record.c));
      return true;
    case compare::ReplayedFile::Kind::kOutside:
      fmt::print("SKIP  {}  {}  ({})\n", file, cases::case_label(f.record.c), f.problem);
      return true;
    default:
      return false;
  }
}

int replay(const ReplayArgs& args) {
  if (!args.report.empty()) io::prepare_output_directory(args.report, "--report");
  const auto [a_name, b_name] = args.backends.empty() ? default_backends() : parse_backends(args.backends);
  const std::unique_ptr<cases::Backend> a = make_backend(a_name, args.external), b = make_backend(b_name, args.external);
  const std::string why = device_unavailable();
  if (args.backends.empty() && !why.empty())
    fmt::print("replay: {} vs {} (no device backend: {})\n", a_name, b_name, why);
  else
    fmt::print("replay: {} vs {}\n", a_name, b_name);
  std::fflush(stdout);

  int errors = 0;
  const std::vector<fs::path> files = case_files(args, errors);
  const ReplayRun run{
      "replay", fmt::format("replay of {}", fmt::join(args.paths, " ")), a_name, *a, *b, compare_mode(args.compare), args.report};
  return replay_and_report(run, compare::case_file_sources(files), errors);
}

}  // namespace

int replay_and_report(const ReplayRun& run, const std::vector<compare::ReplaySource>& sources, int errors) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string backends_text = fmt::format("{} vs {}", run.expected_name, run.actual.name());
  cases::Backend& a = run.expected;
  cases::Backend& b = run.actual;
  const compare::CompareMode& mode = run.mode;
  reports::Summary summary;
  summary.title = run.title;
  summary.backends = backends_text;
  std::set<std::string> page_names;
  const auto outside = [&](const cases::Case& c) { return outside_backends(c, a, b); };
  const compare::ReplayTally tally =
      compare::replay(sources, run.expected_name, a, b, mode, outside, [&](const compare::ReplayedFile& f) {
        if (print_unreplayed(f, summary)) return;
        const fs::path& file = f.file;
        const std::string label = cases::case_label(f.record.c);
        const cases::CaseRecord& rec = f.record;
        const compare::Comparison& cmp = f.comparison;
        std::string detail = cmp.problem;
        if (cmp.agree && cmp.expected.empty() && cmp.actual.empty()) detail = "both reject: " + rejection(rec.c, a);
        if (cmp.agree)
          for (const compare::UlpReport& u : cmp.ulp) detail += (detail.empty() ? "" : "; ") + u.brief();
        reports::SummaryEntry entry{file.string(),
                                    rec.c.op,
                                    cases::case_profile_name(rec.c),
                                    cmp.agree,
                                    label + (detail.empty() ? "" : "  " + detail),
                                    ""};
        if (cmp.agree) {
          fmt::print("PASS  {}  {}{}\n", file.string(), label, detail.empty() ? "" : "  (" + detail + ")");
        } else {
          // A case a campaign saved says how it failed then; replay says whether it fails the same way.
          const std::string verdict = std::string(compare::verdict_name(cmp.verdict));
          const std::string saved = rec.found.empty() ? "" : rec.found == verdict ? ", as saved" : ", saved as " + rec.found;
          const compare::Explanation x = compare::explain_comparison(rec.c, cmp);
          fmt::print("FAIL  {}  {}  [{}{}] {}\n      verdict: {}\n", file.string(), label, verdict, saved, detail, x.verdict);
          entry.detail += ". " + x.verdict;
          if (!run.report.empty()) {
            std::string stem = compare::source_stem(file);
            for (int n = 2; page_names.count(stem); ++n) stem = fmt::format("{}-{}", compare::source_stem(file), n);
            page_names.insert(stem);
            try {
              entry.report_link = reports::write_failure_page(run.report, stem, rec, cmp, x, backends_text, file);
            } catch (const std::exception& e) {
              fmt::print(stderr, "nvfp4-verify: {}: cannot write the report page of {}: {}\n", run.command, file.string(),
                         e.what());
              ++errors;
            }
          }
        }
        std::fflush(stdout);
        summary.entries.push_back(std::move(entry));
      });
  errors += int(tally.unreadable);
  const std::size_t passed = tally.agreed, failed = tally.differed, skipped = tally.outside, not_gemm = tally.not_gemm;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (mode.ulp) {
    fmt::print("{}", compare::describe_ulp_totals(tally.ulp));
    summary.ulp = tally.ulp;
  }

  if (!run.report.empty()) {
    reports::write_page(run.report, "index.html", reports::render_summary(summary));
    fmt::print("{}: report written to {}\n", run.command, (fs::path(run.report) / "index.html").string());
  }
  std::string skips = skipped ? fmt::format(", {} skipped (outside an external backend's declaration)", skipped) : "";
  if (not_gemm) skips += fmt::format(", {} skipped (not GEMM operations)", not_gemm);
  if (errors)
    fmt::print("{}: {} passed, {} failed{}, {} unreadable or missing\n", run.command, passed, failed, skips, errors);
  else
    fmt::print("{}: {} passed, {} failed{}\n", run.command, passed, failed, skips);
  return errors ? 2 : failed ? 1 : 0;
}

void register_replay(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Replay case files (or directories of them) on two backends and compare bit for bit (or GEMM outputs by ULP distance)");
  cmd->add_option("paths", a->paths, "case files (*.safetensors) or directories searched recursively")->required();
  cmd->add_option("--backends", a->backends, backends_option_help());
  add_external_options(cmd, a->external);
  add_compare_options(cmd, a->compare);
  cmd->add_option("--report", a->report, "write an HTML report (index.html and one page per failure) into this directory");
  cmd->add_option("--max-cases", a->max_cases, "replay at most the first N case files (sorted by path)")
      ->check(CLI::PositiveNumber);
  cmd->callback([a, &exit_code] { exit_code = replay(*a); });
}

}  // namespace nvfp4::cli
