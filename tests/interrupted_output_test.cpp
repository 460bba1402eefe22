// Outputs survive a writer killed at any point (SIGKILL: no handler, no cleanup): a converted
// checkpoint directory is complete or absent, corpus cases are complete or absent, nothing partial
// has a name a reader takes for an output, and the next run removes what the killed one left.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/corpus.h"
#include "io/safetensors.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// nvfp4-verify with these arguments, its output discarded; returns its pid.
pid_t spawn(const std::vector<std::string>& args) {
  std::vector<std::string> all = {NVFP4_CLI_PATH};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// Waits for `pid`; true when it exited 0.
bool reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The entries of `dir` whose names start with '.': the temporaries a writer uses.
std::vector<std::string> hidden(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string()[0] == '.') names.push_back(e.path().filename().string());
  return names;
}

// Every file under `dir` by relative path, with its bytes.
std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = test_support::slurp_text(e.path());
  return files;
}

class InterruptedOutputTest : public test_support::TempDirTest {
 protected:
  // Starts `args`, kills it with SIGKILL after `delay` (or once it has exited, reaps it).
  void kill_after(const std::vector<std::string>& args, std::chrono::microseconds delay) {
    const pid_t pid = spawn(args);
    std::this_thread::sleep_for(delay);
    ::kill(pid, SIGKILL);
    reap(pid);
  }

  std::mt19937 rng_{std::random_device{}()};
};

// A model of 2-D BF16 linears big enough that converting it takes a while.
void write_model(const fs::path& dir, std::mt19937& rng) {
  fs::create_directories(dir);
  io::File f;
  for (int l = 0; l < 4; ++l)
    for (const char* m : {"gate_proj", "up_proj", "down_proj"}) {
      std::vector<std::uint16_t> w(256 * 1024);
      for (std::uint16_t& v : w) v = std::uint16_t(0x3C00 + rng() % 0x800);
      f.tensors["model.layers." + std::to_string(l) + ".mlp." + m + ".weight"] =
          io::make_tensor_from<std::uint16_t>(io::DType::BF16, {256, 1024}, w);
    }
  io::write_file_atomic(dir / "model.safetensors", f);
  std::ofstream(dir / "config.json") << nlohmann::json{{"model_type", "llama"}}.dump();
  std::ofstream(dir / "tokenizer.json") << R"({"version": "1.0"})";
}

TEST_F(InterruptedOutputTest, AKilledConvertCheckpointLeavesTheOutputCompleteOrAbsent) {
  write_model(dir_ / "src", rng_);
  auto convert = [&](const std::string& out) {
    return std::vector<std::string>{
        "convert-checkpoint", "--input", (dir_ / "src").string(), "--output", (dir_ / out).string(), "--format", "modelopt",
        "--threads",          "1"};
  };
  const auto t0 = Clock::now();
  ASSERT_TRUE(reap(spawn(convert("ref"))));
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
  const std::map<std::string, std::string> want = contents(dir_ / "ref");
  ASSERT_GT(want.size(), 2u);

  std::size_t interrupted = 0, completed = 0;
  for (int run = 0; run < 8; ++run) {
    if (run == 0) {  // killed for certain while it writes: once its temporary directory is there
      const pid_t pid = spawn(convert("out"));
      const auto deadline = Clock::now() + std::chrono::seconds(60);
      auto staged = [&] {
        for (const std::string& name : hidden(dir_))
          if (name.rfind(".out.nvfp4-tmp-", 0) == 0) return true;
        return false;
      };
      while (!staged() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::microseconds(200));
      ::kill(pid, SIGKILL);
      reap(pid);
    } else {
      kill_after(convert("out"), std::chrono::microseconds(std::uniform_int_distribution<long>(0, took.count())(rng_)));
    }
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name[0] == '.')
        EXPECT_NE(name.find(".nvfp4-tmp-"), std::string::npos) << name << ": not a temporary";
      else
        EXPECT_TRUE(name == "src" || name == "ref" || name == "out") << name << ": a leftover where a user sees it";
    }
    interrupted += !hidden(dir_).empty();
    if (fs::exists(dir_ / "out")) {
      ++completed;
      EXPECT_EQ(contents(dir_ / "out"), want) << "run " << run << ": a partial output under the output's name";
      fs::remove_all(dir_ / "out");
    }
  }
  EXPECT_GE(interrupted, 1u) << "no run was interrupted while writing: the test proved nothing";
  // The next run removes what the killed ones left, and writes the whole output.
  ASSERT_TRUE(reap(spawn(convert("out"))));
  EXPECT_EQ(hidden(dir_), std::vector<std::string>{});
  EXPECT_EQ(contents(dir_ / "out"), want);
  std::printf("[          ] %zu of 8 runs killed while writing, %zu completed before the kill\n", interrupted, completed);
}

TEST_F(InterruptedOutputTest, AKilledFuzzLeavesOnlyCompleteCorpusCases) {
  const fs::path corpus = dir_ / "found";
  auto fuzz = [&](const std::string& mode, std::uint32_t seed, const std::string& cases = "200") {
    return std::vector<std::string>{"fuzz",
                                    "--cases",
                                    cases,
                                    "--ops",
                                    "quantize",
                                    "--seed",
                                    std::to_string(seed),
                                    "--backends",
                                    "reference,worker",
                                    "--worker",
                                    std::string(NVFP4_FAKE_WORKER) + " " + mode,
                                    "--corpus",
                                    corpus.string()};
  };
  const auto t0 = Clock::now();
  ASSERT_FALSE(reap(spawn(fuzz("mismatch", 1)))) << "the mismatching worker's failures end the campaign with 1";
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
  ASSERT_FALSE(fs::is_empty(corpus)) << "the campaign saved no case: nothing to interrupt";
  fs::remove_all(corpus);

  for (int run = 0; run < 8; ++run) {
    kill_after(fuzz("mismatch", rng_()), std::chrono::microseconds(std::uniform_int_distribution<long>(0, took.count())(rng_)));
    if (!fs::exists(corpus)) continue;
    for (const auto& e : fs::directory_iterator(corpus)) {
      const std::string name = e.path().filename().string();
      if (name[0] == '.') {
        EXPECT_NE(name.find(".nvfp4-tmp-"), std::string::npos) << name << ": not a temporary";
        continue;
      }
      EXPECT_EQ(e.path().extension(), ".safetensors") << name;
      EXPECT_NO_THROW(cases::load_case(e.path())) << name << ": a partial case under a case's name";
    }
    const std::vector<fs::path> cases = cases::collect_case_files({corpus});
    for (const fs::path& c : cases) EXPECT_NE(c.filename().string()[0], '.') << c << ": a temporary taken for a case";
  }
  // What a killed writer left (its pid is gone) goes at the next run; a live writer's stays.
  fs::create_directories(corpus);
  const pid_t dead = spawn({"--version"});
  reap(dead);
  const std::string stale = ".case-00.safetensors.nvfp4-tmp-" + std::to_string(dead) + "-0-0000abcd";
  const std::string live = ".case-01.safetensors.nvfp4-tmp-" + std::to_string(::getpid()) + "-0-0000abcd";
  std::ofstream(corpus / stale) << "half a case";
  std::ofstream(corpus / live) << "half a case";
  ASSERT_TRUE(reap(spawn(fuzz("conform", 1, "10"))));
  EXPECT_EQ(hidden(corpus), std::vector<std::string>{live});
}

}  // namespace
}  // namespace nvfp4
