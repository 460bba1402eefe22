#include "cases/registry.h"

#include <algorithm>
#include <ranges>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/ops/families.h"
#include "reference/error.h"

namespace nvfp4::cases {
namespace {

using nlohmann::json;

std::vector<OperationSpec> build_registry() {
  std::vector<OperationSpec> all;
  for (auto family : {quantize_operations, amax_operations, layout_operations, distributed_operations, hadamard_operations,
                      gemm_operations, grouped_operations})
    for (OperationSpec& op : family()) all.push_back(std::move(op));
  return all;
}

bool holds_type(const ParamValue& v, ParamType t) {
  switch (t) {
    case ParamType::kEnum:
      return std::holds_alternative<std::string>(v);
    case ParamType::kBool:
      return std::holds_alternative<bool>(v);
    case ParamType::kInt:
      return std::holds_alternative<std::int64_t>(v);
    case ParamType::kUInt:
      return std::holds_alternative<std::uint64_t>(v);
    case ParamType::kIntList:
      return std::holds_alternative<std::vector<std::int64_t>>(v);
    case ParamType::kF32Bits:
      return std::holds_alternative<F32Bits>(v);
  }
  return false;
}

std::string param_names(const OperationSpec& op) {
  std::vector<std::string_view> names;
  for (const ParamSpec& p : op.params) names.push_back(p.name);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

std::string tensor_names(const std::vector<TensorSpec>& ts) {
  std::vector<std::string_view> names;
  for (const TensorSpec& t : ts) names.push_back(t.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

json dtypes_json(const std::vector<io::DType>& ts) {
  json a = json::array();
  for (io::DType t : ts) a.push_back(io::dtype_name(t));
  return a;
}

json tensors_json(const std::vector<TensorSpec>& ts) {
  json a = json::array();
  for (const TensorSpec& t : ts) {
    json j = {{"name", t.name}, {"dtypes", dtypes_json(t.dtypes)}, {"shape", t.shape}, {"optional", t.optional}};
    if (t.optional) j["when"] = t.when;
    a.push_back(std::move(j));
  }
  return a;
}

}  // namespace

const ParamSpec* OperationSpec::param(std::string_view n) const {
  for (const ParamSpec& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

const TensorSpec* OperationSpec::input(std::string_view n) const {
  for (const TensorSpec& t : inputs)
    if (t.name == n) return &t;
  return nullptr;
}

std::span<const OperationSpec> operations() {
  static const std::vector<OperationSpec> registry = build_registry();
  return registry;
}

const OperationSpec* find_operation(std::string_view name) {
  for (const OperationSpec& op : operations())
    if (op.name == name) return &op;
  return nullptr;
}

const OperationSpec& operation(std::string_view name) {
  const OperationSpec* op = find_operation(name);
  if (!op) fail(name, ErrorCode::E_UNSUPPORTED, "unknown operation (known: {})", operation_names(", "));
  return *op;
}

std::string operation_names(std::string_view separator) {
  std::string s;
  for (const OperationSpec& op : operations()) s += (s.empty() ? "" : std::string(separator)) + std::string(op.name);
  return s;
}

Case make_case(std::string_view name) {
  const OperationSpec& op = operation(name);
  Case c;
  c.op = std::string(op.name);
  for (const ParamSpec& p : op.params) c.params.set(p.name, p.default_value);
  return c;
}

void validate_params(const Case& c) {
  const OperationSpec& op = operation(c.op);
  for (const auto& [name, value] : c.params.values()) {
    const ParamSpec* p = op.param(name);
    if (!p) fail(op.name, ErrorCode::E_UNSUPPORTED, "no parameter '{}' (its parameters: {})", name, param_names(op));
    if (!holds_type(value, p->type))
      fail(op.name, ErrorCode::E_UNSUPPORTED, "parameter '{}' must be of type {}", name, param_type_name(p->type));
    if (p->type == ParamType::kEnum) {
      const std::string& v = std::get<std::string>(value);
      if (std::find(p->allowed.begin(), p->allowed.end(), v) == p->allowed.end())
        fail(op.name, ErrorCode::E_UNSUPPORTED, "parameter '{}' is '{}'; allowed: {}", name, v, fmt::join(p->allowed, ", "));
    }
  }
  for (const ParamSpec& p : op.params)
    if (!c.params.has(p.name)) fail(op.name, ErrorCode::E_UNSUPPORTED, "parameter '{}' is missing", p.name);
}

void validate_case(const Case& c) {
  validate_params(c);
  const OperationSpec& op = operation(c.op);
  if (op.any_inputs()) return;
  for (const TensorSpec& t : op.inputs)
    if (!t.optional && !c.inputs.count(std::string(t.name)))
      fail(op.name, ErrorCode::E_UNSUPPORTED, "missing input: no tensor '{}' (inputs: {})", t.name, tensor_names(op.inputs));
  for (const auto& [name, t] : c.inputs)
    if (!op.input(name))
      fail(op.name, ErrorCode::E_UNSUPPORTED, "input '{}' is not an input of the operation (inputs: {})", name,
           tensor_names(op.inputs));
}

void validate_case_tensors(const Case& c) {
  const OperationSpec& op = operation(c.op);
  for (const auto& [name, t] : c.inputs) {
    const TensorSpec* spec = op.any_inputs() ? &op.inputs[0] : op.input(name);
    if (!spec) continue;  // validate_case's to report
    if (std::find(spec->dtypes.begin(), spec->dtypes.end(), t.dtype) == spec->dtypes.end())
      fail(op.name, ErrorCode::E_DTYPE, "input '{}' has dtype {}; expected {}", name, io::dtype_name(t.dtype),
           fmt::join(spec->dtypes | std::views::transform(io::dtype_name), " or "));
    if (std::find(spec->ranks.begin(), spec->ranks.end(), t.shape.size()) == spec->ranks.end())
      fail(op.name, ErrorCode::E_RANK, "input '{}' has rank {} (shape [{}]); expected rank {} ({})", name, t.shape.size(),
           fmt::join(t.shape, ", "), fmt::join(spec->ranks, " or "), spec->shape);
  }
}

ParamValue param_from_json(const OperationSpec& op, const ParamSpec& p, const json& j) {
  const auto wrong = [&](std::string_view expected) {
    fail(op.name, ErrorCode::E_UNSUPPORTED, "parameter '{}' must be {}, not {}", p.name, expected, j.dump());
  };
  switch (p.type) {
    case ParamType::kEnum:
      if (!j.is_string()) wrong("a string");
      if (std::find(p.allowed.begin(), p.allowed.end(), j.get<std::string>()) == p.allowed.end())
        fail(op.name, ErrorCode::E_UNSUPPORTED, "parameter '{}' is '{}'; allowed: {}", p.name, j.get<std::string>(),
             fmt::join(p.allowed, ", "));
      return j.get<std::string>();
    case ParamType::kBool:
      if (!j.is_boolean()) wrong("true or false");
      return j.get<bool>();
    case ParamType::kInt:
      if (!j.is_number_integer() || (j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t(INT64_MAX)))
        wrong("a signed 64-bit integer");
      return j.get<std::int64_t>();
    case ParamType::kUInt:
      if (!j.is_number_unsigned()) wrong("an unsigned 64-bit integer");
      return j.get<std::uint64_t>();
    case ParamType::kIntList: {
      if (!j.is_array()) wrong("an array of integers");
      std::vector<std::int64_t> v;
      for (const json& e : j) {
        if (!e.is_number_integer()) wrong("an array of integers");
        v.push_back(e.get<std::int64_t>());
      }
      return v;
    }
    case ParamType::kF32Bits: {
      if (j.is_null()) return F32Bits{};
      const char* shape = "null or {\"bits\": \"0x\" + 8 hex digits} (exact binary32 bits, never a decimal)";
      if (!j.is_object() || j.size() != 1 || !j.contains("bits") || !j.at("bits").is_string()) wrong(shape);
      const std::string s = j.at("bits").get<std::string>();
      if (s.size() != 10 || (s[0] != '0') || (s[1] != 'x' && s[1] != 'X') ||
          s.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
        wrong(shape);
      return F32Bits{std::uint32_t(std::stoul(s.substr(2), nullptr, 16))};
    }
  }
  wrong("a known type");
  return {};
}

json param_to_json(const ParamValue& v) {
  struct ToJson {
    json operator()(const std::string& s) const { return s; }
    json operator()(bool b) const { return b; }
    json operator()(std::int64_t i) const { return i; }
    json operator()(std::uint64_t u) const { return u; }
    json operator()(const std::vector<std::int64_t>& l) const { return l; }
    json operator()(const F32Bits& b) const { return b.bits ? json{{"bits", fmt::format("0x{:08X}", *b.bits)}} : json(nullptr); }
  };
  return std::visit(ToJson{}, v);
}

json registry_json(std::string_view tool_version) {
  json ops = json::array();
  for (const OperationSpec& op : operations()) {
    json params = json::array();
    for (const ParamSpec& p : op.params) {
      json j = {{"name", p.name}, {"type", param_type_name(p.type)}, {"default", param_to_json(p.default_value)}, {"doc", p.doc}};
      if (p.type == ParamType::kEnum) j["allowed"] = p.allowed;
      params.push_back(std::move(j));
    }
    json device = op.no_device_reason.empty() ? json{{"runs", true}} : json{{"runs", false}, {"reason", op.no_device_reason}};
    ops.push_back({{"name", op.name},
                   {"family", op.family},
                   {"summary", op.summary},
                   {"specification", op.section},
                   {"params", std::move(params)},
                   {"inputs", tensors_json(op.inputs)},
                   {"outputs", tensors_json(op.outputs)},
                   {"backends",
                    {{"reference", {{"runs", true}}},
                     {"metamorphic", {{"runs", true}, {"relation", op.relation}}},
                     {"device", std::move(device)}}}});
  }
  json codes = json::array();
  for (int i = 0; i <= int(ErrorCode::E_UNSUPPORTED); ++i) codes.push_back(error_code_name(ErrorCode(i)));
  return {{"registry_format", 1},
          {"tool_version", tool_version},
          {"case_format", 2},
          {"error_codes", std::move(codes)},
          {"operations", std::move(ops)}};
}

std::string case_label(const Case& c) {
  std::string s = c.op;
  if (c.params.has("profile")) s += " " + c.params.text("profile");
  if (!c.inputs.empty()) {
    const OperationSpec* op = find_operation(c.op);
    const io::Tensor* first = &c.inputs.begin()->second;
    if (op && !op->any_inputs())
      for (const TensorSpec& t : op->inputs)
        if (c.inputs.count(std::string(t.name))) {
          first = &c.inputs.at(std::string(t.name));
          break;
        }
    std::vector<std::int64_t> dims(first->shape.begin(), first->shape.end());
    s += fmt::format(" {} {}", fmt::join(dims, "x"), io::dtype_name(first->dtype));
  }
  if (const OperationSpec* op = find_operation(c.op))
    for (const ParamSpec& p : op->params)
      if (p.name != "profile" && c.params.has(p.name)) {
        const auto it = c.params.values().find(p.name);
        if (it->second != p.default_value) s += fmt::format(" {}={}", p.name, c.params.display(p.name));
      }
  return s;
}

}  // namespace nvfp4::cases
