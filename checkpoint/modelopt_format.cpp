#include "checkpoint/modelopt_format.h"

#include <fnmatch.h>

namespace nvfp4::checkpoint {
namespace {

bool matches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

bool is_float(io::DType d) { return d == io::DType::BF16 || d == io::DType::F16 || d == io::DType::F32; }

}  // namespace

// docs/checkpoints.md sections 2.5 (default exclusions) and 2.6 (q/k/v and gate/up share one
// amax; per expert by name).
const CheckpointFormat& modelopt_format() {
  static const CheckpointFormat f{
      "modelopt",
      "modelopt",
      {"model.layers.*_proj.weight"},
      {"*embed_tokens*", "*lm_head*", "*norm*", "*router*", "*mlp.gate", "*mlp.shared_expert_gate",
       "*block_sparse_moe.gate"},
      {{"q_proj", "k_proj", "v_proj"}, {"gate_proj", "up_proj"}},
      ".weight",
      ".weight_scale",
      ".weight_scale_2",
      false,
  };
  return f;
}

std::optional<CheckpointFormat> find_format(const std::string& name) {
  if (name == "modelopt") return modelopt_format();
  return std::nullopt;
}

std::string supported_formats() { return "modelopt"; }

std::string module_of(const std::string& weight_name) {
  const std::string suffix = ".weight";
  if (weight_name.size() > suffix.size() &&
      weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return weight_name.substr(0, weight_name.size() - suffix.size());
  return weight_name;
}

bool is_quantized(const CheckpointFormat& f, const std::string& tensor, const io::TensorInfo& info,
                  const std::vector<std::string>& extra_excludes) {
  if (info.shape.size() != 2 || !is_float(info.dtype)) return false;
  bool included = false;
  for (const std::string& p : f.quantized) included = included || matches(p, tensor);
  if (!included) return false;
  const std::string module = module_of(tensor);
  for (const std::string& p : f.excluded)
    if (matches(p, module)) return false;
  for (const std::string& p : extra_excludes)
    if (matches(p, module)) return false;
  return true;
}

std::string amax_group(const CheckpointFormat& f, const std::string& module) {
  const std::size_t dot = module.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : module.substr(0, dot + 1);
  const std::string leaf = dot == std::string::npos ? module : module.substr(dot + 1);
  for (const auto& group : f.shared_amax)
    for (const std::string& member : group)
      if (leaf == member) {
        std::string key = parent + "{";
        for (const std::string& m : group) key += m + (&m == &group.back() ? "}" : ",");
        return key;
      }
  return module;
}

nlohmann::json hf_quant_config(const std::vector<std::string>& exclude_modules) {
  return {{"producer", {{"name", "nvfp4-verify"}, {"version", NVFP4_VERSION}}},
          {"quantization",
           {{"quant_algo", "NVFP4"},
            {"kv_cache_quant_algo", nullptr},
            {"group_size", 16},
            {"exclude_modules", exclude_modules}}}};
}

// convert_hf_quant_config_format's shape (docs/checkpoints.md section 2.4), without
// kv_cache_scheme: the converter quantizes no KV cache.
nlohmann::json with_quantization_config(nlohmann::json config, const std::vector<std::string>& exclude_modules) {
  if (!config.is_object()) config = nlohmann::json::object();
  const nlohmann::json args = {{"dynamic", false}, {"num_bits", 4}, {"type", "float"}, {"group_size", 16}};
  config["quantization_config"] = {
      {"config_groups", {{"group_0", {{"input_activations", args}, {"weights", args}, {"targets", {"Linear"}}}}}},
      {"ignore", exclude_modules},
      {"quant_algo", "NVFP4"},
      {"producer", {{"name", "nvfp4-verify"}, {"version", NVFP4_VERSION}}},
      {"quant_method", "modelopt"}};
  return config;
}

}  // namespace nvfp4::checkpoint
