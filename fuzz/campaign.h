// A fuzzing campaign: RapidCheck rounds of generated cases run on two backends; every
// disagreement is shrunk to a small case, saved to the corpus and returned for reporting.
// A round's cases are a pure function of (seed, round): the same on any machine, with any number
// of jobs or shards. Rounds run on `jobs` threads (each with its own pair of backends) and are
// merged in round order, so the result, the stopping point and the saved failures do not depend on
// the thread count. Shard K of N runs rounds K, K + N, K + 2N, ... of the same campaign, so N
// shards together run the one-process campaign's rounds when each stops only where that campaign
// does: a --cases campaign is a fixed set of rounds that every shard bounds alone; the failure
// limit is each shard's own (merging reproduces the one-process campaign when it finds fewer
// failures than the limit, and no hang), and a --time campaign is not deterministic anyway.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "compare/compare.h"
#include "compare/explain.h"
#include "fuzz/case_generator.h"

namespace nvfp4::fuzz {

struct CampaignProgress {
  std::size_t cases = 0, failures = 0;
  double seconds = 0;
};

struct CampaignOptions {
  CaseSpace space;
  // Stop after this long: the whole campaign, shrinking included. A worker's wait is cut off then;
  // a round cut off counts the cases before the cut, and a shrink cut off keeps the smallest
  // failing case found so far.
  std::optional<double> seconds;
  // Or after this many generated cases: the campaign is rounds 0 .. R - 1, R = ceil(cases /
  // cases_per_round), whole rounds, each shard running its own of them.
  std::optional<std::size_t> cases;
  std::uint64_t seed = 0;
  int shard = 0, shards = 1;  // this process runs rounds shard, shard + shards, ...
  int cases_per_round = 25;
  // Stop once this many failures were found (in this shard), or at the first timeout (a hang).
  std::size_t max_failures = 8;
  std::filesystem::path corpus;  // failures are saved here ("" = not saved)
  compare::CompareMode compare;  // ulp: GEMM outputs by ULP distance (the space should hold only GEMM operations)
  std::function<void(const CampaignProgress&)> on_progress;
};

struct CampaignFailure {
  cases::CaseRecord shrunk;
  compare::Comparison comparison;  // of the shrunk case
  std::filesystem::path saved;
  std::size_t cases_to_detection = 0;  // this process's generated cases before the first failing one
  std::uint64_t round = 0;             // the round that found it (a round finds at most one)
  std::string shrink_stopped;          // why shrinking stopped before its end (also in the origin); "" when it did not
  compare::Explanation explanation;    // of the shrunk case's comparison: its verdict names the cause
};

struct OperationStats {
  std::size_t cases = 0, failures = 0;
  double seconds = 0;
};

struct CampaignResult {
  std::size_t cases = 0;
  double seconds = 0;
  std::map<std::string, OperationStats> per_operation;
  std::vector<CampaignFailure> failures;
  compare::UlpTotals ulp;  // ulp mode: every generated case's ULP distances (not the shrinking's reruns)
};

// One job's backends. The factory runs on the job's own thread (a device backend binds its GPU
// there) and is called once per job.
struct BackendPair {
  std::shared_ptr<cases::Backend> expected, actual;
};
using BackendFactory = std::function<BackendPair(int job)>;

CampaignResult run_campaign(const CampaignOptions& options, const BackendFactory& backends, int jobs);
// One job on these two backends.
CampaignResult run_campaign(const CampaignOptions& options, cases::Backend& expected, cases::Backend& actual);

// `n` cases drawn from the space with this seed (the same on any machine), outside any campaign:
// for conformance checks that need a few valid cases of an operation.
std::vector<cases::CaseRecord> sample_cases(const CaseSpace& space, std::size_t n, std::uint64_t seed);

}  // namespace nvfp4::fuzz
