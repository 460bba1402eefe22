// `nvfp4-verify fuzz`: a campaign of generated cases on two backends.
#include <fmt/format.h>

#include "cases/registry.h"
#include "cli/backends.h"
#include "cli/campaign_report.h"
#include "cli/commands.h"
#include "cli/compare_options.h"
#include "fuzz/campaign_record.h"
#include "io/output_path.h"
#include "reference/profiles.h"
#include "reports/junit.h"

namespace nvfp4::cli {
namespace {

namespace fs = std::filesystem;

struct FuzzArgs {
  std::vector<std::string> ops, profiles;
  std::string time, backends, corpus = "corpora/found", report, junit, out, shard = "0/1";
  std::size_t cases = 0, max_dim = 256;
  std::uint64_t seed = 0;
  ExternalOptions external;
  JobOptions jobs;
  CompareArgs compare;
  std::vector<const CLI::Option*> held_by_out;  // --corpus, --report, --junit: --out holds them
};

std::pair<int, int> parse_shard(const std::string& text) {
  int k = -1, n = 0;
  char slash = 0;
  if (std::sscanf(text.c_str(), "%d%c%d", &k, &slash, &n) != 3 || slash != '/' || n < 1 || k < 0 || k >= n)
    throw UsageError(fmt::format("--shard '{}': expected K/N with 0 <= K < N", text));
  return {k, n};
}

// Where the campaign's outputs go: --corpus, --report and --junit as given, or every one of them
// in --out DIR with campaign.json, the shard's record for `merge`.
struct FuzzOutputs {
  fs::path out, corpus, report, junit;
};

// The outputs, checked before any work (nothing is created yet).
FuzzOutputs check_outputs(const FuzzArgs& a) {
  if (a.out.empty()) {
    if (!a.corpus.empty()) io::prepare_output_directory(a.corpus, "--corpus");
    if (!a.report.empty()) io::prepare_output_directory(a.report, "--report");
    if (!a.junit.empty()) io::prepare_output_file(a.junit, "--junit");
    return {"", a.corpus, a.report, a.junit};
  }
  for (const CLI::Option* o : a.held_by_out)
    if (o->count())
      throw UsageError(fmt::format("--out {} holds the corpus, the report and the JUnit file: {} cannot be given with it", a.out,
                                   o->get_name()));
  const fs::path out = a.out;
  io::prepare_output_directory(out, "--out");
  io::prepare_output_directory(out / "corpus", "--out");
  io::prepare_output_directory(out / "report", "--out");
  if (fs::exists(out))
    for (const char* file : {"junit.xml", fuzz::kCampaignRecordFile}) io::prepare_output_file(out / file, "--out");
  return {out, out / "corpus", out / "report", out / "junit.xml"};
}

// --out: the directory made, and a record an earlier run left removed, so that the directory holds
// a record only once this campaign has finished.
void begin_out(const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (!ec) fs::remove(out / fuzz::kCampaignRecordFile, ec);
  if (ec) throw OutputError(fmt::format("--out {}: {}", out.string(), ec.message()));
}

fuzz::CampaignOptions campaign_options(const FuzzArgs& a, const FuzzOutputs& outputs) {
  fuzz::CampaignOptions o;
  for (const std::string& name : a.ops)
    if (!cases::find_operation(name))
      throw UsageError(fmt::format("--ops: unknown operation '{}' (known: {})", name, cases::operation_names(", ")));
  o.compare = compare_mode(a.compare);
  o.space.ops = campaign_operations(o.compare, a.ops);
  for (const std::string& p : a.profiles)
    if (!find_profile(p)) throw UsageError(fmt::format("--profiles: unknown profile '{}' (known: {})", p, profile_names(", ")));
  o.space.profiles = a.profiles;
  o.space.max_dim = a.max_dim;
  if (!a.time.empty()) o.seconds = parse_duration(a.time);
  if (a.cases) o.cases = a.cases;
  if (!o.seconds && !o.cases) o.seconds = 60;
  o.seed = a.seed;
  std::tie(o.shard, o.shards) = parse_shard(a.shard);
  o.corpus = outputs.corpus;
  o.on_progress = terminal_progress();
  return o;
}

// The report, the JUnit file and, with --out, the record, which is written last.
void write_outputs(const FuzzOutputs& outputs, const fuzz::CampaignOptions& o, const fuzz::CampaignResult& r,
                   const std::string& backends, reports::Summary& s) {
  fuzz::CampaignRecord record = fuzz::campaign_record(o, r, backends, outputs.out);
  if (!outputs.report.empty()) {
    s.seconds = r.seconds;
    if (o.compare.ulp) s.ulp = r.ulp;
    count_generated(r.per_operation, s);
    const std::vector<std::string> pages = report_failures(r, backends, outputs.report, s);
    if (!outputs.out.empty())
      for (std::size_t i = 0; i < pages.size(); ++i) record.failures[i].page = "report/" + pages[i];
    reports::write_page(outputs.report, "index.html", reports::render_summary(s));
    fmt::print("report: {}\n", (outputs.report / "index.html").string());
  }
  if (!outputs.junit.empty())
    reports::write_junit(outputs.junit, "nvfp4-verify fuzz", {campaign_suite(record, "campaign", outputs.out)});
  if (!outputs.out.empty()) {
    fuzz::write_campaign_record(outputs.out, record);
    fmt::print("campaign record: {}\n", (outputs.out / fuzz::kCampaignRecordFile).string());
  }
}

void run(const FuzzArgs& a, int& exit_code) {
  const FuzzOutputs outputs = check_outputs(a);
  const fuzz::CampaignOptions o = campaign_options(a, outputs);
  const auto [na, nb] = a.backends.empty() ? default_backends() : parse_backends(a.backends);
  const std::string backends = na + " vs " + nb;
  const CampaignBackends cb = campaign_backends(na, nb, a.external, a.jobs);
  if (nb != "device" && na != "device")
    fmt::print("fuzz: {}, {} (GPU: {})\n", backends, cb.description,
               device_unavailable().empty() ? "present, not used" : device_unavailable());
  else
    fmt::print("fuzz: {}, {}\n", backends, cb.description);
  for (const cases::Backend* b : {cb.first.expected.get(), cb.first.actual.get()})
    if (b->declaration()) fmt::print("fuzz: {} declares {}\n", backend_label(*b), b->declaration()->to_json().dump());
  reports::Summary s{"nvfp4-verify fuzz", backends, 0, {}};
  state_space("fuzz", o.space, *cb.first.expected, *cb.first.actual, s);
  if (!outputs.out.empty()) begin_out(outputs.out);
  const fuzz::CampaignResult r = fuzz::run_campaign(o, cb.factory, cb.jobs);
  print_campaign_summary(r, backends);
  if (o.compare.ulp) fmt::print("{}", compare::describe_ulp_totals(r.ulp));
  write_outputs(outputs, o, r, backends, s);
  exit_code = r.failures.empty() ? 0 : 1;
}

}  // namespace

void register_fuzz(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<FuzzArgs>();
  CLI::App* cmd =
      app.add_subcommand("fuzz", "Run a fuzzing campaign comparing two backends bit for bit (or GEMM outputs by ULP distance)");
  cmd->add_option("--ops", a->ops, "operations (default: all): " + cases::operation_names(", "))->delimiter(',');
  cmd->add_option("--profiles", a->profiles, "profiles (default: all)")->delimiter(',');
  cmd->add_option("--time", a->time, "stop after this long, e.g. 60s, 5m (default 60s)");
  cmd->add_option("--cases", a->cases, "stop after this many cases");
  cmd->add_option("--seed", a->seed, "campaign seed: same seed and shard, same cases")->capture_default_str();
  cmd->add_option("--shard", a->shard, "K/N: run rounds K, K+N, K+2N, ... of the campaign (merge joins the shards)")
      ->capture_default_str();
  cmd->add_option("--backends", a->backends, backends_option_help());
  a->held_by_out = {cmd->add_option("--corpus", a->corpus, "directory where failing cases are saved")->capture_default_str(),
                    cmd->add_option("--report", a->report, "write HTML reports (index.html and one page per failure) here"),
                    cmd->add_option("--junit", a->junit, "write JUnit XML here (a testcase per operation)")};
  cmd->add_option("--out", a->out,
                  "the whole output in one directory: corpus/, report/, junit.xml and campaign.json (what merge reads)");
  cmd->add_option("--max-dim", a->max_dim, "largest generated M or K")->capture_default_str();
  add_external_options(cmd, a->external);
  add_job_options(cmd, a->jobs);
  add_compare_options(cmd, a->compare);
  cmd->callback([a, &exit_code] { run(*a, exit_code); });
}

}  // namespace nvfp4::cli
