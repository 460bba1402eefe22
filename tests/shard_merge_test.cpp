// A campaign run as three shards (`fuzz --shard K/3 --out DIR`) and merged is the campaign run as
// one process: the same cases per operation, the same failures in the same rounds, the same saved
// case files, JUnit totals that add up and a summary page that counts every shard's cases; merge
// refuses shards that are not one whole campaign, in one line, before it writes anything. The
// backends are the reference and the fake worker (tests/support/fake_worker.cpp) in its mismatch
// mode, which fails on some cases.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/campaign_seed.h"
#include "tests/support/cli_runner.h"
#include "tests/support/html_text.h"
#include "tests/support/temp_dir.h"
#include "tests/support/xml_dom.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kShards = 3;

class ShardMergeTest : public test_support::TempDirTest {
 protected:
  test_support::CliRun run(const std::string& args) { return test_support::run_cli(args, dir_, 120); }

  std::string shard_dirs(const std::vector<std::string>& names) const {
    std::string s;
    for (const std::string& n : names) s += " " + (dir_ / n).string();
    return s;
  }

  // Runs `fuzz_args` as shards 0..kShards-1 into dir_/shard-K.
  void run_shards(const std::string& fuzz_args) {
    for (int k = 0; k < kShards; ++k) {
      const auto r =
          run(fmt::format("{} --shard {}/{} --out {}", fuzz_args, k, kShards, (dir_ / fmt::format("shard-{}", k)).string()));
      ASSERT_LE(r.exit_code, 1) << r.out << r.err;
    }
  }
};

json read_json(const fs::path& p) { return json::parse(test_support::slurp_text(p)); }

// A JUnit file's tests and failures, summed over its suites, as libxml2 reads them.
std::pair<long, long> junit_totals(const fs::path& file) {
  std::string error;
  const std::optional<test_support::XmlElement> root = test_support::parse_xml(test_support::slurp_text(file), error);
  EXPECT_TRUE(root) << file << ": " << error;
  if (!root) return {-1, -1};
  long tests = 0, failures = 0;
  for (const test_support::XmlElement* s : root->all("testsuite")) {
    tests += std::stol(s->attr("tests"));
    failures += std::stol(s->attr("failures"));
  }
  return {tests, failures};
}

// A corpus directory's files: name -> bytes.
std::map<std::string, std::string> corpus_files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir)) files[e.path().filename().string()] = test_support::slurp_text(e.path());
  return files;
}

using Failure = std::tuple<std::string, std::string, std::uint64_t, std::string>;  // operation, profile, round, problem

TEST_F(ShardMergeTest, ThreeShardsMergedAreTheCampaignRunAsOneProcess) {
  const std::uint64_t seed = test_support::campaign_seed();
  SCOPED_TRACE(fmt::format("NVFP4_TEST_SEED={}", seed));
  const std::string campaign =
      fmt::format("fuzz --backends reference,worker --worker '{} mismatch' --cases 175 --seed {} --jobs 1 --max-dim 64",
                  NVFP4_FAKE_WORKER, seed);
  const auto one = run(campaign + " --out " + (dir_ / "one").string());
  ASSERT_EQ(one.exit_code, 1) << one.out << one.err;
  run_shards(campaign);
  const json single = read_json(dir_ / "one" / "campaign.json");
  EXPECT_EQ(single.at("cases"), 175) << "--cases 175 is seven whole rounds of 25 cases";
  const std::size_t found = single.at("failures").size();
  ASSERT_GT(found, 0u);
  ASSERT_LT(found, 8u) << "the fault must fail fewer rounds than a shard's failure limit";

  const auto merged = run("merge" + shard_dirs({"shard-0", "shard-1", "shard-2"}) + " --report " + (dir_ / "report").string() +
                          " --junit " + (dir_ / "merged.xml").string() + " --corpus " + (dir_ / "corpus").string());
  ASSERT_EQ(merged.exit_code, 1) << merged.out << merged.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(merged.out, m, std::regex(R"(merge \(.*\): 3 shards of seed \d+, (\d+) cases, (\d+) failures)")))
      << merged.out;
  const std::size_t merged_cases = std::stoul(m[1]), merged_failures = std::stoul(m[2]);
  EXPECT_EQ(merged_cases, single.at("cases").get<std::size_t>());
  EXPECT_EQ(merged_failures, found);

  // The per-operation table and the failure lines of merge's output against one process's record.
  std::map<std::string, std::pair<std::size_t, std::size_t>> ops, want_ops;
  std::vector<Failure> failures, want_failures;
  const std::regex row(R"(^  (\S+) +(\d+) +[0-9.]+ +(\d+)$)"), fail(R"(^  FAIL (\S+) (\S+) round (\d+) \(shard \d\): (.*)$)");
  std::stringstream lines(merged.out);
  for (std::string line; std::getline(lines, line);)
    if (std::regex_match(line, m, row) && m[1] != "operation")
      ops[m[1]] = {std::stoul(m[2]), std::stoul(m[3])};
    else if (std::regex_match(line, m, fail))
      failures.emplace_back(m[1], m[2], std::stoull(m[3]), m[4]);
  for (const auto& [op, s] : single.at("per_operation").items()) want_ops[op] = {s.at("cases"), s.at("failures")};
  for (const json& f : single.at("failures"))
    want_failures.emplace_back(f.at("operation"), f.at("profile"), f.at("round"), f.at("problem"));
  EXPECT_EQ(ops, want_ops);
  EXPECT_EQ(failures, want_failures);

  // The saved cases: the same files, byte for byte, in the merged corpus and in one process's.
  const std::map<std::string, std::string> corpus = corpus_files(dir_ / "corpus"), want = corpus_files(dir_ / "one" / "corpus");
  EXPECT_FALSE(want.empty());
  EXPECT_TRUE(corpus == want) << corpus.size() << " merged case files, " << want.size() << " of one process";

  // JUnit: the merged file's totals are the shards' files' totals added up.
  std::pair<long, long> sum{0, 0};
  for (int k = 0; k < kShards; ++k) {
    const auto [tests, failed] = junit_totals(dir_ / fmt::format("shard-{}", k) / "junit.xml");
    sum.first += tests;
    sum.second += failed;
  }
  EXPECT_GT(sum.second, 0);
  EXPECT_EQ(junit_totals(dir_ / "merged.xml"), sum);

  // The report: the summary links every shard's failure page, copied beside it.
  const std::string index = test_support::slurp_text(dir_ / "report" / "index.html");
  for (int k = 0; k < kShards; ++k)
    for (const json& f : read_json(dir_ / fmt::format("shard-{}", k) / "campaign.json").at("failures")) {
      const std::string link = fmt::format("shard-{}/{}", k, fs::path(f.at("page").get<std::string>()).filename().string());
      EXPECT_TRUE(fs::is_regular_file(dir_ / "report" / link)) << link;
      EXPECT_NE(index.find("href=\"" + link + "\""), std::string::npos) << link;
    }
  // ... and counts every shard's cases, as merge printed them, in all and per operation.
  EXPECT_EQ(test_support::text_of(index, "total-cases"), std::to_string(merged_cases));
  EXPECT_EQ(test_support::text_of(index, "passed-cases"), std::to_string(merged_cases - merged_failures));
  EXPECT_EQ(test_support::text_of(index, "failed-cases"), std::to_string(merged_failures));
  for (const auto& [op, counts] : ops)
    EXPECT_NE(index.find(fmt::format("<td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td "
                                     "class=\"n\">{}</td>",
                                     op, counts.first, counts.first - counts.second, counts.second)),
              std::string::npos)
        << op;
}

