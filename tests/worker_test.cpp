// The worker backend (docs/spec/worker-protocol.md) against the fake worker of tests/support: a
// conforming worker agrees with the reference on cases inside its declaration only; every fault
// class gets its verdict, is shrunk, saved with its verdict and replays to it; the worker is
// restarted and the batch goes on.
#include <filesystem>
#include <random>
#include <set>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "cases/corpus.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/compare.h"
#include "external/worker_backend.h"
#include "fuzz/campaign.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using external::WorkerBackend;
using external::WorkerOptions;
using nlohmann::json;

WorkerOptions fake(const std::string& mode, double timeout_s = 10) {
  WorkerOptions o;
  o.command = std::string(NVFP4_FAKE_WORKER) + " " + mode;
  o.timeout_s = timeout_s;
  return o;
}

std::uint64_t fresh_seed() { return (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}(); }

// A quantize case of the documented example's declaration, random data, this direction.
cases::Case quantize_case(const std::string& direction, std::uint64_t seed) {
  fuzz::CaseSpace space;
  space.ops = {"quantize"};
  space.max_dim = 32;
  const json implements = json::parse(fmt::format(
      R"([{{"op": "quantize", "params": {{"profile": ["te"], "block": ["1d"], "direction": ["{}"], "row_scaled": [false],
           "scale_layout": ["compact"], "rounding": ["nearest"], "rht": [false]}}, "dtype": ["F32"]}}])",
      direction));
  const cases::Declaration d = cases::Declaration::parse(implements, "test");
  space.declarations = {&d};
  return fuzz::sample_cases(space, 1, seed).front().c;
}

TEST(WorkerBackend, ConformingWorkerAgreesOnEveryGeneratedCaseInsideItsDeclaration) {
  cases::ReferenceBackend reference;
  WorkerBackend worker(fake("conform"));
  fuzz::CampaignOptions o;
  o.cases = 400;
  o.seed = fresh_seed();
  o.space.max_dim = 64;
  const fuzz::CampaignResult r = fuzz::run_campaign(o, reference, worker);
  // The fake rejects any case outside its declaration, which would disagree with the reference.
  EXPECT_TRUE(r.failures.empty()) << r.failures.front().comparison.problem;
  EXPECT_GE(r.cases, 400u);
  std::set<std::string> ops;
  for (const auto& [op, s] : r.per_operation) ops.insert(op);
  EXPECT_EQ(ops, (std::set<std::string>{"amax_global", "quantize"}));
  EXPECT_EQ(worker.restarts(), 0u);
  EXPECT_EQ(worker.shut_down(), "");
}

TEST(WorkerBackend, FaultOfOneCaseInABatchRestartsTheWorkerAndTheOthersAreAnswered) {
  for (const auto& [mode, kind] : {std::pair{"crash", cases::FaultKind::kCrash},
                                   {"garbage", cases::FaultKind::kProtocol},
                                   {"wrong-id", cases::FaultKind::kProtocol}}) {
    SCOPED_TRACE(mode);
    const std::uint64_t seed = fresh_seed();
    const std::vector<cases::Case> cases = {quantize_case("rowwise", seed), quantize_case("both", seed + 1),
                                            quantize_case("rowwise", seed + 2)};
    WorkerBackend worker(fake(mode, 0.5));
    const std::vector<cases::Outcome> got = worker.run_many(cases);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[1].fault, kind) << got[1].message;
    for (std::size_t i : {0u, 2u}) {
      EXPECT_FALSE(got[i].fault) << got[i].message;
      EXPECT_TRUE(compare::diff_outputs(cases::ReferenceBackend().run(cases[i]), got[i].outputs).empty());
    }
    EXPECT_EQ(worker.restarts(), 1u);
  }
}

TEST(WorkerBackend, AHangEndsTheBatchTheCasesAfterItAreSkippedNotSent) {
  const std::uint64_t seed = fresh_seed();
  const std::vector<cases::Case> cases = {quantize_case("rowwise", seed), quantize_case("both", seed + 1),
                                          quantize_case("rowwise", seed + 2)};
  WorkerBackend worker(fake("hang", 0.5));  // hangs on the second case
  const std::vector<cases::Outcome> got = worker.run_many(cases);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FALSE(got[0].fault) << got[0].message;
  EXPECT_TRUE(compare::diff_outputs(cases::ReferenceBackend().run(cases[0]), got[0].outputs).empty());
  EXPECT_EQ(got[1].fault, cases::FaultKind::kTimeout) << got[1].message;
  EXPECT_TRUE(got[2].skipped);
  EXPECT_FALSE(got[2].fault);
  EXPECT_TRUE(got[2].outputs.empty());
  // The next batch starts a fresh worker.
  const std::vector<cases::Outcome> again = worker.run_many({&cases[0], 1});
  EXPECT_FALSE(again[0].fault) << again[0].message;
  EXPECT_EQ(worker.restarts(), 1u);
}

TEST(WorkerBackend, CrashVerdictNamesTheSignalAndTheWorkersStderr) {
  WorkerBackend worker(fake("exit"));
  cases::Case c = quantize_case("rowwise", fresh_seed());
  c.params.set("rounding", std::string("stochastic"));
  const cases::Outcome o = worker.run_many({&c, 1}).front();
  ASSERT_EQ(o.fault, cases::FaultKind::kCrash);
  EXPECT_NE(o.message.find("exited with status 3"), std::string::npos) << o.message;
}

