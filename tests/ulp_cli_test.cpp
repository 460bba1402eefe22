// `--compare ulp` on the command line (docs/guides/gemm-ulp.md), as a user runs it: replay of a gemm case
// against a worker that moves one element of d by exactly one ULP reports that element in the
// histogram, passes with --max-ulp 1 and fails with --max-ulp 0; a campaign saves what fails the
// bound and the saved case replays; the reports show the ULP heatmap; the tolerance is refused for
// operations without GEMM outputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <regex>

#include <fmt/format.h>

#include "cases/corpus.h"
#include "cases/registry.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gemm_cases.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;

class UlpCliTest : public test_support::TempDirTest {
 protected:
  test_support::CliRun run(const std::string& args) { return test_support::run_cli(args, dir_); }

  // A saved gemm case of M x N outputs (quantized normals), in its own folder.
  fs::path gemm_case(std::int64_t M, std::int64_t N, const std::string& output = "F32") {
    cases::CaseRecord r;
    r.c = test_support::normal_gemm_case(M, N, 64, std::random_device{}(), output);
    r.origin = "ulp_cli_test";
    return cases::save_case(dir_ / "cases", r);
  }

  static std::string ulp1_worker() { return fmt::format(" --backends reference,worker --worker '{} ulp1'", NVFP4_FAKE_WORKER); }
};

// The histogram row of `label` in describe_ulp_totals's table, with its count.
bool has_row(const std::string& out, const std::string& label, std::uint64_t count) {
  return std::regex_search(out, std::regex(fmt::format(R"(\n  {}\s+{}\s+[0-9.]+%\n)", label, count)));
}

TEST_F(UlpCliTest, ReplayCountsTheOneUlpAndPassesOrFailsByTheBound) {
  for (const char* output : {"F32", "BF16"}) {
    SCOPED_TRACE(output);
    const fs::path file = gemm_case(32, 48, output);
    const auto within = run(fmt::format("replay {}{} --compare ulp --max-ulp 1", file.string(), ulp1_worker()));
    EXPECT_EQ(within.exit_code, 0) << within.out << within.err;
    EXPECT_TRUE(has_row(within.out, "0", 32 * 48 - 1)) << within.out;
    EXPECT_TRUE(has_row(within.out, "1", 1)) << within.out;
    EXPECT_NE(within.out.find("d: 1 of 1536 elements differ, max 1 ulp"), std::string::npos) << within.out;
    EXPECT_NE(within.out.find("bound --max-ulp 1: 0 of 1 output tensor beyond it"), std::string::npos) << within.out;
    EXPECT_NE(within.out.find("d[31, 47]"), std::string::npos) << within.out;  // the worst element: the last

    const auto beyond = run(fmt::format("replay {}{} --compare ulp --max-ulp 0", file.string(), ulp1_worker()));
    EXPECT_EQ(beyond.exit_code, 1) << beyond.out << beyond.err;
    EXPECT_NE(beyond.out.find("[mismatch] d: 1 of 1536 elements beyond 0 ulps; worst 1 ulps at [31, 47]"), std::string::npos)
        << beyond.out;
    EXPECT_TRUE(has_row(beyond.out, "1", 1)) << beyond.out;

    const auto report_only = run(fmt::format("replay {}{} --compare ulp", file.string(), ulp1_worker()));
    EXPECT_EQ(report_only.exit_code, 0) << report_only.out << report_only.err;
    EXPECT_NE(report_only.out.find("no bound (--max-ulp): every case passes"), std::string::npos) << report_only.out;

    // Bit for bit (the default), the same answer is a mismatch.
    EXPECT_EQ(run(fmt::format("replay {}{}", file.string(), ulp1_worker())).exit_code, 1);
    fs::remove_all(dir_ / "cases");
  }
}

