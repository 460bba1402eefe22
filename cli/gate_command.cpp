// `nvfp4-verify gate`: the correctness gate. Replays the repository corpus, then runs a
// time-boxed campaign over every operation; writes JUnit XML and the HTML summary; exits 0 only
// if nothing mismatched. An unreadable corpus file is a failure, and the rest of the corpus runs.
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/corpus.h"
#include "cli/backends.h"
#include "cli/campaign_report.h"
#include "cli/commands.h"
#include "cli/compare_options.h"
#include "compare/corpus_replay.h"
#include "io/output_path.h"
#include "reports/failure_page.h"
#include "reports/junit.h"
#include "vectors/pack.h"

namespace nvfp4::cli {
namespace {

struct GateArgs {
  std::string time = "60s", junit, report = "gate-report", corpus = "corpora", found = "corpora/found", backends;
  std::string vectors = "corpora/vectors/level-1.json";
  std::uint64_t seed = 0;
  ExternalOptions external;
  JobOptions jobs;
  CompareArgs compare;
};

// The gate's replay steps (the corpus, the level-1 vectors): each case on both backends, a failure
// given a report page.
struct ReplayOutcome {
  compare::ReplayTally tally;
  std::size_t replayed = 0, failed = 0;       // replayed: not skipped as outside a backend or not a GEMM
  std::size_t hashes = 0, hash_failures = 0;  // vector files whose hash was compared, and differed
};

ReplayOutcome replay_step(const std::string& step, const std::vector<compare::ReplaySource>& sources, const GateArgs& a,
                          cases::Backend& ba, cases::Backend& bb, const compare::CompareMode& mode, const std::string& backends,
                          reports::Summary& summary, reports::JunitSuite& suite) {
  const auto outside = [&](const cases::Case& c) { return outside_backends(c, ba, bb); };
  const compare::ReplayTally t = compare::replay(sources, ba.name(), ba, bb, mode, outside, [&](const compare::ReplayedFile& f) {
    const std::string name = f.file.filename().string();
    if (f.kind == compare::ReplayedFile::Kind::kUnreadable) {
      // An unreadable case file fails the gate like a mismatch, named in the output, the report
      // and the JUnit file; the rest of the corpus still runs.
      const std::string problem = fmt::format("unreadable case file: {}", f.problem);
      fmt::print("  FAIL {}: {}\n", f.file.string(), problem);
      summary.entries.push_back({name, "", "", false, problem, ""});
      suite.cases.push_back({f.file.string(), f.seconds, problem});
      return;
    }
    if (f.kind != compare::ReplayedFile::Kind::kCompared) return;  // not GEMM (ulp mode), or outside a backend: counted
    const compare::Comparison& cmp = f.comparison;
    reports::SummaryEntry e{name, f.record.c.op, cases::case_profile_name(f.record.c), cmp.agree, cmp.problem, ""};
    std::string failure;
    if (!cmp.agree) {
      const compare::Explanation x = compare::explain_comparison(f.record.c, cmp);
      e.report_link = reports::write_failure_page(a.report, compare::source_stem(f.file), f.record, cmp, x, backends, f.file);
      fmt::print("  FAIL {}: {}\n       verdict: {}\n", f.file.string(), cmp.problem, x.verdict);
      failure = e.detail = cmp.problem + ". " + x.verdict;
    }
    summary.entries.push_back(e);
    suite.cases.push_back({f.file.string(), f.seconds, failure});
  });
  const std::size_t failed = t.unreadable + t.differed;
  if (t.outside) fmt::print("{}: {} cases skipped: outside an external backend's declaration\n", step, t.outside);
  if (t.not_gemm) fmt::print("{}: {} cases skipped: not GEMM operations (--compare ulp)\n", step, t.not_gemm);
  const std::size_t replayed = sources.size() - t.outside - t.not_gemm;
  fmt::print("{}: {} cases replayed, {} failed\n", step, replayed, failed);
  return {t, replayed, failed};
}

ReplayOutcome replay_corpus(const GateArgs& a, cases::Backend& ba, cases::Backend& bb, const compare::CompareMode& mode,
                            const std::string& backends, reports::Summary& summary, reports::JunitSuite& suite) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::exists(a.corpus)) files = cases::collect_case_files({a.corpus});
  return replay_step("corpus", compare::case_file_sources(files), a, ba, bb, mode, backends, summary, suite);
}

