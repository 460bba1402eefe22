// What a campaign shows its user. Its summary page counts every case it ran (fuzz, gate), not only
// the failures it lists; and its output is its own: RapidCheck's lines (its configuration, its
// RC_PARAMS reproduction) never reach stdout or stderr, whatever RC_PARAMS says, since the saved
// case and `replay` reproduce a failure. The backends are the reference and the fake worker
// (tests/support/fake_worker.cpp) in its mismatch mode, which fails on some cases. The expected
// numbers are read from the lines the CLI prints, not from the page's renderer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "tests/support/campaign_seed.h"
#include "tests/support/cli_runner.h"
#include "tests/support/html_text.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using test_support::CliRun;

const std::string kWorker = fmt::format("--backends reference,worker --worker '{} mismatch' --jobs 1", NVFP4_FAKE_WORKER);

class CampaignOutputTest : public test_support::TempDirTest {
 protected:
  CliRun run(const std::string& args) { return test_support::run_cli(args, dir_, 120); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
};

// An environment variable set for the scope of a test, then restored.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The first match of `pattern` in `text`, its groups as numbers; empty when absent.
std::vector<std::size_t> numbers(const std::string& text, const std::string& pattern) {
  std::smatch m;
  std::vector<std::size_t> v;
  if (std::regex_search(text, m, std::regex(pattern)))
    for (std::size_t i = 1; i < m.size(); ++i) v.push_back(std::stoul(m[i]));
  return v;
}

// operation -> {cases, failures}: the campaign's per-operation table as printed.
using OperationCounts = std::map<std::string, std::pair<std::size_t, std::size_t>>;

OperationCounts printed_operations(const std::string& out) {
  OperationCounts ops;
  const std::regex row(R"(^  (\S+) +(\d+) +[0-9.]+ +(\d+)$)");
  std::stringstream lines(out);
  std::smatch m;
  for (std::string line; std::getline(lines, line);)
    if (std::regex_match(line, m, row) && m[1] != "operation") ops[m[1]] = {std::stoul(m[2]), std::stoul(m[3])};
  return ops;
}

// The page's table of generated cases: operation -> {cases, failed}; its passed column must be
// cases - failed.
OperationCounts page_operations(const std::string& html) {
  OperationCounts ops;
  const std::string table(test_support::between(html, "<table id=\"generated\">", "</table>"));
  const std::regex row(
      R"(<td class="mono">([^<]+)</td><td class="n">(\d+)</td><td class="n">(\d+)</td><td class="n">(\d+)</td>)");
  for (auto it = std::sregex_iterator(table.begin(), table.end(), row); it != std::sregex_iterator(); ++it) {
    const std::size_t cases = std::stoul((*it)[2]), passed = std::stoul((*it)[3]), failed = std::stoul((*it)[4]);
    EXPECT_EQ(passed + failed, cases) << (*it)[0];
    ops[(*it)[1]] = {cases, failed};
  }
  return ops;
}

// The page's totals: cases, passed, failed.
std::vector<std::string> page_totals(const std::string& html) {
  return {test_support::text_of(html, "total-cases"), test_support::text_of(html, "passed-cases"),
          test_support::text_of(html, "failed-cases")};
}

std::vector<std::string> totals(std::size_t cases, std::size_t failed) {
  return {std::to_string(cases), std::to_string(cases - failed), std::to_string(failed)};
}

const char* const kCampaignLine = R"(campaign \(reference vs worker\): (\d+) cases in .* (\d+) failures)";

TEST_F(CampaignOutputTest, FuzzSummaryCountsEveryCaseTheCampaignRan) {
  const std::uint64_t seed = test_support::campaign_seed();
  SCOPED_TRACE(fmt::format("NVFP4_TEST_SEED={}", seed));
  const CliRun r = run(fmt::format("fuzz {} --cases 175 --seed {} --max-dim 64 --corpus {} --report {}", kWorker, seed,
                                   path("found"), path("report")));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::vector<std::size_t> printed = numbers(r.out, kCampaignLine);
  ASSERT_EQ(printed.size(), 2u) << r.out;
  const auto [cases, failures] = std::pair(printed[0], printed[1]);
  EXPECT_EQ(cases, 175u) << "--cases 175 is seven whole rounds of 25 cases";
  ASSERT_GT(failures, 0u);
  ASSERT_LT(failures, cases);

  const std::string index = test_support::slurp_text(dir_ / "report" / "index.html");
  EXPECT_EQ(page_totals(index), totals(cases, failures));
  EXPECT_EQ(page_operations(index), printed_operations(r.out));
  // Every failure listed and linked to its page.
  const std::string_view failed_rows =
      test_support::between(test_support::between(index, "id=\"failures\"", "</table>"), "<tbody>", "</tbody>");
  EXPECT_EQ(test_support::count(failed_rows, "<tr>"), failures);
  EXPECT_EQ(test_support::count(failed_rows, "<a href="), failures);
}

TEST_F(CampaignOutputTest, GateSummaryCountsTheCorpusAndEveryGeneratedCase) {
  // A corpus of failing cases: a campaign's saved cases.
  ASSERT_EQ(run(fmt::format("fuzz {} --cases 175 --seed 7 --max-dim 64 --corpus {}", kWorker, path("corpus"))).exit_code, 1);
  const CliRun r = run(fmt::format("gate {} --time 2s --corpus {} --found {} --report {}", kWorker, path("corpus"), path("found"),
                                   path("report")));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::vector<std::size_t> corpus = numbers(r.out, R"(corpus: (\d+) cases replayed, (\d+) failed)"),
                                 vectors = numbers(r.out, R"(vectors: (\d+) cases replayed, (\d+) failed)"),
                                 campaign = numbers(r.out, kCampaignLine),
                                 closing = numbers(r.out, R"(gate: (\d+) passed, (\d+) failed)");
  ASSERT_EQ(corpus.size(), 2u) << r.out;
  ASSERT_EQ(vectors.size(), 2u) << r.out;
  ASSERT_EQ(campaign.size(), 2u) << r.out;
  ASSERT_EQ(closing.size(), 2u) << r.out;
  ASSERT_GT(corpus[0], 0u);
  ASSERT_GT(campaign[1], 0u);
  // The fake worker's mismatch mode flips a scale bit of every quantize it declares: the vectors
  // fail too.
  ASSERT_GT(vectors[1], 0u);
  const std::size_t cases = corpus[0] + vectors[0] + campaign[0], failed = corpus[1] + vectors[1] + campaign[1];
  EXPECT_EQ(closing, (std::vector<std::size_t>{cases - failed, failed}));

  const std::string index = test_support::slurp_text(dir_ / "report" / "index.html");
  EXPECT_EQ(page_totals(index), totals(cases, failed));
  EXPECT_EQ(page_operations(index), printed_operations(r.out));
}

// Neither RapidCheck's configuration line nor its reproduction line, in any of the streams.
void expect_no_rapidcheck(const CliRun& r, const std::string& what) {
  for (const char* said : {"RapidCheck", "RC_PARAMS", "Using configuration"}) {
    EXPECT_EQ(r.out.find(said), std::string::npos) << what << ": stdout says " << said << ":\n" << r.out;
    EXPECT_EQ(r.err.find(said), std::string::npos) << what << ": stderr says " << said << ":\n" << r.err;
  }
}

// (Its name leaves out the words it looks for: the scratch directory carries it.)
TEST_F(CampaignOutputTest, PropertyLibraryLinesNeverReachTheUser) {
  // RC_PARAMS unset, and set with RapidCheck's verbose output asked for: the output is the same.
  for (const char* rc_params : {static_cast<const char*>(nullptr), "seed=1 verbose_progress=1 verbose_shrinking=1"}) {
    SCOPED_TRACE(rc_params ? rc_params : "RC_PARAMS unset");
    const ScopedEnv env("RC_PARAMS", rc_params);
    fs::remove_all(dir_ / "found");
    const CliRun fuzz = run(fmt::format("fuzz {} --cases 175 --seed 3 --max-dim 64 --corpus {}", kWorker, path("found")));
    EXPECT_EQ(fuzz.exit_code, 1) << fuzz.out << fuzz.err;
    expect_no_rapidcheck(fuzz, "fuzz");
    // The campaign's own way to reproduce a failure: the FAIL line and the saved case.
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(fuzz.out, m, std::regex(R"(  FAIL quantize \S+ after \d+ cases: .*\n +verdict: .*\n +saved (\S+))")))
        << fuzz.out;
    EXPECT_TRUE(fs::is_regular_file(m[1].str())) << m[1];

    const CliRun gate = run(fmt::format("gate {} --time 1s --corpus {} --found {} --report {}", kWorker, path("no-corpus"),
                                        path("gate-found"), path("gate-report")));
    EXPECT_EQ(gate.exit_code, 1) << gate.out << gate.err;
    EXPECT_NE(gate.out.find("  FAIL quantize"), std::string::npos) << gate.out;
    expect_no_rapidcheck(gate, "gate");

    const CliRun selftest = run(fmt::format("worker-selftest --worker '{} mismatch'", NVFP4_FAKE_WORKER));
    EXPECT_EQ(selftest.exit_code, 1) << selftest.out << selftest.err;
    EXPECT_NE(selftest.out.find("FAIL"), std::string::npos) << selftest.out;
    expect_no_rapidcheck(selftest, "worker-selftest");
  }
}

}  // namespace
}  // namespace nvfp4
