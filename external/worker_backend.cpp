#include "external/worker_backend.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

namespace nvfp4::external {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr std::size_t kMaxQueuedBytes = std::size_t(1) << 22;  // encoded requests ahead of the worker
constexpr int kExitCheckMs = 50;

// What pumping the pipes produced.
enum class Pumped { kMessage, kTimeout, kClosed };

std::string last_lines(const std::string& tail, std::size_t max_bytes) {
  if (tail.empty()) return "(empty)";
  std::string t = tail.size() > max_bytes ? "..." + tail.substr(tail.size() - max_bytes) : tail;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

// A result message's outcome; throws wire::ProtocolError when it is not one.
cases::Outcome outcome_of(wire::Message m) {
  const json& b = m.body;
  if (!b.contains("ok") || !b.at("ok").is_boolean()) throw wire::ProtocolError("a result needs a boolean \"ok\"");
  cases::Outcome o;
  if (b.at("ok").get<bool>()) {
    o.outputs = std::move(m.tensors);
    return o;
  }
  if (!b.contains("error") || !b.at("error").is_string())
    throw wire::ProtocolError("a result with \"ok\": false needs a string \"error\"");
  o.rejected = true;
  o.message = b.at("error").get<std::string>();
  if (!b.contains("code") || b.at("code").is_null()) {
    o.any_code = true;
    return o;
  }
  const auto code = b.at("code").is_string() ? wire::error_code_from_name(b.at("code").get<std::string>()) : std::nullopt;
  if (!code) throw wire::ProtocolError(fmt::format("unknown error code {}", b.at("code").dump()));
  o.code = code;
  return o;
}

// Moves bytes between the harness and the worker until a whole message has arrived, the deadline
// passes, or the worker closes its stdout or exits. Writes as much of out[out_pos..] as the worker
// takes.
class Pump {
 public:
  Pump(WorkerProcess& p, wire::FrameReader& r) : p_(p), r_(r) {}

  Pumped until_message(const std::vector<std::uint8_t>& out, std::size_t& out_pos, Clock::time_point deadline,
                       wire::Message& got) {
    for (;;) {
      if (auto m = r_.next()) {
        got = std::move(*m);
        return Pumped::kMessage;
      }
      if (closed_) return Pumped::kClosed;
      const auto now = Clock::now();
      if (now >= deadline) return Pumped::kTimeout;
      // A worker that exited while a process it started holds its stdout open leaves no end of file
      // to poll for: its exit is checked every kExitCheckMs.
      const int wait_ms = int(std::min<std::int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1, kExitCheckMs));
      pollfd fds[3];
      nfds_t n = 0;
      fds[n++] = {p_.stdout_fd(), POLLIN, 0};
      const bool writing = out_pos < out.size() && p_.stdin_fd() >= 0;
      if (writing) fds[n++] = {p_.stdin_fd(), POLLOUT, 0};
      const bool errs = p_.stderr_fd() >= 0;
      if (errs) fds[n++] = {p_.stderr_fd(), POLLIN, 0};
      if (::poll(fds, n, wait_ms) < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
      }
      if (errs && fds[n - 1].revents) p_.read_stderr();
      if (writing && fds[1].revents) write_some(out, out_pos);
      const bool exited = p_.exited();  // before the read, so that what it wrote before exiting is read
      if (fds[0].revents || exited) read_some();
      closed_ |= exited;
    }
  }

 private:
  void write_some(const std::vector<std::uint8_t>& out, std::size_t& out_pos) {
    const ssize_t w = ::write(p_.stdin_fd(), out.data() + out_pos, out.size() - out_pos);
    if (w > 0) out_pos += std::size_t(w);
    // The worker closed its stdin: nothing more can reach it; its stdout tells the rest.
    if (w < 0 && errno == EPIPE) p_.close_stdin();
  }

  void read_some() {
    std::uint8_t buf[1 << 16];
    for (;;) {
      const ssize_t r = ::read(p_.stdout_fd(), buf, sizeof buf);
      if (r > 0) {
        r_.feed({buf, std::size_t(r)});
        continue;
      }
      if (r == 0) closed_ = true;
      if (r < 0 && errno == EINTR) continue;
      return;
    }
  }

  WorkerProcess& p_;
  wire::FrameReader& r_;
  bool closed_ = false;
};

}  // namespace

WorkerBackend::WorkerBackend(WorkerOptions options) : options_(std::move(options)) {
  // A worker that dies while we write to it must not kill the harness.
  std::signal(SIGPIPE, SIG_IGN);
  start();
}