// The level-1 vectors (docs/vectors.md), regenerated rather than kept: their files' hashes
// against the committed ones (a difference is a failure: the reference's outputs changed), then
// every vector on both backends.
ReplayOutcome replay_vectors(const GateArgs& a, cases::Backend& ba, cases::Backend& bb, const compare::CompareMode& mode,
                             const std::string& backends, reports::Summary& summary, reports::JunitSuite& suite) {
  const vectors::Selection s;
  const std::vector<vectors::VectorSet> sets = vectors::generate(s);
  std::size_t hash_failures = 0, hashes = 0;
  if (a.vectors.empty() || !std::filesystem::exists(a.vectors)) {
    fmt::print("vectors: no committed hashes{}: the regenerated level 1 is replayed, its hashes not compared\n",
               a.vectors.empty() ? "" : " at " + a.vectors);
  } else {
    const std::vector<std::string> diffs =
        vectors::hash_differences(vectors::read_hashes(a.vectors), vectors::hashes_json(s, sets));
    for (const std::string& d : diffs) {
      const std::string problem = fmt::format(
          "level-1 vectors: {} (a change of the reference's outputs; if intended, "
          "regenerate with `nvfp4-verify vectors --hashes {}`)",
          d, a.vectors);
      fmt::print("  FAIL {}: {}\n", a.vectors, problem);
      summary.entries.push_back({a.vectors, "", "", false, problem, ""});
      suite.cases.push_back({a.vectors, 0.0, problem});
    }
    hash_failures = diffs.size();
    hashes = sets.size();
    if (diffs.empty()) fmt::print("vectors: the {} regenerated files of level 1 have the hashes of {}\n", sets.size(), a.vectors);
  }
  ReplayOutcome r =
      replay_step("vectors", vectors::replay_sources("vectors/level-1", sets, false), a, ba, bb, mode, backends, summary, suite);
  r.failed += hash_failures;
  r.hashes = hashes;
  r.hash_failures = hash_failures;
  return r;
}

