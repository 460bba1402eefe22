// A backend that is another program: a worker speaking docs/spec/worker-protocol.md over its stdin and
// stdout. It keeps up to `window` cases in flight, and turns the worker's faults into outcomes
// (crash, timeout, protocol error: BackendFault) instead of failing the run; after a fault it
// starts a fresh worker for the next case.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "cases/declaration.h"
#include "external/wire.h"
#include "external/worker_process.h"

namespace nvfp4::external {

struct WorkerOptions {
  std::string command;              // as /bin/sh -c COMMAND would run it (external/worker_process.h)
  double timeout_s = 10;            // per case, from when it reaches the head of the queue
  double handshake_timeout_s = 60;  // for starting (Python imports can be slow)
  std::size_t window = 64;          // cases in flight
};

class WorkerBackend : public cases::Backend {
 public:
  // Starts the worker and checks its handshake and declaration; throws BackendUnavailable with
  // the reason (and the worker's stderr tail) when that fails.
  explicit WorkerBackend(WorkerOptions options);
  ~WorkerBackend() override;

  std::string_view name() const override { return "worker"; }
  cases::TensorMap run(const cases::Case& c) override;
  std::vector<cases::Outcome> run_many(std::span<const cases::Case> cases) override;
  const cases::Declaration* declaration() const override { return &declaration_; }
  // Past the deadline no worker is started and no answer awaited: the worker is killed and the
  // cases left come back cut_off.
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) override { deadline_ = deadline; }

  const std::string& worker_name() const { return worker_name_; }
  int worker_protocol() const { return worker_protocol_; }  // the version the worker's hello gave
  std::size_t restarts() const { return restarts_; }
  // Sends bye and waits for a clean exit; "" when the worker exited with status 0.
  std::string shut_down();

 private:
  // Starts the worker; false, with no worker, when the deadline passes before its hello.
  bool start();
  cases::Outcome fault(cases::FaultKind kind, const std::string& what);

  WorkerOptions options_;
  std::unique_ptr<WorkerProcess> process_;
  wire::FrameReader reader_;
  std::uint64_t next_id_ = 0;
  cases::Declaration declaration_;
  std::string worker_name_;
  int worker_protocol_ = 0;
  std::size_t restarts_ = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
};

}  // namespace nvfp4::external