TEST_F(ShardMergeTest, MergeRefusesShardsThatAreNotOneWholeCampaignInOneLine) {
  run_shards("fuzz --backends reference,metamorphic --cases 60 --seed 5 --jobs 1 --max-dim 32");
  // Shard 1 copied, and changed: another seed, a corrupt record, a failure whose saved case lies
  // outside the shard's directory, no record (a shard that did not finish).
  for (const char* name : {"other-seed", "corrupt", "escaping", "unfinished"})
    fs::copy(dir_ / "shard-1", dir_ / name, fs::copy_options::recursive);
  json other = read_json(dir_ / "other-seed" / "campaign.json");
  other["campaign"]["seed"] = 6;
  std::ofstream(dir_ / "other-seed" / "campaign.json") << other.dump(2);
  json escaping = read_json(dir_ / "escaping" / "campaign.json");
  escaping["failures"].push_back({{"operation", "quantize"},
                                  {"profile", "te"},
                                  {"verdict", "mismatch"},
                                  {"problem", "p"},
                                  {"explanation", "e"},
                                  {"causes", json::array()},
                                  {"tied", 0},
                                  {"shape", {16, 16}},
                                  {"round", 1},
                                  {"cases_to_detection", 1},
                                  {"case_file", "corpus/../../x.safetensors"},
                                  {"page", ""}});
  std::ofstream(dir_ / "escaping" / "campaign.json") << escaping.dump(2);
  const std::string record = test_support::slurp_text(dir_ / "corrupt" / "campaign.json");
  std::ofstream(dir_ / "corrupt" / "campaign.json") << record.substr(0, record.size() / 2);
  fs::remove(dir_ / "unfinished" / "campaign.json");

  const std::pair<std::vector<std::string>, std::string> refused[] = {
      {{"shard-0", "shard-2"}, "shard 1 of 3 is missing"},
      {{"shard-1"}, "shards 0, 2 of 3 are missing"},
      {{"shard-0", "shard-1", "shard-2", "shard-1"}, "are both shard 1/3"},
      {{"shard-0", "other-seed", "shard-2"}, "is a shard of another campaign than"},
      {{"shard-0", "corrupt", "shard-2"}, "campaign.json: not JSON"},
      {{"shard-0", "escaping", "shard-2"}, "is not a file of the shard's corpus/ folder"},
      {{"shard-0", "unfinished", "shard-2"}, "no campaign.json"},
      {{"shard-0", "shard-1", "absent"}, "not a directory"},
  };
  for (const auto& [shards, said] : refused) {
    const auto r = run("merge" + shard_dirs(shards) + " --report " + (dir_ / "report").string());
    EXPECT_EQ(r.exit_code, 2) << said << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "report")) << said << ": wrote a report";
  }
  const auto other_seed =
      run("merge" + shard_dirs({"shard-0", "other-seed", "shard-2"}) + " --report " + (dir_ / "report").string());
  EXPECT_NE(other_seed.err.find("seed 6, not 5"), std::string::npos) << other_seed.err;

  const auto whole = run("merge" + shard_dirs({"shard-2", "shard-0", "shard-1"}) + " --report " + (dir_ / "report").string());
  EXPECT_EQ(whole.exit_code, 0) << whole.out << whole.err;
  EXPECT_NE(whole.out.find("3 shards of seed 5, 75 cases, 0 failures"), std::string::npos) << whole.out;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "report" / "index.html"));
}

TEST_F(ShardMergeTest, FuzzOutConflictsWithTheOutputsItHolds) {
  for (const char* option : {"--corpus", "--report", "--junit"}) {
    const auto r = run(fmt::format("fuzz --backends reference,metamorphic --cases 10 --out {} {} {}", (dir_ / "out").string(),
                                   option, (dir_ / "x").string()));
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out"));
  }
}

}  // namespace
}  // namespace nvfp4