WorkerBackend::~WorkerBackend() {
  try {
    shut_down();
  } catch (const std::exception&) {  // the process is killed below in any case
  }
}

bool WorkerBackend::start() {
  if (deadline_ && Clock::now() >= *deadline_) return false;
  if (!worker_name_.empty()) ++restarts_;
  reader_ = wire::FrameReader();
  next_id_ = 0;
  try {
    process_ = std::make_unique<WorkerProcess>(options_.command);
  } catch (const std::exception& e) {
    throw cases::BackendUnavailable(fmt::format("worker '{}': {}", options_.command, e.what()));
  }
  const auto failed = [&](const std::string& why) {
    process_->kill();
    process_->read_stderr();
    const std::string text = fmt::format("worker '{}' failed its handshake: {}; {}; stderr: {}", options_.command, why,
                                         process_->exit_status(0), last_lines(process_->stderr_tail(), 1500));
    process_.reset();
    return cases::BackendUnavailable(text);
  };
  const std::vector<std::uint8_t> hello = wire::encode({{{"type", "hello"},
                                                         {"protocol", wire::kProtocolVersion},
                                                         {"tool_version", NVFP4_VERSION},
                                                         {"registry_format", 1},
                                                         {"unnamed_params", "default"}},
                                                        {}});
  std::size_t pos = 0;
  wire::Message m;
  Pumped p;
  const Clock::time_point handshake_end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.handshake_timeout_s));
  const bool cut = deadline_ && *deadline_ < handshake_end;  // the deadline, not the worker, may end the wait
  try {
    p = Pump(*process_, reader_).until_message(hello, pos, cut ? *deadline_ : handshake_end, m);
  } catch (const wire::ProtocolError& e) {
    throw failed(e.what());
  }
  if (p == Pumped::kTimeout && cut) {
    process_.reset();  // kills it
    return false;
  }
  if (p == Pumped::kTimeout) throw failed(fmt::format("no hello within {} s", options_.handshake_timeout_s));
  if (p == Pumped::kClosed) throw failed("it closed its stdout before answering hello");
  if (m.body.value("type", "") != "hello") throw failed(fmt::format("its first message is {}, not a hello", m.body.dump()));
  const json& version = m.body.contains("protocol") ? m.body.at("protocol") : json();
  if (!version.is_number_integer() || version.get<int>() < wire::kOldestProtocolVersion ||
      version.get<int>() > wire::kProtocolVersion)
    throw failed(fmt::format("it speaks protocol {}; this harness speaks protocols {} to {}", version.dump(),
                             wire::kOldestProtocolVersion, wire::kProtocolVersion));
  const std::string who =
      m.body.contains("worker") && m.body.at("worker").is_string() ? m.body.at("worker").get<std::string>() : options_.command;
  try {
    cases::Declaration d = cases::Declaration::parse(m.body.contains("implements") ? m.body.at("implements") : json(), who);
    if (worker_name_.empty()) declaration_ = std::move(d);  // a restart must not change what it implements
  } catch (const cases::BackendUnavailable& e) {
    throw failed(e.what());
  }
  worker_name_ = who;
  worker_protocol_ = version.get<int>();
  return true;
}

cases::Outcome WorkerBackend::fault(cases::FaultKind kind, const std::string& what) {
  cases::Outcome o;
  o.fault = kind;
  process_->kill();
  process_->read_stderr();
  o.message = fmt::format("{}; stderr: {}", what, last_lines(process_->stderr_tail(), 1500));
  process_.reset();
  return o;
}

