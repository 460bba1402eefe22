// A case: one operation with its parameters and host input tensors. Backends (the reference,
// the GPU, later external ones) turn a case into output tensors, which compare/ diffs bit for bit.
// Tensors are safetensors tensors, so inputs and outputs save and load without conversion.
// What an operation is (its parameters, tensors and runners) is the registry's (cases/registry.h).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cases/params.h"
#include "io/safetensors.h"
#include "reference/error.h"
#include "reference/exception.h"
#include "reference/profile.h"

namespace nvfp4::cases {

using TensorMap = std::map<std::string, io::Tensor>;

struct Case {
  std::string op;                // a registry operation name, e.g. "quantize"
  Params params;                 // exactly the operation's parameters (make_case fills the defaults)
  std::optional<Profile> knobs;  // replaces the named profile's knobs (formula-variant search); never stored
  TensorMap inputs;
};

// The case's input tensor `name`; throws nvfp4::Error (E_UNSUPPORTED) when the case lacks it.
const io::Tensor& case_input(const Case& c, const char* name);

// The knobs a case runs under: `knobs` when set, else the named profile of its "profile"
// parameter. Throws nvfp4::Error (E_UNSUPPORTED) for an unknown name or an operation without one.
const Profile& case_profile(const Case& c);

// The "profile" parameter, or "" for an operation without one (layouts), for labels and reports.
std::string case_profile_name(const Case& c);

// A backend outside this process failed on a case without answering it: it crashed, hung, or broke
// its protocol (docs/spec/worker-protocol.md). The case's verdict names the kind.
enum class FaultKind { kCrash, kTimeout, kProtocol };
std::string_view fault_kind_name(FaultKind k);  // "crash", "timeout", "protocol"

class BackendFault : public Exception {
 public:
  BackendFault(FaultKind kind, const std::string& what) : Exception(what), kind_(kind) {}
  FaultKind kind() const { return kind_; }

 private:
  FaultKind kind_;
};

// A rejection without one of the contract's error codes (an external backend's exception): it
// agrees with any rejection of the other backend, whatever its code.
class UncodedRejection : public InputError {
 public:
  using InputError::InputError;
};

// How a backend answered one case: outputs, a rejection, or a fault.
struct Outcome {
  TensorMap outputs;
  bool rejected = false;
  std::optional<ErrorCode> code;  // the rejection's code (none for io::FormatError)
  bool any_code = false;          // an UncodedRejection
  std::optional<FaultKind> fault;
  std::string message;   // the rejection's or fault's message
  double seconds = 0;    // time spent on this case
  bool cut_off = false;  // not answered before the backend's deadline: no verdict
  bool skipped = false;  // not sent: an earlier case of the batch timed out (docs/design/harness.md)
};

// What an external backend declares it implements (cases/declaration.h); nullptr: everything.
class Declaration;

// A backend runs cases. It throws nvfp4::Error (or io::FormatError, UncodedRejection) for cases it
// rejects, BackendFault when it failed without answering, and BackendUnavailable when it cannot
// run at all (e.g. no GPU).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual TensorMap run(const Case& c) = 0;
  // Every case's outcome, in order. Out-of-process backends override it to keep many cases in
  // flight; the default runs them one at a time.
  virtual std::vector<Outcome> run_many(std::span<const Case> cases);
  virtual const Declaration* declaration() const { return nullptr; }
  // A campaign's time limit: an out-of-process backend stops waiting for answers then, and run_many
  // returns the cases still unanswered as cut_off (an in-process backend finishes what it runs).
  // A backend whose case times out may return the rest of the batch as skipped.
  virtual void set_deadline(std::optional<std::chrono::steady_clock::time_point>) {}
};

// b.run(c) with its rejection or fault caught into the outcome, and timed.
Outcome run_outcome(Backend& b, const Case& c);

// A backend that cannot run at all here (no GPU, a worker or plugin that does not start).
class BackendUnavailable : public Exception {
 public:
  using Exception::Exception;
};

}  // namespace nvfp4::cases
