// The operation registry: every operation's descriptor, in a fixed order. Adding an operation
// means adding its descriptor to one family file in cases/ops/ (with its reference function),
// its kernel's row in device/backend/device_backend.cpp's device_runners() (or a stated reason), its
// generator's row in fuzz/op_generators.cpp, and a seed case in its family's cases/seeds/ file.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cases/operation.h"

namespace nvfp4::cases {

std::span<const OperationSpec> operations();

// nullptr when unknown.
const OperationSpec* find_operation(std::string_view name);
// Throws nvfp4::Error (E_UNSUPPORTED) naming the known operations when unknown.
const OperationSpec& operation(std::string_view name);
std::string operation_names(std::string_view separator);  // "amax_global, amax_rows, ..."

// A case of `op` with every parameter at its default and no inputs.
Case make_case(std::string_view op);

// Checks c.params against the descriptor: no parameter the operation lacks, none missing, every
// value of its declared type and, for enums, in the allowed set. Throws nvfp4::Error
// (E_UNSUPPORTED) with one line naming the operation, the parameter and the allowed values.
void validate_params(const Case& c);
// validate_params, then every required input tensor present and no input the operation does not
// read. Dtypes and shapes are the backends' to check, so that a case can test their errors.
void validate_case(const Case& c);
// Every input tensor's dtype and rank against its TensorSpec: the structure every backend indexes
// by, checked once when a case file is read. Throws nvfp4::Error (E_DTYPE, E_RANK) naming the
// operation and the tensor. The values of the dimensions (multiples of 16, agreement between
// tensors) stay the backends' to check, each with its error code, so that a case can test them.
void validate_case_tensors(const Case& c);

// A parameter value from JSON (case files, ops --json defaults) and back. Throws nvfp4::Error
// (E_UNSUPPORTED) naming the operation and parameter for a value of the wrong type or set.
ParamValue param_from_json(const OperationSpec& op, const ParamSpec& p, const nlohmann::json& j);
nlohmann::json param_to_json(const ParamValue& v);

// The whole registry as JSON: the contract external backends implement (docs/spec/registry.md).
nlohmann::json registry_json(std::string_view tool_version);

// "quantize te 48x80 BF16 block=2d direction=both": the operation, its profile, the first input's
// shape and every parameter that differs from its default.
std::string case_label(const Case& c);

}  // namespace nvfp4::cases