TEST(WorkerBackend, UncodedRejectionAgreesOnlyWithARejection) {
  cases::Outcome ran, coded, uncoded;
  ran.outputs["x"] = io::make_tensor(io::DType::U8, {1}, std::vector<std::uint8_t>{1});
  coded.rejected = true;
  coded.code = ErrorCode::E_DIM16_K;
  uncoded.rejected = uncoded.any_code = true;
  EXPECT_TRUE(compare::compare_outcomes("reference", coded, "worker", uncoded).agree);
  const compare::Comparison c = compare::compare_outcomes("reference", ran, "worker", uncoded);
  EXPECT_FALSE(c.agree);
  EXPECT_EQ(c.verdict, compare::Verdict::kError);
}

TEST(WorkerBackend, WrongProtocolVersionStopsWithAClearError) {
  try {
    WorkerBackend worker(fake("version"));
    FAIL() << "a worker speaking protocol 3 was accepted";
  } catch (const cases::BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("it speaks protocol 3; this harness speaks protocols 1 to 2"), std::string::npos)
        << e.what();
  }
}

struct FaultClass {
  const char* mode;
  compare::Verdict verdict;
  const char* op;
};

class WorkerFaultClass : public ::testing::TestWithParam<FaultClass> {};

TEST_P(WorkerFaultClass, IsCaughtWithItsVerdictShrunkSavedAndReplaysToIt) {
  const FaultClass& f = GetParam();
  const test_support::TempDir tmp;
  const fs::path corpus = tmp.path();
  cases::ReferenceBackend reference;
  WorkerBackend worker(fake(f.mode, 0.3));
  fuzz::CampaignOptions o;
  o.space.ops = {f.op};
  o.space.max_dim = 64;
  o.cases = 500;
  o.max_failures = 1;
  o.seed = fresh_seed();
  o.corpus = corpus;
  const fuzz::CampaignResult r = fuzz::run_campaign(o, reference, worker);
  ASSERT_EQ(r.failures.size(), 1u) << "seed " << o.seed;
  const fuzz::CampaignFailure& failure = r.failures.front();
  EXPECT_EQ(failure.comparison.verdict, f.verdict) << failure.comparison.problem;

  const cases::CaseRecord saved = cases::load_case(failure.saved);
  EXPECT_EQ(saved.found, compare::verdict_name(f.verdict));
  WorkerBackend fresh(fake(f.mode, 0.3));
  const compare::Comparison again = compare::compare_backends(saved.c, reference, fresh);
  EXPECT_EQ(again.verdict, f.verdict) << again.problem;
}

INSTANTIATE_TEST_SUITE_P(EveryClass, WorkerFaultClass,
                         ::testing::Values(FaultClass{"mismatch", compare::Verdict::kMismatch, "quantize"},
                                           FaultClass{"reject", compare::Verdict::kError, "amax_global"},
                                           FaultClass{"crash", compare::Verdict::kCrash, "quantize"},
                                           FaultClass{"exit", compare::Verdict::kCrash, "quantize"},
                                           FaultClass{"hang", compare::Verdict::kTimeout, "quantize"},
                                           FaultClass{"garbage", compare::Verdict::kProtocol, "quantize"},
                                           FaultClass{"wrong-id", compare::Verdict::kProtocol, "quantize"},
                                           FaultClass{"missing", compare::Verdict::kSchema, "quantize"},
                                           FaultClass{"extra", compare::Verdict::kSchema, "quantize"},
                                           FaultClass{"dtype", compare::Verdict::kSchema, "quantize"}),
                         [](const ::testing::TestParamInfo<FaultClass>& info) {
                           std::string n = info.param.mode;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(WorkerCli, FuzzWithAConformingWorkerPassesAndSelftestPasses) {
  const test_support::TempDir tmp;
  const fs::path dir = tmp.path();
  const std::string worker = std::string(" --worker '") + NVFP4_FAKE_WORKER + " conform'";
  const auto fuzz =
      test_support::run_cli("fuzz --backends reference,worker --cases 200 --corpus " + (dir / "found").string() + worker, dir);
  EXPECT_EQ(fuzz.exit_code, 0) << fuzz.out << fuzz.err;
  EXPECT_NE(fuzz.out.find("declares"), std::string::npos) << fuzz.out;
  const auto selftest = test_support::run_cli("worker-selftest" + worker, dir);
  EXPECT_EQ(selftest.exit_code, 0) << selftest.out << selftest.err;
  EXPECT_NE(selftest.out.find("all checks passed"), std::string::npos) << selftest.out;
  EXPECT_NE(selftest.out.find("PASS  quantize: rejects a case the reference rejects"), std::string::npos) << selftest.out;
}

TEST(WorkerCli, SelftestFailsAMismatchingWorkerAndAWrongVersionIsExit2) {
  const test_support::TempDir tmp;
  const fs::path dir = tmp.path();
  const auto selftest = test_support::run_cli(std::string("worker-selftest --worker '") + NVFP4_FAKE_WORKER + " mismatch'", dir);
  EXPECT_EQ(selftest.exit_code, 1) << selftest.out << selftest.err;
  EXPECT_NE(selftest.out.find("FAIL"), std::string::npos) << selftest.out;
  const auto version = test_support::run_cli(
      std::string("fuzz --backends reference,worker --cases 10 --worker '") + NVFP4_FAKE_WORKER + " version'", dir);
  EXPECT_EQ(version.exit_code, 2) << version.out << version.err;
  EXPECT_NE(version.err.find("protocol 3"), std::string::npos) << version.err;
  const auto missing = test_support::run_cli("fuzz --backends reference,worker --cases 10", dir);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--worker"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace nvfp4