TEST_F(UlpCliTest, ReportsShowTheUlpHeatmapHistogramAndWorstElements) {
  const fs::path file = gemm_case(160, 144);
  const fs::path report = dir_ / "report";
  const auto r =
      run(fmt::format("replay {}{} --compare ulp --max-ulp 0 --report {}", file.string(), ulp1_worker(), report.string()));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string index = test_support::slurp_text(report / "index.html");
  EXPECT_NE(index.find("id=\"ulp-totals\""), std::string::npos);
  EXPECT_NE(index.find("id=\"ulp-histogram\""), std::string::npos);
  const std::string page = test_support::slurp_text(report / (file.stem().string() + ".html"));
  EXPECT_NE(page.find("<svg class=\"ulpmap\" data-tensor=\"d\" data-rows=\"160\" data-cols=\"144\" data-cell-rows=\"2\" "
                      "data-cell-cols=\"2\""),
            std::string::npos);
  EXPECT_NE(page.find("<title>rows 158-159, columns 142-143: max 1 ulps</title>"), std::string::npos);
  EXPECT_NE(page.find("class=\"ulp-worst\" data-tensor=\"d\""), std::string::npos);

  // A bitwise mismatch of a GEMM shows its ULP distances too.
  const fs::path bitwise = dir_ / "bitwise";
  ASSERT_EQ(run(fmt::format("replay {}{} --report {}", file.string(), ulp1_worker(), bitwise.string())).exit_code, 1);
  EXPECT_NE(test_support::slurp_text(bitwise / (file.stem().string() + ".html")).find("class=\"ulpmap\""), std::string::npos);
}

TEST_F(UlpCliTest, CampaignSavesWhatFailsTheBoundAndTheSavedCaseReplays) {
  const std::string common =
      fmt::format("fuzz --ops gemm{} --compare ulp --max-dim 64 --seed 3 --corpus {}", ulp1_worker(), (dir_ / "found").string());
  const auto pass = run(common + " --cases 40 --max-ulp 1");
  EXPECT_EQ(pass.exit_code, 0) << pass.out << pass.err;
  EXPECT_NE(pass.out.find("ULP distance to EXACT:"), std::string::npos) << pass.out;
  EXPECT_FALSE(fs::exists(dir_ / "found"));

  const auto fail = run(common + " --cases 40 --max-ulp 0");
  EXPECT_EQ(fail.exit_code, 1) << fail.out << fail.err;
  std::vector<fs::path> saved = cases::collect_case_files({dir_ / "found"});
  ASSERT_FALSE(saved.empty()) << fail.out;
  EXPECT_NE(cases::load_case(saved[0]).origin.find("compare=ulp max-ulp=0"), std::string::npos);
  const auto again = run(fmt::format("replay {}{} --compare ulp --max-ulp 0", saved[0].string(), ulp1_worker()));
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.out.find("[mismatch, as saved]"), std::string::npos) << again.out;
  EXPECT_EQ(run(fmt::format("replay {}{} --compare ulp --max-ulp 1", saved[0].string(), ulp1_worker())).exit_code, 0);
}

TEST_F(UlpCliTest, UlpIsRefusedForOperationsWithoutGemmOutputs) {
  const auto quantize = run("fuzz --compare ulp --ops quantize --cases 1");
  EXPECT_EQ(quantize.exit_code, 2) << quantize.out;
  EXPECT_NE(quantize.err.find("--compare ulp compares GEMM outputs only"), std::string::npos) << quantize.err;
  EXPECT_NE(quantize.err.find("'quantize'"), std::string::npos) << quantize.err;
  EXPECT_EQ(std::count(quantize.err.begin(), quantize.err.end(), '\n'), 1) << quantize.err;

  const auto bound = run("fuzz --max-ulp 3 --ops gemm --cases 1");
  EXPECT_EQ(bound.exit_code, 2);
  EXPECT_NE(bound.err.find("--max-ulp needs --compare ulp"), std::string::npos) << bound.err;
  EXPECT_EQ(run("replay x.safetensors --compare ulps").exit_code, 2);

  // Replay skips the saved cases of other operations, saying why.
  cases::CaseRecord q;
  q.c = cases::make_case("amax_global");
  q.c.inputs["x"] = io::make_tensor(io::DType::F32, {16, 16}, std::vector<std::uint8_t>(16 * 16 * 4, 0));
  const fs::path file = cases::save_case(dir_ / "cases", q);
  const auto skipped = run(fmt::format("replay {} --backends reference,metamorphic --compare ulp", file.string()));
  EXPECT_EQ(skipped.exit_code, 0) << skipped.out << skipped.err;
  EXPECT_NE(skipped.out.find("not a GEMM operation"), std::string::npos) << skipped.out;
  EXPECT_NE(skipped.out.find("1 skipped (not GEMM operations)"), std::string::npos) << skipped.out;
}

}  // namespace
}  // namespace nvfp4
