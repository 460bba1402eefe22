#include "vectors/pack.h"

#include <fstream>
#include <set>

#include <fmt/format.h>

#include "cases/case_io.h"
#include "cases/registry.h"
#include "io/atomic_directory.h"
#include "io/sha256.h"
#include "reference/profiles.h"
#include "reference/specification.h"

namespace nvfp4::vectors {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string input_name(const Vector& v, const std::string& name) { return v.id + ".in." + name; }
std::string output_name(const Vector& v, const std::string& name) { return v.id + ".out." + name; }

// Every parameter, defaults included: a pack spells out each vector's parameters for implementers.
json params_json(const cases::Case& c) {
  json p = json::object();
  for (const auto& [name, value] : c.params.values()) p[name] = cases::param_to_json(value);
  return p;
}

std::vector<std::int64_t> first_shape(const Vector& v) {
  return v.c.inputs.empty() ? std::vector<std::int64_t>{} : v.c.inputs.begin()->second.shape;
}

[[noreturn]] void bad(const fs::path& file, const std::string& what) {
  throw io::FormatError(fmt::format("{}: {}", file.string(), what));
}

cases::Case case_from_json(const fs::path& file, const std::string& op_name, const json& params) {
  const cases::OperationSpec* op = cases::find_operation(op_name);
  if (!op) bad(file, fmt::format("unknown operation '{}'", op_name));
  cases::Case c = cases::make_case(op_name);
  try {
    c.params = cases::params_from_json(*op, params);
  } catch (const io::FormatError& e) {
    bad(file, e.what());
  }
  return c;
}

// A JSON file of a pack or of the committed hashes.
json read_json(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) bad(file, "cannot read the file");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    bad(file, fmt::format("not valid JSON: {}", e.what()));
  }
}

VectorSet set_from_file(const fs::path& path, const io::File& f) {
  const auto it = f.metadata.find(kMetadataKey);
  if (it == f.metadata.end()) bad(path, fmt::format("not a vector file: no \"{}\" in __metadata__", kMetadataKey));
  const json d = json::parse(it->second);
  VectorSet set{d.at("op").get<std::string>(), d.at("profile").get<std::string>(), {}};
  std::set<std::string> used;
  const auto tensor = [&](const std::string& name) {
    const auto t = f.tensors.find(name);
    if (t == f.tensors.end()) bad(path, fmt::format("no tensor '{}'", name));
    used.insert(name);
    return t->second;
  };
  for (const json& e : d.at("vectors")) {
    Vector v{e.at("id").get<std::string>(),
             e.at("regime").get<std::string>(),
             e.at("pattern").get<std::string>(),
             e.at("mode").get<std::string>(),
             case_from_json(path, set.op, e.at("params")),
             {}};
    for (const auto& [name, stored] : e.at("inputs").items()) v.c.inputs[name] = tensor(stored.get<std::string>());
    for (const auto& [name, stored] : e.at("outputs").items()) v.expected[name] = tensor(stored.get<std::string>());
    try {
      cases::validate_case(v.c);
      cases::validate_case_tensors(v.c);
    } catch (const Error& err) {
      bad(path, fmt::format("vector {}: {}", v.id, err.what()));
    }
    set.vectors.push_back(std::move(v));
  }
  for (const auto& [name, t] : f.tensors)
    if (!used.count(name)) bad(path, fmt::format("tensor '{}' belongs to no vector", name));
  return set;
}

}  // namespace

io::File set_to_file(const VectorSet& set) {
  io::File f;
  json vectors = json::array();
  for (const Vector& v : set.vectors) {
    json inputs = json::object(), outputs = json::object();
    for (const auto& [name, t] : v.c.inputs) {
      inputs[name] = input_name(v, name);
      f.tensors[input_name(v, name)] = t;
    }
    for (const auto& [name, t] : v.expected) {
      outputs[name] = output_name(v, name);
      f.tensors[output_name(v, name)] = t;
    }
    vectors.push_back({{"id", v.id},
                       {"regime", v.regime},
                       {"pattern", v.pattern},
                       {"mode", v.mode},
                       {"params", params_json(v.c)},
                       {"inputs", std::move(inputs)},
                       {"outputs", std::move(outputs)}});
  }
  f.metadata[kMetadataKey] =
      json{{"format_version", kPackFormatVersion}, {"op", set.op}, {"profile", set.profile}, {"vectors", std::move(vectors)}}
          .dump();
  return f;
}

std::vector<std::string> set_hashes(const std::vector<VectorSet>& sets) {
  std::vector<std::string> out;
  for (const VectorSet& s : sets) out.push_back(io::sha256_hex(io::serialize(set_to_file(s))));
  return out;
}