std::vector<cases::Outcome> WorkerBackend::run_many(std::span<const cases::Case> cases) {
  std::vector<cases::Outcome> results(cases.size());
  std::size_t answered = 0;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.timeout_s));
  // The deadline passed: the cases not answered have no verdict.
  const auto cut_off = [&] {
    process_.reset();  // kills the worker, with the cases it holds
    for (std::size_t i = answered; i < cases.size(); ++i) results[i].cut_off = true;
    return std::move(results);
  };
  while (answered < cases.size()) {
    if (!process_ && !start()) return cut_off();
    std::deque<std::uint64_t> ids;  // of the cases in flight, oldest first
    std::vector<std::uint8_t> out;
    std::size_t out_pos = 0, sent = answered;
    Pump pump(*process_, reader_);
    auto head_since = Clock::now();
    while (process_ && answered < cases.size()) {
      while (sent < cases.size() && sent - answered < options_.window && out.size() - out_pos < kMaxQueuedBytes) {
        if (out_pos == out.size()) out.clear(), out_pos = 0;
        const std::vector<std::uint8_t> frame = wire::encode(wire::run_request(next_id_, cases[sent]));
        out.insert(out.end(), frame.begin(), frame.end());
        ids.push_back(next_id_++);
        ++sent;
      }
      cases::Outcome& result = results[answered];
      const Clock::time_point case_end = head_since + timeout;
      const bool cut = deadline_ && *deadline_ < case_end;  // the deadline, not the case's timeout, may end the wait
      wire::Message m;
      try {
        switch (pump.until_message(out, out_pos, cut ? *deadline_ : case_end, m)) {
          case Pumped::kTimeout:
            if (cut) return cut_off();
            result = fault(cases::FaultKind::kTimeout,
                           fmt::format("no answer to case id {} within {} s", ids.front(), options_.timeout_s));
            break;
          case Pumped::kClosed: {
            // No answer can come, whether or not the worker goes on running.
            const std::string status = process_->exit_status(0.5);
            result = fault(cases::FaultKind::kCrash,
                           status == "still running"
                               ? fmt::format("the worker closed its stdout before answering case id {}", ids.front())
                               : fmt::format("the worker {} before answering case id {}", status, ids.front()));
            break;
          }
          case Pumped::kMessage:
            if (m.body.value("type", "") != "result")
              throw wire::ProtocolError(fmt::format("expected a result, got {}", m.body.dump().substr(0, 200)));
            if (!m.body.contains("id") || m.body.at("id") != ids.front())
              throw wire::ProtocolError(fmt::format("expected the result of case id {}, got id {}", ids.front(),
                                                    m.body.contains("id") ? m.body.at("id").dump() : "none"));
            result = outcome_of(std::move(m));
            ids.pop_front();
            break;
        }
      } catch (const wire::ProtocolError& e) {
        result = fault(cases::FaultKind::kProtocol, fmt::format("protocol error at case id {}: {}", ids.front(), e.what()));
      }
      const auto now = Clock::now();
      result.seconds = std::chrono::duration<double>(now - head_since).count();
      head_since = now;
      ++answered;
      // A worker that hung once likely hangs again, and each case would wait out the timeout: the
      // rest of the batch is not sent, so a campaign's --cases bounds its run.
      if (result.fault == cases::FaultKind::kTimeout) {
        for (std::size_t i = answered; i < cases.size(); ++i) results[i].skipped = true;
        return results;
      }
    }
  }
  return results;
}

cases::TensorMap WorkerBackend::run(const cases::Case& c) {
  cases::Outcome o = std::move(run_many({&c, 1}).front());
  if (o.cut_off) throw std::runtime_error(fmt::format("worker '{}': the deadline passed before it answered", options_.command));
  if (o.fault) throw cases::BackendFault(*o.fault, o.message);
  if (o.rejected && o.code) throw Error(c.op, *o.code, o.message);
  if (o.rejected) throw cases::UncodedRejection(o.message);
  return std::move(o.outputs);
}

std::string WorkerBackend::shut_down() {
  if (!process_) return "";
  const std::vector<std::uint8_t> bye = wire::encode({{{"type", "bye"}}, {}});
  std::size_t pos = 0;
  wire::Message ignored;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  std::string problem;
  try {
    // Writes bye, then waits for the worker to close its stdout (a message here is a protocol error).
    Pump pump(*process_, reader_);
    while (pos < bye.size() && process_->stdin_fd() >= 0 && Clock::now() < deadline)
      if (pump.until_message(bye, pos, std::min(deadline, Clock::now() + std::chrono::milliseconds(50)), ignored) ==
          Pumped::kMessage)
        problem = "it answered bye";
    process_->close_stdin();
    while (problem.empty() && Clock::now() < deadline) {
      const Pumped p = pump.until_message(bye, pos, deadline, ignored);
      if (p == Pumped::kClosed) break;
      problem = p == Pumped::kMessage ? "it answered bye" : "it did not exit within 5 s of bye";
    }
  } catch (const wire::ProtocolError& e) {
    problem = e.what();
  }
  const std::string status = process_->exit_status(problem.empty() ? 5.0 : 0.0);
  process_->kill();
  process_.reset();
  if (!problem.empty()) return problem;
  return status == "exited with status 0" ? "" : "it " + status + " after bye";
}

}  // namespace nvfp4::external
