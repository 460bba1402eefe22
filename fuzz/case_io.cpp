#include "fuzz/case_io.h"

#include <bit>
#include <charconv>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "reference/profiles.h"

namespace nvfp4 {
namespace {

constexpr const char* kMetadataKey = "nvfp4_case";

using nlohmann::json;

std::string_view block_name(BlockShape b) { return b == BlockShape::k1D ? "1d" : "2d"; }
std::string_view direction_name(Direction d) {
  switch (d) {
    case Direction::kRowwise: return "rowwise";
    case Direction::kColumnwise: return "columnwise";
    case Direction::kBoth: return "both";
  }
  return "unknown";
}
std::string_view layout_name(ScaleLayout l) { return l == ScaleLayout::kCompact ? "compact" : "swizzled"; }

// The input tensors each operation reads (the backends' contract, fuzz/case.h).
std::vector<std::string> required_inputs(Operation op) {
  switch (op) {
    case Operation::kAmaxGlobal:
    case Operation::kAmaxRows:
    case Operation::kAmaxCols:
    case Operation::kAmaxBlocks1x16:
    case Operation::kAmaxBlocks16x1:
    case Operation::kAmaxTiles16x16:
    case Operation::kQuantize: return {"x"};
    case Operation::kDequantize: return {"amax", "data", "scale"};
    case Operation::kSwizzle:
    case Operation::kUnswizzle:
    case Operation::kTransposeScales2D: return {"scale"};
    case Operation::kTransposePacked: return {"data"};
    case Operation::kAmaxPartial: return {"xs"};
    case Operation::kFusedScale: return {"amax", "tile_amax"};
    case Operation::kPartialCast: return {"data", "global_scale", "tile_scale", "xs"};
    case Operation::kCastMasterWeights: return {};  // the weights, any names
  }
  return {};
}

std::string operation_names() {
  std::string s;
  for (int i = 0; i <= int(Operation::kCastMasterWeights); ++i) {
    if (i) s += ", ";
    s += operation_name(Operation(i));
  }
  return s;
}

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

std::int64_t get_int(const json& obj, const char* key, const char* where) {
  const json& v = obj.at(key);
  if (!v.is_number_integer()) bad("{}.{} must be an integer, not {}", where, key, json_type(v));
  return v.get<std::int64_t>();
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

std::string amax_bits_text(float a) { return fmt::format("0x{:08X}", std::bit_cast<std::uint32_t>(a)); }

float parse_amax(const json& j) {
  if (!j.is_object() || !j.contains("bits") || j.size() != 1)
    bad("params.amax must be null or {{\"bits\": \"0x7FC00000\"}} (exact binary32 bits, never a decimal), not {}",
        j.dump());
  const json& b = j.at("bits");
  if (!b.is_string()) bad("params.amax.bits must be a string \"0x\" + 8 hex digits, not {}", b.dump());
  const std::string s = b.get<std::string>();
  if (s.size() != 10 || (s.substr(0, 2) != "0x" && s.substr(0, 2) != "0X"))
    bad("params.amax.bits '{}' is not \"0x\" followed by 8 hex digits", s);
  std::uint32_t bits = 0;
  const auto [p, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), bits, 16);
  if (ec != std::errc() || p != s.data() + s.size()) bad("params.amax.bits '{}' is not \"0x\" followed by 8 hex digits", s);
  return std::bit_cast<float>(bits);
}

CaseParams parse_params(const json& j) {
  check_keys(j, "params", {"profile", "block", "direction", "row_scaled", "amax", "scale_layout", "output_dtype", "M", "K",
                           "shard_start", "cuts"});
  CaseParams p;
  if (j.contains("profile")) {
    p.profile = get_string(j, "profile", "params");
    if (!find_profile(p.profile)) bad("params.profile: unknown profile '{}' (known: {})", p.profile, profile_names(", "));
  }
  if (j.contains("block")) {
    const std::string s = get_string(j, "block", "params");
    if (s == "1d") p.block = BlockShape::k1D;
    else if (s == "2d") p.block = BlockShape::k2D;
    else bad("params.block: unknown value '{}' (known: 1d, 2d)", s);
  }
  if (j.contains("direction")) {
    const std::string s = get_string(j, "direction", "params");
    if (s == "rowwise") p.direction = Direction::kRowwise;
    else if (s == "columnwise") p.direction = Direction::kColumnwise;
    else if (s == "both") p.direction = Direction::kBoth;
    else bad("params.direction: unknown value '{}' (known: rowwise, columnwise, both)", s);
  }
  if (j.contains("row_scaled")) {
    const json& v = j.at("row_scaled");
    if (!v.is_boolean()) bad("params.row_scaled must be true or false, not {}", v.dump());
    p.row_scaled = v.get<bool>();
  }
  if (j.contains("amax") && !j.at("amax").is_null()) p.amax = parse_amax(j.at("amax"));
  if (j.contains("scale_layout")) {
    const std::string s = get_string(j, "scale_layout", "params");
    if (s == "compact") p.scale_layout = ScaleLayout::kCompact;
    else if (s == "swizzled") p.scale_layout = ScaleLayout::kSwizzled;
    else bad("params.scale_layout: unknown value '{}' (known: compact, swizzled)", s);
  }
  if (j.contains("output_dtype")) {
    const std::string s = get_string(j, "output_dtype", "params");
    const auto t = io::dtype_from_name(s);
    if (!t) bad("params.output_dtype: unknown dtype '{}' (e.g. F32, BF16, F16)", s);
    p.output_dtype = *t;
  }
  if (j.contains("M")) p.M = get_int(j, "M", "params");
  if (j.contains("K")) p.K = get_int(j, "K", "params");
  if (j.contains("shard_start")) p.shard_start = get_int(j, "shard_start", "params");
  if (j.contains("cuts")) {
    const json& v = j.at("cuts");
    if (!v.is_array()) bad("params.cuts must be an array of integers, not {}", json_type(v));
    for (const json& c : v) {
      if (!c.is_number_integer()) bad("params.cuts must hold integers, not {}", c.dump());
      p.cuts.push_back(c.get<std::int64_t>());
    }
  }
  return p;
}

CaseRecord parse_description(const json& d, const io::File& f) {
  check_keys(d, "nvfp4_case", {"format", "op", "params", "inputs", "origin", "note"});
  if (!d.contains("format")) bad("no \"format\" field");
  if (!d.at("format").is_number_integer()) bad("format must be an integer, not {}", d.at("format").dump());
  const std::int64_t format = d.at("format").get<std::int64_t>();
  if (format != kCaseFormatVersion)
    bad("case format version {} is not supported (this build reads version {})", format, kCaseFormatVersion);

  CaseRecord r;
  if (!d.contains("op")) bad("no \"op\" field");
  const std::string op = get_string(d, "op", "nvfp4_case");
  const auto o = operation_from_name(op);
  if (!o) bad("unknown operation '{}' (known: {})", op, operation_names());
  r.c.op = *o;
  if (d.contains("params")) r.c.params = parse_params(d.at("params"));
  if (d.contains("origin")) r.origin = get_string(d, "origin", "nvfp4_case");
  if (d.contains("note")) r.note = get_string(d, "note", "nvfp4_case");

  if (!d.contains("inputs")) bad("no \"inputs\" field");
  const json& inputs = d.at("inputs");
  if (!inputs.is_object()) bad("inputs must be a JSON object, not {}", json_type(inputs));
  for (const auto& [name, spec] : inputs.items()) {
    const std::string where = "inputs." + name;
    check_keys(spec, where.c_str(), {"recipe", "tensor"});
    const auto stored = f.tensors.find(name);
    if (spec.contains("recipe")) {
      fuzz::Recipe recipe;
      try {
        recipe = fuzz::recipe_from_json(spec.at("recipe"));
      } catch (const std::runtime_error& e) {
        bad("{}.recipe: {}", where, e.what());
      }
      r.recipes[name] = recipe;
      if (stored != f.tensors.end()) {
        r.c.inputs[name] = stored->second;
      } else {
        try {
          r.c.inputs[name] = fuzz::generate_tensor(recipe);
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
  for (const std::string& name : required_inputs(r.c.op))
    if (!r.c.inputs.count(name)) bad("missing input: operation {} needs an input '{}'", op, name);
  return r;
}

}  // namespace

nlohmann::json describe_case(const CaseRecord& r) {
  const CaseParams& p = r.c.params;
  json params = {
      {"profile", p.profile},
      {"block", block_name(p.block)},
      {"direction", direction_name(p.direction)},
      {"row_scaled", p.row_scaled},
      {"amax", p.amax ? json{{"bits", amax_bits_text(*p.amax)}} : json(nullptr)},
      {"scale_layout", layout_name(p.scale_layout)},
      {"output_dtype", io::dtype_name(p.output_dtype)},
      {"M", p.M},
      {"K", p.K},
  };
  // Only the operations that have them describe a shard or cut points, so that older cases keep
  // their descriptions (and content hashes).
  if (r.c.op == Operation::kAmaxPartial || r.c.op == Operation::kPartialCast) params["shard_start"] = p.shard_start;
  if (r.c.op == Operation::kCastMasterWeights) params["cuts"] = p.cuts;
  json inputs = json::object();
  std::set<std::string> names;
  for (const auto& [name, t] : r.c.inputs) names.insert(name);
  for (const auto& [name, recipe] : r.recipes) names.insert(name);
  for (const std::string& name : names) {
    const auto it = r.recipes.find(name);
    inputs[name] = it != r.recipes.end() ? json{{"recipe", fuzz::recipe_to_json(it->second)}} : json{{"tensor", true}};
  }
  return {{"format", kCaseFormatVersion}, {"op", operation_name(r.c.op)}, {"params", std::move(params)},
          {"inputs", std::move(inputs)},  {"origin", r.origin},            {"note", r.note}};
}

io::File case_to_file(const CaseRecord& r) {
  io::File f;
  f.tensors = r.c.inputs;
  for (const auto& [name, recipe] : r.recipes)
    if (!f.tensors.count(name)) {
      try {
        f.tensors[name] = fuzz::generate_tensor(recipe);
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

CaseRecord case_from_file(const io::File& f, std::string_view origin) {
  const auto it = f.metadata.find(kMetadataKey);
  if (it == f.metadata.end())
    throw io::FormatError(fmt::format("{}: not an nvfp4-verify case: no \"{}\" description in __metadata__", origin, kMetadataKey));
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

}  // namespace nvfp4