json manifest(const Selection& s, const std::vector<VectorSet>& sets, const std::vector<std::string>& hashes) {
  json files = json::array(), vectors = json::array(), profiles = json::object();
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const VectorSet& set = sets[i];
    files.push_back({{"file", set.file_name()},
                     {"op", set.op},
                     {"profile", set.profile},
                     {"vectors", set.vectors.size()},
                     {"sha256", hashes.at(i)}});
    if (!set.profile.empty() && !profiles.contains(set.profile)) {
      json knobs = json::object();
      for (const auto& [knob, value] : knob_values(find_profile(set.profile)->knobs)) knobs[std::string(knob)] = value;
      profiles[set.profile] = std::move(knobs);
    }
    for (const Vector& v : set.vectors)
      vectors.push_back({{"file", set.file_name()},
                         {"id", v.id},
                         {"regime", v.regime},
                         {"pattern", v.pattern},
                         {"mode", v.mode},
                         {"shape", first_shape(v)}});
  }
  json regime_names = json::object(), pattern_names = json::object();
  for (const Regime& r : regimes()) regime_names[std::string(r.name)] = r.exercises;
  for (const Pattern& p : patterns(s.level)) pattern_names[std::string(p.name)] = p.exercises;
  return {{"format", "nvfp4-verify vector pack"},
          {"format_version", kPackFormatVersion},
          {"specification", {{"document", "NUMERICS.md"}, {"version", kSpecificationVersion}}},
          {"tool_version", NVFP4_VERSION},
          {"generator", {{"version", kGeneratorVersion}, {"level", int(s.level)}, {"seed", s.seed}}},
          {"profiles", std::move(profiles)},
          {"regimes", std::move(regime_names)},
          {"patterns", std::move(pattern_names)},
          {"files", std::move(files)},
          {"vectors", std::move(vectors)}};
}

json write_pack(const fs::path& dir, const Selection& s, const std::vector<VectorSet>& sets) {
  io::AtomicDirectory out(dir);
  std::vector<std::string> hashes;
  for (const VectorSet& set : sets) {
    const std::vector<std::uint8_t> bytes = io::serialize(set_to_file(set));
    hashes.push_back(io::sha256_hex(bytes));
    io::write_file_atomic(out.path() / set.file_name(), bytes);
  }
  const json m = manifest(s, sets, hashes);
  const std::string text = m.dump(2) + "\n";
  io::write_file_atomic(out.path() / "manifest.json", std::string_view(text));
  out.commit(io::AtomicDirectory::Existing::kReplace);
  return m;
}

json hashes_json(const Selection& s, const std::vector<VectorSet>& sets) {
  const std::vector<std::string> hashes = set_hashes(sets);
  json files = json::object();
  for (std::size_t i = 0; i < sets.size(); ++i) files[sets[i].file_name()] = hashes[i];
  return {{"format", "nvfp4-verify vector hashes"},
          {"specification_version", kSpecificationVersion},
          {"generator_version", kGeneratorVersion},
          {"level", int(s.level)},
          {"seed", s.seed},
          {"files", std::move(files)}};
}

json read_hashes(const fs::path& file) { return read_json(file); }

std::vector<std::string> hash_differences(const json& committed, const json& regenerated) {
  std::vector<std::string> out;
  for (const char* key : {"specification_version", "generator_version", "level", "seed"})
    if (committed.value(key, json()) != regenerated.at(key))
      out.push_back(fmt::format("{} {} where the regenerated pack has {}", key, committed.value(key, json()).dump(),
                                regenerated.at(key).dump()));
  const json none = json::object();
  const json& a = committed.contains("files") ? committed.at("files") : none;
  const json& b = regenerated.at("files");
  for (const auto& [file, hash] : b.items()) {
    if (!a.contains(file))
      out.push_back(fmt::format("{}: regenerated, but has no committed hash", file));
    else if (a.at(file) != hash)
      out.push_back(fmt::format("{}: regenerated SHA-256 {} differs from the committed {}", file, hash.get<std::string>(),
                                a.at(file).is_string() ? a.at(file).get<std::string>() : a.at(file).dump()));
  }
  for (const auto& [file, hash] : a.items())
    if (!b.contains(file)) out.push_back(fmt::format("{}: has a committed hash, but is not regenerated", file));
  return out;
}

std::vector<compare::ReplaySource> replay_sources(const fs::path& where, const std::vector<VectorSet>& sets,
                                                  bool stored_outputs) {
  std::vector<compare::ReplaySource> out;
  for (const VectorSet& set : sets)
    for (const Vector& v : set.vectors) {
      compare::ReplayCase rc{{v.c, {}, "vector pack " + where.string(), v.regime + " / " + v.pattern + " / " + v.mode, ""},
                             stored_outputs ? std::optional(v.expected) : std::nullopt};
      out.push_back({where / (set.file_name() + "#" + v.id), [rc] { return rc; }});
    }
  return out;
}

Pack read_pack(const fs::path& dir) {
  const fs::path manifest_path = dir / "manifest.json";
  Pack p;
  p.manifest = read_json(manifest_path);
  try {
    if (p.manifest.at("format_version").get<int>() != kPackFormatVersion)
      bad(manifest_path, fmt::format("pack format version {} is not supported (this build reads {})",
                                     p.manifest.at("format_version").dump(), kPackFormatVersion));
    for (const json& f : p.manifest.at("files")) {
      const fs::path file = dir / f.at("file").get<std::string>();
      const std::string want = f.at("sha256").get<std::string>(), got = io::sha256_file_hex(file);
      if (got != want)
        bad(file, fmt::format("SHA-256 {} differs from the manifest's {}: the file was changed or damaged", got, want));
      p.sets.push_back(set_from_file(file, io::read_file(file)));
    }
  } catch (const json::exception& e) {
    bad(manifest_path, fmt::format("invalid pack description: {}", e.what()));
  }
  return p;
}

}  // namespace nvfp4::vectors
