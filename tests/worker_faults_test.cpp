// Worker faults that must not outlast or stall the harness: a worker that closes its stdout is a
// crash; a signal to the harness kills every worker's process group; a worker that hangs on every
// case cannot make a campaign outrun its --time; a worker's wrong dtype is reported. Workers are the fake of
// tests/support/fake_worker.cpp.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "cases/corpus.h"
#include "external/worker_backend.h"
#include "fuzz/campaign.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using external::WorkerBackend;
using external::WorkerOptions;
using nlohmann::json;

std::uint64_t fresh_seed() { return (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}(); }

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A quantize case inside the fake worker's declaration with direction both (the fault modes'
// trigger).
cases::Case quantize_both(std::uint64_t seed) {
  fuzz::CaseSpace space;
  space.ops = {"quantize"};
  space.max_dim = 32;
  const cases::Declaration d =
      cases::Declaration::parse(json::parse(R"([{"op": "quantize", "params": {"profile": ["te"], "block": ["1d"],
      "direction": ["both"], "row_scaled": [false], "scale_layout": ["compact"], "rounding": ["nearest"], "rht": [false]},
      "dtype": ["F32"]}])"),
                                "test");
  space.declarations = {&d};
  return fuzz::sample_cases(space, 1, seed).front().c;
}

// A worker that closed its stdout, or that exited (also where a process it started still holds its
// stdout open, so that no end of file comes), is a crash at once, not a timeout.
TEST(WorkerFaults, ClosingStdoutOrExitingIsACrashAtOnce) {
  const std::string fake = NVFP4_FAKE_WORKER;
  const std::pair<std::string, std::string> workers[] = {
      {fake + " close", "closed its stdout"},
      {fake + " close-exit", "exited with status 0"},
      {"sleep 600 & exec " + fake + " close-exit", "exited with status 0"},
      {"sleep 600 & exec " + fake + " crash", "killed by signal 6"},
  };
  for (const auto& [command, said] : workers) {
    SCOPED_TRACE(command);
    WorkerOptions o;
    o.command = command;
    o.timeout_s = 5;
    WorkerBackend worker(o);
    const cases::Case c = quantize_both(fresh_seed());
    const auto t0 = Clock::now();
    const cases::Outcome got = worker.run_many({&c, 1}).front();
    EXPECT_EQ(got.fault, cases::FaultKind::kCrash) << got.message;
    EXPECT_NE(got.message.find(said), std::string::npos) << got.message;
    EXPECT_LT(seconds_since(t0), 2) << "the harness waited for a timeout";
  }
}

// Whether process `pid` is gone: no such process, or a zombie left to a parent that does not reap.
bool gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(stat, line);
  const std::size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

pid_t read_pid(const fs::path& file) {
  std::ifstream f(file);
  pid_t pid = 0;
  f >> pid;
  return pid;
}

