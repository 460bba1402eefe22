#include "external/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace nvfp4::external {
namespace {

constexpr std::size_t kTailBytes = 4096;

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The words of a command that is plain words (no quoting, expansion, redirection, operator or
// newline), which then runs without a shell; empty for any other command, run by /bin/sh -c. A
// shell that forks the command keeps its stdout open while it waits, so that a worker closing its
// stdout would leave no end of file to see.
std::vector<std::string> plain_words(const std::string& command) {
  if (command.find_first_of("|&;<>()$`\\\"'*?[]#~=%{}!\n") != std::string::npos) return {};
  std::vector<std::string> words;
  std::size_t i = 0;
  while ((i = command.find_first_not_of(" \t", i)) != std::string::npos) {
    const std::size_t end = command.find_first_of(" \t", i);
    words.push_back(command.substr(i, end - i));
    i = end;
  }
  return words;
}

// The process groups of the live workers. A signal handler reads them, so they are a fixed table
// of lock-free atomics (0: free slot), not a container.
constexpr std::size_t kMaxWorkers = 4096;
std::atomic<pid_t> live_groups[kMaxWorkers];

void kill_live_groups() {
  for (std::atomic<pid_t>& g : live_groups)
    if (const pid_t p = g.load(); p > 0) ::kill(-p, SIGKILL);
}

// Kills the workers, then lets the signal end the harness as it would have without a worker
// (SA_RESETHAND restored its default action; SA_NODEFER lets it through at once): a shell sees
// status 128 + the signal's number, and nothing more is written.
void kill_workers_and_reraise(int sig) {
  kill_live_groups();
  ::raise(sig);
}

// Once per process: the handler for every terminating signal whose action is still the default
// (an ignored SIGHUP under nohup, or a sanitizer's SIGSEGV handler, stay), and an exit() hook.
void install_cleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = kill_workers_and_reraise;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND | SA_NODEFER;
      ::sigaction(sig, &sa, nullptr);
    }
    std::atexit(kill_live_groups);
  });
}

// Records a live worker's group; throws when the table is full.
std::atomic<pid_t>& track_group(pid_t pgid) {
  for (std::atomic<pid_t>& g : live_groups) {
    pid_t free = 0;
    if (g.compare_exchange_strong(free, pgid)) return g;
  }
  throw std::runtime_error(fmt::format("more than {} workers at once", kMaxWorkers));
}

}  // namespace

WorkerProcess::WorkerProcess(const std::string& command) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC))
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  install_cleanup();
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so that a timeout kills the worker's children too.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> words = plain_words(command);
  if (words.empty()) words = {"/bin/sh", "-c", command};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawnp(&pid_, argv.front(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  in_ = in[1];
  out_ = out[0];
  err_ = err[0];
  if (rc != 0) {
    close_fd(in_);
    close_fd(out_);
    close_fd(err_);
    throw std::runtime_error(fmt::format("cannot start '{}': {}", command, std::strerror(rc)));
  }
  set_nonblocking(in_);
  set_nonblocking(out_);
  set_nonblocking(err_);
  try {
    group_ = &track_group(pid_);
  } catch (...) {
    kill();
    close_fd(in_);
    close_fd(out_);
    close_fd(err_);
    throw;
  }
}

WorkerProcess::~WorkerProcess() {
  kill();
  close_fd(in_);
  close_fd(out_);
  close_fd(err_);
}

void WorkerProcess::read_stderr() {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(err_, buf, sizeof buf);
    if (n > 0) {
      tail_.append(buf, std::size_t(n));
      if (tail_.size() > 2 * kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
      continue;
    }
    if (n == 0) close_fd(err_);
    if (n < 0 && errno == EINTR) continue;
    return;
  }
}

std::string WorkerProcess::stderr_tail() const {
  return tail_.size() > kTailBytes ? tail_.substr(tail_.size() - kTailBytes) : tail_;
}

void WorkerProcess::close_stdin() { close_fd(in_); }

bool WorkerProcess::try_reap() {
  if (reaped_) return true;
  const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return reaped_;
}

std::string WorkerProcess::exit_status(double grace_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (!try_reap() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  if (!reaped_) return "still running";
  if (WIFEXITED(status_)) return fmt::format("exited with status {}", WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return fmt::format("killed by signal {} ({})", WTERMSIG(status_), ::strsignal(WTERMSIG(status_)));
  return "stopped";
}

void WorkerProcess::finish(double grace_s) {
  close_stdin();
  exit_status(grace_s);
  kill();
}

void WorkerProcess::kill() {
  if (pid_ < 0) return;
  ::kill(-pid_, SIGKILL);  // the group: also what the worker started, even when it has exited itself
  // Untracked before the leader is reaped, so that the signal handler never kills a reused pid.
  if (group_) group_->store(0);
  group_ = nullptr;
  if (!reaped_)
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
  reaped_ = true;
  pid_ = -1;
}

}  // namespace nvfp4::external
