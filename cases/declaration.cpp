#include "cases/declaration.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/registry.h"

namespace nvfp4::cases {
namespace {

using nlohmann::json;

[[noreturn]] void bad(std::string_view who, const std::string& what) {
  throw BackendUnavailable(fmt::format("{}: its declaration is invalid: {}", who, what));
}

}  // namespace

bool dtype_declarable(const OperationSpec& op, const TensorSpec& t) { return t.dtypes.size() > 1 && !op.any_inputs(); }

std::optional<io::DType> declared_dtype(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return char(std::toupper(ch)); });
  return io::dtype_from_name(upper);
}

Declaration Declaration::parse(const json& implements, std::string_view who) {
  if (!implements.is_array()) bad(who, "\"implements\" must be an array of {\"op\", \"params\", \"dtype\"} objects");
  Declaration d;
  for (const json& entry : implements) {
    if (!entry.is_object() || !entry.contains("op") || !entry.at("op").is_string())
      bad(who, fmt::format("an entry without an \"op\" name: {}", entry.dump()));
    const std::string name = entry.at("op").get<std::string>();
    Op op;
    op.spec = find_operation(name);
    if (!op.spec) bad(who, fmt::format("unknown operation '{}' (known: {})", name, operation_names(", ")));
    if (d.find(name)) bad(who, fmt::format("operation '{}' is declared twice", name));
    for (const auto& [key, _] : entry.items())
      if (key != "op" && key != "params" && key != "dtype")
        bad(who, fmt::format("{}: unknown field '{}' (fields: op, params, dtype)", name, key));
    if (entry.contains("params")) {
      if (!entry.at("params").is_object()) bad(who, fmt::format("{}: \"params\" must be an object", name));
      for (const auto& [pname, values] : entry.at("params").items()) {
        const ParamSpec* p = op.spec->param(pname);
        if (!p) bad(who, fmt::format("{}: no parameter '{}'", name, pname));
        op.named.insert(pname);
        if (values.is_string() && values.get<std::string>() == kAnyValue) continue;
        if (!values.is_array() || values.empty())
          bad(who, fmt::format("{}: parameter '{}' must list its accepted values, or be \"{}\" for any", name, pname, kAnyValue));
        std::vector<ParamValue>& list = op.params[pname];
        for (const json& v : values) {
          try {
            list.push_back(param_from_json(*op.spec, *p, v));
          } catch (const Error& e) {
            bad(who, e.what());
          }
        }
      }
    }
    for (const ParamSpec* p : op.held_at_default()) op.params[std::string(p->name)] = {p->default_value};
    if (entry.contains("dtype")) {
      const json& dtypes = entry.at("dtype");
      if (!dtypes.is_array() || dtypes.empty()) bad(who, fmt::format("{}: \"dtype\" must list dtypes", name));
      if (std::none_of(op.spec->inputs.begin(), op.spec->inputs.end(),
                       [&](const TensorSpec& t) { return dtype_declarable(*op.spec, t); }))
        bad(who, fmt::format("{}: has no input of several dtypes to restrict", name));
      for (const json& t : dtypes) {
        const auto dt = t.is_string() ? declared_dtype(t.get<std::string>()) : std::nullopt;
        if (!dt) bad(who, fmt::format("{}: unknown dtype {}", name, t.dump()));
        op.dtypes.push_back(*dt);
      }
    }
    d.ops_.push_back(std::move(op));
  }
  if (d.ops_.empty()) bad(who, "it implements no operation");
  return d;
}

std::vector<const ParamSpec*> Declaration::Op::held_at_default() const {
  std::vector<const ParamSpec*> held;
  for (const ParamSpec& p : spec->params)
    if (!named.contains(p.name)) held.push_back(&p);
  return held;
}

const Declaration::Op* Declaration::find(std::string_view op) const {
  for (const Op& o : ops_)
    if (o.spec->name == op) return &o;
  return nullptr;
}

std::vector<std::string> Declaration::operations() const {
  std::vector<std::string> names;
  for (const Op& o : ops_) names.emplace_back(o.spec->name);
  return names;
}

const std::vector<ParamValue>* Declaration::allowed(std::string_view op, std::string_view param) const {
  const Op* o = find(op);
  if (!o) return nullptr;
  const auto it = o->params.find(param);
  return it == o->params.end() ? nullptr : &it->second;
}

std::string Declaration::outside(const Case& c) const {
  const Op* o = find(c.op);
  if (!o) return fmt::format("operation {} is not declared", c.op);
  for (const auto& [name, values] : o->params) {
    if (!c.params.has(name)) continue;
    const ParamValue& v = c.params.values().find(name)->second;
    if (std::find(values.begin(), values.end(), v) == values.end())
      return fmt::format("{}={} is not declared", name, c.params.display(name));
  }
  if (!o->dtypes.empty())
    for (const TensorSpec& t : o->spec->inputs) {
      const auto it = c.inputs.find(std::string(t.name));
      if (!dtype_declarable(*o->spec, t) || it == c.inputs.end()) continue;
      if (std::find(o->dtypes.begin(), o->dtypes.end(), it->second.dtype) == o->dtypes.end())
        return fmt::format("input {} of dtype {} is not declared", t.name, io::dtype_name(it->second.dtype));
    }
  return "";
}

json Declaration::to_json() const {
  json a = json::array();
  for (const Op& o : ops_) {
    json params = json::object();
    for (const std::string& name : o.named) {
      const auto it = o.params.find(name);
      if (it == o.params.end()) {
        params[name] = std::string(kAnyValue);
        continue;
      }
      json list = json::array();
      for (const ParamValue& v : it->second) list.push_back(param_to_json(v));
      params[name] = std::move(list);
    }
    json entry = {{"op", o.spec->name}, {"params", std::move(params)}};
    if (!o.dtypes.empty()) {
      json dt = json::array();
      for (io::DType t : o.dtypes) dt.push_back(io::dtype_name(t));
      entry["dtype"] = std::move(dt);
    }
    a.push_back(std::move(entry));
  }
  return a;
}

}  // namespace nvfp4::cases
