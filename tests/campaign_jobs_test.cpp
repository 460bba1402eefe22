// A campaign's jobs change its speed only: the cases, the counts, where --cases stops, and the
// failures found, shrunk and saved are those of one job.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <string>

#include "cases/case_io.h"
#include "cases/reference_backend.h"
#include "fuzz/campaign.h"
#include "io/safetensors.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

// Every case a backend ran, as its case file's bytes (each job's backend adds to the same log).
struct CaseLog {
  std::mutex mutex;
  std::multiset<std::string> cases;
};

std::string case_bytes(const cases::Case& c) {
  cases::CaseRecord r;
  r.c = c;
  const std::vector<std::uint8_t> bytes = io::serialize(cases::case_to_file(r));
  return std::string(bytes.begin(), bytes.end());
}

// The reference; it logs the cases it runs and, for `broken_op`, flips one output bit (a bug).
class LoggingBackend : public cases::Backend {
 public:
  LoggingBackend(std::shared_ptr<CaseLog> log, std::string broken_op) : log_(std::move(log)), broken_op_(std::move(broken_op)) {}
  std::string_view name() const override { return "logging"; }
  cases::TensorMap run(const cases::Case& c) override {
    {
      const std::lock_guard lock(log_->mutex);
      log_->cases.insert(case_bytes(c));
    }
    cases::TensorMap out = cases::ReferenceBackend().run(c);
    if (c.op == broken_op_) out.begin()->second.bytes.at(0) ^= 0x01;
    return out;
  }

 private:
  std::shared_ptr<CaseLog> log_;
  std::string broken_op_;
};

struct CampaignRun {
  fuzz::CampaignResult result;
  std::shared_ptr<CaseLog> log = std::make_shared<CaseLog>();
};

CampaignRun campaign(fuzz::CampaignOptions o, int jobs, const std::string& broken_op) {
  CampaignRun run;
  const auto log = run.log;
  run.result = fuzz::run_campaign(
      o,
      [&](int) {
        return fuzz::BackendPair{std::make_shared<cases::ReferenceBackend>(), std::make_shared<LoggingBackend>(log, broken_op)};
      },
      jobs);
  return run;
}

fuzz::CampaignOptions options(std::uint64_t seed) {
  fuzz::CampaignOptions o;
  o.seed = seed;
  o.space.max_dim = 64;
  o.cases_per_round = 7;
  return o;
}

TEST(CampaignJobs, ThreeJobsRunTheSameCasesAsOne) {
  const std::uint64_t seed = std::random_device{}();
  fuzz::CampaignOptions o = options(seed);
  o.cases = 400;
  const CampaignRun one = campaign(o, 1, ""), three = campaign(o, 3, "");
  EXPECT_EQ(one.result.cases, 406u) << "--cases stops after the round that reaches it (58 rounds of 7)";
  EXPECT_EQ(three.result.cases, one.result.cases) << "seed " << seed;
  EXPECT_EQ(one.log->cases.size(), one.result.cases);
  // Jobs run ahead of the slowest round, so rounds past the stopping point may have run; they are
  // dropped. Three jobs' log holds the first run's cases, and whole rounds more.
  std::size_t missing = 0;
  for (auto it = one.log->cases.begin(); it != one.log->cases.end(); it = one.log->cases.upper_bound(*it))
    if (three.log->cases.count(*it) < one.log->cases.count(*it)) ++missing;
  EXPECT_EQ(missing, 0u) << "cases of one job that three jobs did not run; seed " << seed;
  ASSERT_GE(three.log->cases.size(), one.log->cases.size());
  EXPECT_EQ((three.log->cases.size() - one.log->cases.size()) % 7, 0u);
  ASSERT_EQ(three.result.per_operation.size(), one.result.per_operation.size());
  for (const auto& [op, s] : one.result.per_operation) EXPECT_EQ(three.result.per_operation.at(op).cases, s.cases) << op;
  EXPECT_TRUE(one.result.failures.empty());
  EXPECT_TRUE(three.result.failures.empty());
}

TEST(CampaignJobs, FourJobsFindShrinkAndSaveTheSameFailuresAsOne) {
  const std::uint64_t seed = std::random_device{}();
  const test_support::TempDir tmp;
  const std::filesystem::path dir = tmp.path();
  fuzz::CampaignOptions o = options(seed);
  o.space.ops = {"amax_rows", "amax_cols", "swizzle"};
  o.cases = 2000;
  o.max_failures = 3;
  o.corpus = dir / "one";
  const CampaignRun one = campaign(o, 1, "amax_rows");
  o.corpus = dir / "four";
  const CampaignRun four = campaign(o, 4, "amax_rows");
  ASSERT_EQ(one.result.failures.size(), 3u) << "seed " << seed;
  ASSERT_EQ(four.result.failures.size(), 3u) << "seed " << seed;
  EXPECT_EQ(four.result.cases, one.result.cases) << "the third failure stops both at the same round";
  for (std::size_t i = 0; i < 3; ++i) {
    const fuzz::CampaignFailure &a = one.result.failures[i], &b = four.result.failures[i];
    EXPECT_EQ(a.shrunk.c.op, "amax_rows");
    EXPECT_EQ(b.cases_to_detection, a.cases_to_detection) << i;
    EXPECT_EQ(b.shrunk.origin, a.shrunk.origin) << i;
    EXPECT_EQ(case_bytes(b.shrunk.c), case_bytes(a.shrunk.c)) << i << ": shrunk to another case";
    EXPECT_EQ(b.saved.filename(), a.saved.filename()) << i;
    EXPECT_TRUE(std::filesystem::exists(b.saved)) << b.saved;
  }
}

}  // namespace
}  // namespace nvfp4
