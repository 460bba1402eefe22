// What an external backend declares it implements (docs/spec/worker-protocol.md, "implements"): its
// operations and, for each, the values it accepts of each parameter and of the input dtype.
// Closed world: a parameter the declaration does not name accepts only its default, so that a
// parameter the registry gains later never reaches a backend written before it; "*" accepts every
// value the registry allows. The campaign generates only cases inside the declaration; replay
// skips the others.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/case.h"
#include "cases/operation.h"

namespace nvfp4::cases {

class Declaration {
 public:
  // A parameter declared with this string instead of a list accepts every value the registry allows.
  static constexpr std::string_view kAnyValue = "*";

  struct Op {
    const OperationSpec* spec = nullptr;
    // The accepted values of every parameter but those declared "*".
    std::map<std::string, std::vector<ParamValue>, std::less<>> params;
    std::set<std::string, std::less<>> named;  // the parameters the declaration names
    std::vector<io::DType> dtypes;             // accepted dtypes of multi-dtype inputs; empty: any

    // The operation's parameters the declaration does not name, in registry order.
    std::vector<const ParamSpec*> held_at_default() const;
  };

  // Parses and checks an "implements" array against the registry. Throws BackendUnavailable with
  // one line naming `who` and the bad entry: an unknown operation, parameter, value or dtype.
  static Declaration parse(const nlohmann::json& implements, std::string_view who);

  const Op* find(std::string_view op) const;
  std::vector<std::string> operations() const;
  // The accepted values of `param` of `op`; nullptr when declared "*" (or `op` is not declared).
  const std::vector<ParamValue>* allowed(std::string_view op, std::string_view param) const;
  // Why c lies outside the declaration ("" when it lies inside).
  std::string outside(const Case& c) const;
  nlohmann::json to_json() const;  // the "implements" array as declared (named parameters only), normalized

 private:
  std::vector<Op> ops_;
};

// Whether a declaration's "dtype" list restricts input t of op: an input the registry lets take
// more than one dtype, of an operation with named inputs. Campaign descriptions use it too.
bool dtype_declarable(const OperationSpec& op, const TensorSpec& t);

// The dtype of a multi-dtype input (io dtype name, case-insensitive: "bf16", "F32"); nullopt when
// unknown.
std::optional<io::DType> declared_dtype(std::string_view name);

}  // namespace nvfp4::cases
