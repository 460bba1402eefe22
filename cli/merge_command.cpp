// `nvfp4-verify merge`: the shards of one campaign (`fuzz --shard K/N --out DIR`) as one: their
// totals, their failures in round order, one report with every shard's failure pages, one JUnit
// file and one corpus. Every input is read and checked before any output is written.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/corpus.h"
#include "cli/campaign_report.h"
#include "cli/commands.h"
#include "fuzz/campaign_record.h"
#include "io/atomic_file.h"
#include "io/output_path.h"
#include "io/safetensors.h"
#include "reports/junit.h"

namespace nvfp4::cli {
namespace {

namespace fs = std::filesystem;

struct MergeArgs {
  std::vector<std::string> shards;
  std::string report, junit, corpus;
};

// Where a shard's pages go in the merged report.
std::string shard_folder(const fuzz::ShardRecord& s) { return fmt::format("shard-{}", s.record.shard); }

// Every file the records name that merge copies exists (and each case file is one), before
// anything is written.
void check_named_files(const fuzz::MergedCampaign& m, bool corpus) {
  for (const fuzz::MergedFailure& f : m.failures)
    for (const std::string& name : {corpus ? f.failure.case_file : std::string(), f.failure.page}) {
      std::error_code ec;
      if (!name.empty() && !fs::is_regular_file(f.shard->dir / name, ec))
        throw io::FormatError(fmt::format("{}: named by {}, is not a file", (f.shard->dir / name).string(),
                                          (f.shard->dir / fuzz::kCampaignRecordFile).string()));
      if (!name.empty() && name == f.failure.case_file) cases::load_case(f.shard->dir / name);
    }
}

// The summary page, counting every shard's cases, with every shard's failure pages copied beside
// it under shard-K/.
void write_report(const fuzz::MergedCampaign& m, const fs::path& dir) {
  const fuzz::CampaignIdentity& c = m.campaign;
  reports::Summary s{
      fmt::format("nvfp4-verify merge: {} shards, {} generated cases", c.shards, m.cases), c.backends, m.seconds_max, {}};
  s.facts = {{"shards", fmt::format("{}/{}", m.shards.size(), c.shards)},
             {"seed", std::to_string(c.seed)},
             {"limit", c.cases ? fmt::format("{} cases", *c.cases) : fmt::format("{:g} s", c.seconds.value_or(0))},
             {"operations", c.ops.empty() ? "all" : fmt::format("{}", fmt::join(c.ops, ", "))},
             {"profiles", c.profiles.empty() ? "all" : fmt::format("{}", fmt::join(c.profiles, ", "))},
             {"compare", c.compare},
             {"seconds", fmt::format("{:.1f} over the shards, {:.1f} the longest", m.seconds_sum, m.seconds_max)}};
  count_generated(m.per_operation, s);
  for (const fuzz::MergedFailure& f : m.failures) {
    reports::SummaryEntry e;
    e.name = f.failure.case_file.empty() ? fmt::format("round {}", f.failure.round)
                                         : fs::path(f.failure.case_file).filename().string();
    e.operation = f.failure.operation;
    e.profile = f.failure.profile;
    e.passed = false;
    e.generated = true;
    e.detail = fmt::format("{} (round {}, shard {})", f.failure.problem, f.failure.round, f.shard->record.shard);
    if (!f.failure.page.empty()) {
      const std::string page = fs::path(f.failure.page).filename().string();
      const fs::path folder = dir / shard_folder(*f.shard);
      std::error_code ec;
      fs::create_directories(folder, ec);
      if (ec) throw OutputError(fmt::format("--report {}: cannot create {}: {}", dir.string(), folder.string(), ec.message()));
      io::copy_file_atomic(f.shard->dir / f.failure.page, folder / page);
      e.report_link = shard_folder(*f.shard) + "/" + page;
    }
    s.entries.push_back(std::move(e));
  }
  reports::write_page(dir, "index.html", reports::render_summary(s));
}

void run(const MergeArgs& a, int& exit_code) {
  io::prepare_output_directory(a.report, "--report");
  if (!a.junit.empty()) io::prepare_output_file(a.junit, "--junit");
  if (!a.corpus.empty()) io::prepare_output_directory(a.corpus, "--corpus");
  const fuzz::MergedCampaign m = fuzz::merge_shards({a.shards.begin(), a.shards.end()});
  check_named_files(m, !a.corpus.empty());
  const fuzz::CampaignIdentity& c = m.campaign;
  fmt::print("merge ({}): {} shards of seed {}, {} cases, {} failures; {:.1f} s over the shards, {:.1f} s the longest\n",
             c.backends, c.shards, c.seed, m.cases, m.failures.size(), m.seconds_sum, m.seconds_max);
  print_operation_table(m.per_operation);
  for (const fuzz::MergedFailure& f : m.failures)
    fmt::print("  FAIL {} {} round {} (shard {}): {}\n", f.failure.operation, f.failure.profile, f.failure.round,
               f.shard->record.shard, f.failure.problem);
  for (const fuzz::ShardRecord& s : m.shards)
    if (s.record.failures.size() >= c.max_failures)
      fmt::print("merge: {} stopped at its limit of {} failures: its later rounds did not run\n", s.dir.string(), c.max_failures);
  if (!a.corpus.empty())
    for (const fuzz::MergedFailure& f : m.failures)
      if (!f.failure.case_file.empty()) cases::copy_case_file(f.shard->dir / f.failure.case_file, a.corpus);
  write_report(m, a.report);
  if (!a.junit.empty()) {
    std::vector<reports::JunitSuite> suites;
    for (const fuzz::ShardRecord& s : m.shards)
      suites.push_back(campaign_suite(s.record, fmt::format("campaign shard {}/{}", s.record.shard, c.shards), s.dir));
    reports::write_junit(a.junit, "nvfp4-verify merge", suites);
  }
  fmt::print("report: {}\n", (fs::path(a.report) / "index.html").string());
  exit_code = m.failures.empty() ? 0 : 1;
}

}  // namespace

void register_merge(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<MergeArgs>();
  CLI::App* cmd = app.add_subcommand("merge", "Merge the shards of one campaign (fuzz --shard K/N --out DIR) into one report");
  cmd->add_option("shards", a->shards, "every shard's fuzz --out directory, each shard once")->required();
  cmd->add_option("--report", a->report, "write the merged HTML report here (index.html and every shard's failure pages)")
      ->required();
  cmd->add_option("--junit", a->junit, "write one JUnit XML file holding every shard's suite");
  cmd->add_option("--corpus", a->corpus, "copy every shard's saved failing cases into this corpus directory");
  cmd->callback([a, &exit_code] { run(*a, exit_code); });
}

}  // namespace nvfp4::cli
