// `nvfp4-verify fuzz`: a campaign of generated cases on two backends.
#include <fmt/format.h>

#include "cases/registry.h"
#include "cli/backends.h"
#include "cli/campaign_report.h"
#include "cli/commands.h"
#include "cli/compare_options.h"
#include "io/output_path.h"
#include "reference/profiles.h"

namespace nvfp4::cli {
namespace {

struct FuzzArgs {
  std::vector<std::string> ops, profiles;
  std::string time, backends, corpus = "corpora/found", report, shard = "0/1";
  std::size_t cases = 0, max_dim = 256;
  std::uint64_t seed = 0;
  ExternalOptions external;
  JobOptions jobs;
  CompareArgs compare;
};

std::pair<int, int> parse_shard(const std::string& text) {
  int k = -1, n = 0;
  char slash = 0;
  if (std::sscanf(text.c_str(), "%d%c%d", &k, &slash, &n) != 3 || slash != '/' || n < 1 || k < 0 || k >= n)
    throw UsageError(fmt::format("--shard '{}': expected K/N with 0 <= K < N", text));
  return {k, n};
}

void run(const FuzzArgs& a, int& exit_code) {
  if (!a.corpus.empty()) io::prepare_output_directory(a.corpus, "--corpus");
  if (!a.report.empty()) io::prepare_output_directory(a.report, "--report");
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
  o.corpus = a.corpus;
  o.on_progress = terminal_progress();
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
  const fuzz::CampaignResult r = fuzz::run_campaign(o, cb.factory, cb.jobs);
  print_campaign_summary(r, backends);
  if (o.compare.ulp) fmt::print("{}", compare::describe_ulp_totals(r.ulp));
  if (!a.report.empty()) {
    s.seconds = r.seconds;
    if (o.compare.ulp) s.ulp = r.ulp;
    report_failures(r, backends, a.report, s);
    reports::write_page(a.report, "index.html", reports::render_summary(s));
    fmt::print("report: {}\n", (std::filesystem::path(a.report) / "index.html").string());
  }
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
  cmd->add_option("--shard", a->shard, "K/N: run the K-th of N deterministic slices")->capture_default_str();
  cmd->add_option("--backends", a->backends, backends_option_help());
  cmd->add_option("--corpus", a->corpus, "directory where failing cases are saved")->capture_default_str();
  cmd->add_option("--report", a->report, "write HTML reports (index.html and one page per failure) here");
  cmd->add_option("--max-dim", a->max_dim, "largest generated M or K")->capture_default_str();
  add_external_options(cmd, a->external);
  add_job_options(cmd, a->jobs);
  add_compare_options(cmd, a->compare);
  cmd->callback([a, &exit_code] { run(*a, exit_code); });
}

}  // namespace nvfp4::cli