// nvfp4-verify with these arguments, its output to files in `dir`, every signal's action default.
pid_t spawn_cli(const std::vector<std::string>& args, const fs::path& dir) {
  std::vector<std::string> argv_s = {NVFP4_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, (dir / "stdout.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, (dir / "stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t reset;  // a test run in the background may ignore SIGINT
  sigemptyset(&reset);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&reset, sig);
  posix_spawnattr_setsigdefault(&attr, &reset);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, NVFP4_CLI_PATH, &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

// The status of `pid` once it ends, or nullopt when it is still running after `limit_s`.
std::optional<int> wait_for(pid_t pid, double limit_s) {
  const auto t0 = Clock::now();
  while (seconds_since(t0) < limit_s) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

TEST(WorkerFaults, SignalToTheHarnessKillsEveryWorkerProcessGroupAndEndsItWithTheSignal) {
  for (const int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(::strsignal(sig));
    const test_support::TempDir tmp;
    const fs::path dir = tmp.path();
    const fs::path leader = dir / "worker.pid", child = dir / "child.pid";
    // The worker's shell records its pid, starts a child in the worker's group, then becomes the
    // fake worker, which hangs on every case.
    const std::string worker = fmt::format(
        "sleep 600 & echo $! >{}.tmp && mv {}.tmp {}; echo $$ >{}.tmp && mv {}.tmp {}; exec {} hang-all", child.string(),
        child.string(), child.string(), leader.string(), leader.string(), leader.string(), NVFP4_FAKE_WORKER);
    const pid_t harness =
        spawn_cli({"fuzz", "--backends", "reference,worker", "--worker", worker, "--worker-timeout", "300", "--time", "300",
                   "--jobs", "1", "--corpus", (dir / "found").string(), "--report", (dir / "report").string()},
                  dir);
    ASSERT_GT(harness, 0);
    const auto t0 = Clock::now();
    while (!(fs::exists(leader) && fs::exists(child)) && seconds_since(t0) < 60)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(fs::exists(leader) && fs::exists(child)) << test_support::slurp_text(dir / "stderr.txt");
    const pid_t worker_pid = read_pid(leader), child_pid = read_pid(child);
    ASSERT_GT(worker_pid, 0);
    ASSERT_GT(child_pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the campaign's first cases are in flight
    ASSERT_FALSE(gone(worker_pid));

    ASSERT_EQ(::kill(harness, sig), 0);
    const std::optional<int> status = wait_for(harness, 10);
    if (!status) ::kill(harness, SIGKILL), ::waitpid(harness, nullptr, 0);
    ASSERT_TRUE(status) << "the harness did not end within 10 s of the signal";
    const bool by_signal = WIFSIGNALED(*status) && WTERMSIG(*status) == sig;
    const bool conventional_status = WIFEXITED(*status) && WEXITSTATUS(*status) == 128 + sig;
    EXPECT_TRUE(by_signal || conventional_status) << "status " << *status;

    const auto t1 = Clock::now();
    while (!(gone(worker_pid) && gone(child_pid)) && seconds_since(t1) < 5)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(gone(worker_pid)) << "the worker outlived the harness";
    EXPECT_TRUE(gone(child_pid)) << "the worker's child outlived the harness";
    if (!gone(worker_pid)) ::kill(worker_pid, SIGKILL);
    if (!gone(child_pid)) ::kill(child_pid, SIGKILL);
    // Nothing half-done: no case was found, no report begun.
    EXPECT_FALSE(fs::exists(dir / "found") && !fs::is_empty(dir / "found"));
    EXPECT_FALSE(fs::exists(dir / "report") && !fs::is_empty(dir / "report"));
  }
}

// The files a campaign saved into its corpus directory.
std::vector<fs::path> files_in(const fs::path& corpus) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(corpus)) files.push_back(e.path());
  return files;
}

TEST(WorkerFaults, AWorkerHangingOnEveryCaseCannotMakeTheCampaignOutrunItsTime) {
  const test_support::TempDir tmp;
  const fs::path dir = tmp.path();
  const double time_s = 2, worker_timeout_s = 0.5;
  const auto t0 = Clock::now();
  const auto run = test_support::run_cli(
      fmt::format("fuzz --backends reference,worker --worker '{} hang-all' --worker-timeout {} --time {} --jobs 1 --seed {} "
                  "--corpus {} --report {}",
                  NVFP4_FAKE_WORKER, worker_timeout_s, time_s, fresh_seed(), (dir / "found").string(), (dir / "report").string()),
      dir);
  const double took = seconds_since(t0);
  // The time limit plus the harness's start and its report; shrinking alone may rerun the hang four
  // times (2 s).
  EXPECT_LT(took, time_s + 5) << run.out << run.err;
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  ASSERT_TRUE(fs::exists(dir / "found")) << run.out << run.err;
  const std::vector<fs::path> saved = files_in(dir / "found");
  ASSERT_EQ(saved.size(), 1u) << run.out;
  const cases::CaseRecord r = cases::load_case(saved.front());
  EXPECT_EQ(r.found, "timeout");
  EXPECT_NE(r.origin.find("shrinking stopped by the time limit"), std::string::npos) << r.origin;
  EXPECT_TRUE(fs::is_regular_file(dir / "report" / "index.html"));
  EXPECT_TRUE(fs::is_regular_file(dir / "report" / (saved.front().stem().string() + ".html")));
}

TEST(WorkerFaults, AWorkerHangingOnEveryCaseCannotMakeACampaignOfFewCasesRunLong) {
  const test_support::TempDir tmp;
  const fs::path dir = tmp.path();
  const double worker_timeout_s = 0.5;
  const auto t0 = Clock::now();
  const auto run = test_support::run_cli(
      fmt::format("fuzz --backends reference,worker --worker '{} hang-all' --worker-timeout {} --cases 50 --jobs 1 --seed {} "
                  "--corpus {} --report {}",
                  NVFP4_FAKE_WORKER, worker_timeout_s, fresh_seed(), (dir / "found").string(), (dir / "report").string()),
      dir);
  const double took = seconds_since(t0);
  // One timeout in the round (the rest of its batch is not sent) and at most four in shrinking,
  // plus the harness's start and its report; waiting out every case would take 25 timeouts.
  EXPECT_LT(took, 6 * worker_timeout_s + 5) << run.out << run.err;
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  ASSERT_TRUE(fs::exists(dir / "found")) << run.out << run.err;
  const std::vector<fs::path> saved = files_in(dir / "found");
  ASSERT_EQ(saved.size(), 1u) << run.out;
  const cases::CaseRecord r = cases::load_case(saved.front());
  EXPECT_EQ(r.found, "timeout");
  EXPECT_NE(r.origin.find("shrinking stopped after 4 reruns that timed out"), std::string::npos) << r.origin;
}

TEST(WorkerFaults, AWrongDtypeFromTheWorkerIsASchemaFailureWithItsReport) {
  const test_support::TempDir tmp;
  const fs::path dir = tmp.path();
  const auto run = test_support::run_cli(
      fmt::format(
          "fuzz --backends reference,worker --worker '{} dtype' --ops quantize --cases 100 --seed {} --corpus {} --report {}",
          NVFP4_FAKE_WORKER, fresh_seed(), (dir / "found").string(), (dir / "report").string()),
      dir);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_EQ(run.err.find("explain"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("data: expected U8"), std::string::npos) << run.out;
  ASSERT_TRUE(fs::is_regular_file(dir / "report" / "index.html")) << run.out << run.err;
  std::size_t pages = 0;
  for (const auto& e : fs::directory_iterator(dir / "report")) pages += e.path().filename() != "index.html";
  EXPECT_GE(pages, 1u);
}

}  // namespace
}  // namespace nvfp4
