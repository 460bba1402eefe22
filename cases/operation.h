// The descriptor of one operation: everything every layer needs to know about it, in one place.
// Layers iterate the registry (cases/registry.h) instead of switching on the operation; the layers
// above this one (device kernels, case generators, explanations) keep one table row per operation
// name, and tests/registry_test.cpp fails when an operation lacks any part.
#pragma once

#include <string_view>
#include <vector>

#include "cases/case.h"
#include "cases/params.h"
#include "io/safetensors.h"

namespace nvfp4::cases {

// One input or output tensor of an operation.
struct TensorSpec {
  std::string_view name;          // "x", "data", ...; "*" for any number of tensors of any names
  std::vector<io::DType> dtypes;  // the dtypes a backend accepts (inputs) or writes (outputs)
  std::string_view shape;         // shape rule in the parameters and other tensors, e.g. "[M, K/2]"
  bool optional = false;          // present only under some parameter values (see `when`)
  std::string_view when = {};     // for optional tensors: the condition, e.g. "direction != columnwise"
  // The ranks the shape rule allows (inputs): a case file whose tensor has another rank, or a
  // dtype outside `dtypes`, is refused when it is read (validate_case_tensors).
  std::vector<std::size_t> ranks = {};
};

using Runner = TensorMap (*)(const Case&);

struct OperationSpec {
  std::string_view name;     // the registry key, stored in case files
  std::string_view family;   // amax, quantize, layout, distributed, ...
  std::string_view summary;  // one line
  std::string_view section;  // where docs/NUMERICS.md specifies it, e.g. "§3.9-§3.12"
  std::vector<ParamSpec> params;
  std::vector<TensorSpec> inputs, outputs;
  Runner reference = nullptr;    // the CPU reference (the specification in code)
  Runner metamorphic = nullptr;  // the reference reached through a metamorphic relation
  std::string_view relation;     // that relation, in one line
  // Why the GPU kernels do not run this operation; "" when device/ implements it (then its
  // runner table must name it).
  std::string_view no_device_reason;

  const ParamSpec* param(std::string_view n) const;
  const TensorSpec* input(std::string_view n) const;
  bool any_inputs() const { return inputs.size() == 1 && inputs[0].name == "*"; }
};

}  // namespace nvfp4::cases