void run(const GateArgs& a, int& exit_code) {
  io::prepare_output_directory(a.report, "--report");
  if (!a.junit.empty()) io::prepare_output_file(a.junit, "--junit");
  if (!a.found.empty()) io::prepare_output_directory(a.found, "--found");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string no_gpu = device_unavailable();
  const auto [na, nb] = a.backends.empty() ? default_backends() : parse_backends(a.backends);
  const std::string backends = na + " vs " + nb;
  const compare::CompareMode mode = compare_mode(a.compare);
  // In ulp mode only the GEMM operations run: their outputs are the ones with a tolerance.
  const std::vector<std::string> ops = campaign_operations(mode, {});
  if (no_gpu.empty())
    fmt::print("gate: GPU present; comparing {}\n", backends);
  else
    fmt::print("gate: no GPU ({}); comparing {}: reference self-consistency, metamorphic properties, profile agreement\n", no_gpu,
               backends);
  if (mode.ulp)
    fmt::print(
        "gate: GEMM operations only ({}), by ULP distance to the first backend, {}\n", fmt::join(ops, ", "),
        mode.max_ulp ? fmt::format("passing within {} ulps", *mode.max_ulp) : std::string("reporting only (no --max-ulp)"));
  CampaignBackends cb = campaign_backends(na, nb, a.external, a.jobs);
  const std::shared_ptr<cases::Backend> ba = cb.first.expected, bb = cb.first.actual;
  reports::Summary summary{"nvfp4-verify gate", backends, 0, {}};
  reports::JunitSuite corpus_suite{"corpus", "corpus", {}}, vectors_suite{"vectors", "vectors", {}};
  std::size_t failed = 0;

  // 1. The repository corpus, and the level-1 conformance vectors.
  const ReplayOutcome corpus = replay_corpus(a, *ba, *bb, mode, backends, summary, corpus_suite);
  const ReplayOutcome vectors = replay_vectors(a, *ba, *bb, mode, backends, summary, vectors_suite);
  const std::size_t replayed = corpus.replayed + vectors.replayed;
  failed += corpus.failed + vectors.failed;

  // 2. A time-boxed campaign over every operation.
  fuzz::CampaignOptions o;
  o.seconds = parse_duration(a.time);
  o.seed = a.seed;
  o.corpus = a.found;
  o.space.ops = ops;
  o.compare = mode;
  o.on_progress = terminal_progress();
  fmt::print("gate: campaign on {}\n", cb.description);
  state_space("gate", o.space, *ba, *bb, summary);
  const fuzz::CampaignResult r = fuzz::run_campaign(o, cb.factory, cb.jobs);
  print_campaign_summary(r, backends);
  if (mode.ulp) {
    compare::UlpTotals ulp = corpus.tally.ulp;
    ulp.merge(vectors.tally.ulp);
    ulp.merge(r.ulp);
    fmt::print("{}", compare::describe_ulp_totals(ulp));
    summary.ulp = ulp;
  }
  count_generated(r.per_operation, summary);
  report_failures(r, backends, a.report, summary);
  reports::JunitSuite generated = campaign_suite(fuzz::campaign_record(o, r, backends, ""), "campaign", "");
  failed += r.failures.size();

  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The entries are the corpus cases, the vectors (and any differing vector-file hash) and the
  // campaign's failures; the totals count those and every generated case.
  summary.title = fmt::format("nvfp4-verify gate: {} corpus cases and {} level-1 vectors replayed, {} generated cases fuzzed",
                              corpus.replayed, vectors.replayed, r.cases);
  reports::write_page(a.report, "index.html", reports::render_summary(summary));
  if (!a.junit.empty()) {
    // A suite without testcases (an empty corpus) is left out.
    std::vector<reports::JunitSuite> suites;
    for (reports::JunitSuite* s : {&generated, &corpus_suite, &vectors_suite})
      if (!s->cases.empty()) suites.push_back(std::move(*s));
    reports::write_junit(a.junit, "nvfp4-verify gate", suites);
  }
  fmt::print("report: {}\n", (std::filesystem::path(a.report) / "index.html").string());
  fmt::print("gate: {} corpus cases, {} vectors ({} file hashes compared) and {} generated cases; {}\n", corpus.replayed,
             vectors.replayed, vectors.hashes, r.cases, failed ? fmt::format("{} MISMATCHED", failed) : "no mismatch");
  // The closing line in the form CI runners read: cases that agreed, cases that did not.
  // A differing hash is one more failed check; the equal ones are the vectors' own precondition.
  const std::size_t total = replayed + vectors.hash_failures + r.cases;
  fmt::print("gate: {} passed, {} failed\n", total - failed, failed);
  exit_code = failed ? 1 : 0;
}

}  // namespace

void register_gate(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<GateArgs>();
  CLI::App* cmd = app.add_subcommand("gate", "The correctness gate: replay the corpus, then fuzz for a while");
  cmd->add_option("--time", a->time, "length of the campaign, e.g. 60s, 5m")->capture_default_str();
  cmd->add_option("--junit", a->junit, "write JUnit XML here");
  cmd->add_option("--report", a->report, "HTML report directory")->capture_default_str();
  cmd->add_option("--corpus", a->corpus, "corpus to replay")->capture_default_str();
  cmd->add_option("--found", a->found, "where new failing cases are saved")->capture_default_str();
  cmd->add_option("--vectors", a->vectors, "the committed SHA-256 of the level-1 vector files (\"\": do not compare)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "campaign seed")->capture_default_str();
  cmd->add_option("--backends", a->backends, backends_option_help());
  add_external_options(cmd, a->external);
  add_job_options(cmd, a->jobs);
  add_compare_options(cmd, a->compare);
  cmd->callback([a, &exit_code] { run(*a, exit_code); });
}

}  // namespace nvfp4::cli
