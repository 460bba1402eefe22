// A case: one operation with its parameters and host input tensors. Backends (the reference,
// the GPU, later external ones) turn a case into output tensors, which compare/ diffs bit for bit.
// Tensors are safetensors tensors, so inputs and outputs save and load without conversion.
// What an operation is (its parameters, tensors and runners) is the registry's (cases/registry.h).
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cases/params.h"
#include "io/safetensors.h"
#include "reference/profile.h"

namespace nvfp4 {

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

// A backend runs cases. It throws nvfp4::Error (or io::FormatError) for invalid cases, and
// BackendUnavailable when it cannot run at all (e.g. no GPU).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual TensorMap run(const Case& c) = 0;
};

class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nvfp4
