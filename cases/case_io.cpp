#include "cases/case_io.h"

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cases/registry.h"
#include "reference/error.h"

namespace nvfp4::cases {
namespace {

constexpr const char* kMetadataKey = "nvfp4_case";

using nlohmann::json;

// Thrown inside the parser; case_from_file prefixes the origin.
struct Bad : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class... Args>
[[noreturn]] void bad(fmt::format_string<Args...> f, Args&&... args) {
  throw Bad(fmt::format(f, std::forward<Args>(args)...));
}

const char* json_type(const json& j) { return j.type_name(); }

std::string get_string(const json& obj, const char* key, const char* where) {
  const json& v = obj.at(key);
  if (!v.is_string()) bad("{}.{} must be a string, not {}", where, key, json_type(v));
  return v.get<std::string>();
}

void check_keys(const json& obj, const char* where, std::initializer_list<const char*> known) {
  if (!obj.is_object()) bad("{} must be a JSON object, not {}", where, json_type(obj));
  for (const auto& [k, v] : obj.items()) {
    bool ok = false;
    for (const char* n : known) ok |= k == n;
    if (!ok) {
      std::string names;
      for (const char* n : known) names += names.empty() ? n : std::string(", ") + n;
      bad("{}: unknown field '{}' (known: {})", where, k, names);
    }
  }
}

// The case's parameters from its description: exactly the operation's (format 2), or (format 1,
// which stored every operation's fields side by side) the operation's among them. A parameter
// absent from the file takes its default.
Params parse_params(const OperationSpec& op, const json& j, std::int64_t format) {
  if (!j.is_object()) bad("params must be a JSON object, not {}", json_type(j));
  Params p = make_case(op.name).params;
  for (const auto& [name, value] : j.items()) {
    const ParamSpec* spec = op.param(name);
    if (!spec) {
      if (format == 1) continue;
      std::string known;
      for (const ParamSpec& s : op.params) known += (known.empty() ? "" : ", ") + std::string(s.name);
      bad("operation {} has no parameter '{}' (its parameters: {})", op.name, name, known.empty() ? "none" : known);
    }
    try {
      p.set(name, param_from_json(op, *spec, value));
    } catch (const Error& e) {
      bad("{}", e.what());
    }
  }
  return p;
}

CaseRecord parse_description(const json& d, const io::File& f) {
  check_keys(d, "nvfp4_case", {"format", "op", "params", "inputs", "origin", "note", "found"});
  if (!d.contains("format")) bad("no \"format\" field");
  if (!d.at("format").is_number_integer()) bad("format must be an integer, not {}", d.at("format").dump());
  const std::int64_t format = d.at("format").get<std::int64_t>();
  if (format < 1 || format > kCaseFormatVersion)
    bad("case format version {} is not supported (this build reads versions 1 to {})", format, kCaseFormatVersion);

  CaseRecord r;
  if (!d.contains("op")) bad("no \"op\" field");
  const std::string op = get_string(d, "op", "nvfp4_case");
  const OperationSpec* spec = find_operation(op);
  if (!spec) bad("unknown operation '{}' (known: {})", op, operation_names(", "));
  r.c.op = op;
  r.c.params = parse_params(*spec, d.contains("params") ? d.at("params") : json::object(), format);
  if (d.contains("origin")) r.origin = get_string(d, "origin", "nvfp4_case");
  if (d.contains("note")) r.note = get_string(d, "note", "nvfp4_case");
  if (d.contains("found")) r.found = get_string(d, "found", "nvfp4_case");

  if (!d.contains("inputs")) bad("no \"inputs\" field");
  const json& inputs = d.at("inputs");
  if (!inputs.is_object()) bad("inputs must be a JSON object, not {}", json_type(inputs));
  for (const auto& [name, spec] : inputs.items()) {
    const std::string where = "inputs." + name;
    check_keys(spec, where.c_str(), {"recipe", "tensor"});
    const auto stored = f.tensors.find(name);
    if (spec.contains("recipe")) {
      Recipe recipe;
      try {
        recipe = recipe_from_json(spec.at("recipe"));
      } catch (const std::runtime_error& e) {
        bad("{}.recipe: {}", where, e.what());
      }
      r.recipes[name] = recipe;
      if (stored != f.tensors.end()) {
        r.c.inputs[name] = stored->second;
      } else {
        try {
          r.c.inputs[name] = generate_tensor(recipe);
        } catch (const std::runtime_error& e) {
          bad("{}: cannot regenerate the input from its recipe: {}", where, e.what());
        }
      }
    } else {
      if (!spec.contains("tensor") || spec.at("tensor") != json(true))
        bad("{} must be {{\"recipe\": {{...}}}} or {{\"tensor\": true}}, not {}", where, spec.dump());
      if (stored == f.tensors.end()) bad("missing input: the file has no tensor '{}'", name);
      r.c.inputs[name] = stored->second;
    }
  }
  for (const auto& [name, t] : f.tensors)
    if (!inputs.contains(name)) bad("the file holds a tensor '{}' that is not an input of the case", name);
  try {
    validate_case(r.c);
    validate_case_tensors(r.c);
  } catch (const Error& e) {
    bad("{}", e.what());
  }
  return r;
}

}  // namespace

nlohmann::json describe_case(const CaseRecord& r) {
  json params = json::object();
  const OperationSpec* op = find_operation(r.c.op);
  for (const auto& [name, value] : r.c.params.values()) {
    const ParamSpec* spec = op ? op->param(name) : nullptr;
    if (spec && spec->omit_default && value == spec->default_value) continue;
    params[name] = param_to_json(value);
  }
  json inputs = json::object();
  std::set<std::string> names;
  for (const auto& [name, t] : r.c.inputs) names.insert(name);
  for (const auto& [name, recipe] : r.recipes) names.insert(name);
  for (const std::string& name : names) {
    const auto it = r.recipes.find(name);
    inputs[name] = it != r.recipes.end() ? json{{"recipe", recipe_to_json(it->second)}} : json{{"tensor", true}};
  }
  json d = {{"format", kCaseFormatVersion}, {"op", r.c.op},       {"params", std::move(params)},
            {"inputs", std::move(inputs)},  {"origin", r.origin}, {"note", r.note}};
  if (!r.found.empty()) d["found"] = r.found;  // absent otherwise, so that older files keep their hashes
  return d;
}

io::File case_to_file(const CaseRecord& r) {
  io::File f;
  f.tensors = r.c.inputs;
  for (const auto& [name, recipe] : r.recipes)
    if (!f.tensors.count(name)) {
      try {
        f.tensors[name] = generate_tensor(recipe);
      } catch (const std::runtime_error& e) {
        throw io::FormatError(fmt::format("case input '{}': cannot generate the recipe's tensor: {}", name, e.what()));
      }
    }
  try {
    f.metadata[kMetadataKey] = describe_case(r).dump();
  } catch (const json::exception& e) {  // e.g. a note that is not valid UTF-8
    throw io::FormatError(fmt::format("case description: {}", e.what()));
  }
  return f;
}

Params params_from_json(const OperationSpec& op, const json& params) {
  try {
    return parse_params(op, params, kCaseFormatVersion);
  } catch (const Bad& e) {
    throw io::FormatError(e.what());
  }
}

CaseRecord case_from_file(const io::File& f, std::string_view origin) {
  const auto it = f.metadata.find(kMetadataKey);
  if (it == f.metadata.end())
    throw io::FormatError(
        fmt::format("{}: not an nvfp4-verify case: no \"{}\" description in __metadata__", origin, kMetadataKey));
  json d;
  try {
    d = json::parse(it->second);
  } catch (const json::exception& e) {
    throw io::FormatError(fmt::format("{}: the \"{}\" description is not valid JSON: {}", origin, kMetadataKey, e.what()));
  }
  try {
    return parse_description(d, f);
  } catch (const Bad& e) {
    throw io::FormatError(fmt::format("{}: invalid case description: {}", origin, e.what()));
  } catch (const json::exception& e) {
    throw io::FormatError(fmt::format("{}: invalid case description: {}", origin, e.what()));
  }
}

}  // namespace nvfp4::cases
