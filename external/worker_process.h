// A worker's process: COMMAND in its own process group, with pipes to its stdin, stdout and
// stderr; a command of plain words (no quoting, expansion, redirection or operator) runs directly,
// any other as `/bin/sh -c COMMAND`. The harness reads stderr continuously and keeps its tail for verdicts.
// A worker's group must not outlive the harness: while any worker runs, SIGINT, SIGTERM, SIGHUP,
// SIGQUIT and the fatal signals (where their action is still the default) and exit() kill every
// live worker's group before the harness ends; the signal then ends it as it would have.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>

namespace nvfp4::external {

class WorkerProcess {
 public:
  // Throws std::runtime_error when the process cannot be started.
  explicit WorkerProcess(const std::string& command);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  int stdin_fd() const { return in_; }    // non-blocking; -1 once closed
  int stdout_fd() const { return out_; }  // non-blocking
  int stderr_fd() const { return err_; }  // non-blocking; -1 at end of file

  // Reads what stderr holds now into the tail (call when poll says it is readable).
  void read_stderr();
  std::string stderr_tail() const;  // the last 4 KiB

  // Whether the process has exited (reaped without waiting): then no answer can come, even where
  // a process it started still holds its stdout open.
  bool exited() { return try_reap(); }

  void close_stdin();
  // Closes stdin and waits up to `grace_s` for the process to exit, then kills its group.
  void finish(double grace_s);
  // Kills the whole process group (SIGKILL) and reaps the process.
  void kill();
  // "exited with status 3", "killed by signal 11 (Segmentation fault)", or "still running";
  // waits up to `grace_s` for the exit.
  std::string exit_status(double grace_s);

 private:
  pid_t pid_ = -1;
  std::atomic<pid_t>* group_ = nullptr;  // its entry in the table of live groups the signal handler kills
  int in_ = -1, out_ = -1, err_ = -1;
  std::string tail_;
  bool reaped_ = false;
  int status_ = 0;
  bool try_reap();
};

}  // namespace nvfp4::external
