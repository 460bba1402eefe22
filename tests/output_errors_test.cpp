// Every command that writes checks its output paths before any work: an output that cannot be
// written there (a path under a regular file, a /proc directory: refused to root too, as tests run
// in CI; a file output that names a directory) ends the command with exit status 2, one line on
// stderr naming the option and the path, nothing on stdout, and no file or temporary left.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;

class OutputErrorsTest : public test_support::TempDirTest {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "empty-corpus");
    std::ofstream(dir_ / "file") << "a regular file";
    std::mt19937 rng(std::random_device{}());
    std::vector<float> x(32 * 64);
    for (float& v : x) v = std::normal_distribution<float>(0, 2)(rng);
    io::File f;
    f.tensors["x"] = io::make_tensor_from<float>(io::DType::F32, {32, 64}, x);
    io::write_file_atomic(dir_ / "in.safetensors", f);
    ASSERT_EQ(run("quantize --input " + path("in.safetensors") + " --output " + path("q.safetensors")).exit_code, 0);
  }

  test_support::CliRun run(const std::string& args) { return test_support::run_cli(args, dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Under the regular file "file": no directory can be made there, whoever runs the test.
  std::string under_file(const std::string& name = "out") const { return (dir_ / "file" / name).string(); }

  // Every path under the test directory, hidden ones included.
  std::vector<std::string> tree() const {
    std::vector<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) names.push_back(e.path().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  // `args` (which name `target` for `option`) is refused before any work, in one line.
  void expect_refused(const std::string& args, const std::string& option, const std::string& target) {
    const std::vector<std::string> before = tree();
    const test_support::CliRun r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\nexpected one line: " << r.err;
    EXPECT_EQ(r.err.rfind("nvfp4-verify: " + option + " " + target + ": ", 0), 0u) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.out, "") << args << ": refused after some work began";
    EXPECT_EQ(tree(), before) << args << ": left a file or a temporary behind";
  }
};

TEST_F(OutputErrorsTest, TensorCommandsRefuseAnUnwritableOutput) {
  const std::string in = " --input " + path("in.safetensors"), q = path("q.safetensors");
  for (const std::string& target :
       {under_file("out.safetensors"), std::string("/proc/nvfp4-out.safetensors"), path("empty-corpus")}) {
    expect_refused("quantize" + in + " --output " + target, "--output", target);
    expect_refused("dequantize --input " + q + " --output " + target, "--output", target);
    expect_refused("rht" + in + " --output " + target, "--output", target);
    expect_refused("gemm --a " + q + " --b " + q + " --output " + target, "--output", target);
    expect_refused("cast-master-weights" + in + " --ranks 2 --output " + target, "--output", target);
  }
}

TEST_F(OutputErrorsTest, CampaignCommandsRefuseAnUnwritableReportCorpusOrJunitBeforeTheCampaign) {
  const std::string fuzz = "fuzz --cases 20 --backends reference,metamorphic --corpus ";
  expect_refused(fuzz + under_file(), "--corpus", under_file());
  expect_refused(fuzz + path("found") + " --report " + under_file(), "--report", under_file());
  expect_refused(fuzz + path("found") + " --junit " + under_file("j.xml"), "--junit", under_file("j.xml"));
  expect_refused("fuzz --cases 20 --backends reference,metamorphic --out " + under_file(), "--out", under_file());
  const std::string merge = "merge " + path("shard-0") + " --report ";
  expect_refused(merge + under_file(), "--report", under_file());
  expect_refused(merge + path("r") + " --junit " + under_file("j.xml"), "--junit", under_file("j.xml"));
  expect_refused(merge + path("r") + " --corpus " + under_file(), "--corpus", under_file());
  const std::string gate = "gate --time 1s --backends reference,metamorphic --corpus " + path("empty-corpus");
  expect_refused(gate + " --found " + path("found") + " --report " + under_file(), "--report", under_file());
  expect_refused(gate + " --found " + path("found") + " --report /proc/nvfp4-report", "--report", "/proc/nvfp4-report");
  expect_refused(gate + " --found " + under_file(), "--found", under_file());
  expect_refused(gate + " --found " + path("found") + " --report " + path("r") + " --junit " + path("empty-corpus"), "--junit",
                 path("empty-corpus"));
  expect_refused(gate + " --found " + path("found") + " --report " + path("r") + " --junit " + under_file("j.xml"), "--junit",
                 under_file("j.xml"));
}

TEST_F(OutputErrorsTest, CorpusAndCheckCommandsRefuseAnUnwritableOutput) {
  expect_refused("seed-corpus --output " + under_file(), "--output", under_file());
  ASSERT_EQ(run("seed-corpus --output " + path("cases")).exit_code, 0);
  expect_refused("replay " + path("cases") + " --report " + under_file(), "--report", under_file());
  expect_refused("check --input " + path("in.safetensors") + " --outputs " + path("q.safetensors") + " --report " + under_file(),
                 "--report", under_file());
  expect_refused("bench --json " + under_file("b.json"), "--json", under_file("b.json"));
  expect_refused("bench --json " + path("cases"), "--json", path("cases"));
}

TEST_F(OutputErrorsTest, CheckpointCommandsRefuseAnUnwritableOutput) {
  fs::create_directories(dir_ / "src");
  std::vector<std::uint16_t> w(64 * 64);
  std::mt19937 rng(std::random_device{}());
  for (std::uint16_t& v : w) v = std::uint16_t(0x3C00 + rng() % 0x400);  // BF16 in [2^-7, 2^-6)
  io::File model;
  model.tensors["model.layers.0.mlp.up_proj.weight"] = io::make_tensor_from<std::uint16_t>(io::DType::BF16, {64, 64}, w);
  io::write_file_atomic(dir_ / "src" / "model.safetensors", model);
  std::ofstream(dir_ / "src" / "config.json") << nlohmann::json{{"model_type", "llama"}}.dump();
  const std::string convert = "convert-checkpoint --format modelopt --input " + path("src") + " --output ";
  expect_refused(convert + under_file("q"), "--output", under_file("q"));
  expect_refused(convert + "/proc/nvfp4-q", "--output", "/proc/nvfp4-q");
  const test_support::CliRun made = run(convert + path("q"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string check = "check-checkpoint --source " + path("src") + " --quantized " + path("q");
  expect_refused(check + " --junit " + under_file("j.xml"), "--junit", under_file("j.xml"));
  expect_refused(check + " --junit " + path("q"), "--junit", path("q"));
  expect_refused(check + " --report " + under_file("r"), "--report", under_file("r"));
  expect_refused(check + " --report " + path("q") + "/model.safetensors", "--report", path("q") + "/model.safetensors");
}

}  // namespace
}  // namespace nvfp4
