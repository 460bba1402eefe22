#include "checkpoint/format.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include "reference/formulas.h"

namespace nvfp4::checkpoint {
namespace {

bool matches(const std::string& pattern, const std::string& name) { return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0; }

bool is_float(io::DType d) { return d == io::DType::BF16 || d == io::DType::F16 || d == io::DType::F32; }

nlohmann::json producer() { return {{"name", "nvfp4-verify"}, {"version", NVFP4_VERSION}}; }

// ---- format A: ModelOpt HF export -----------------------------------------------------------

// The 2-D linears left unquantized, one by one (docs/guides/checkpoints.md section 2.4).
std::vector<std::string> modelopt_ignored(const std::string& t, const io::TensorInfo& info) {
  if (info.shape.size() == 2 && t.ends_with(".weight") && t.find("embed_tokens") == std::string::npos) return {module_of(t)};
  return {};
}

nlohmann::json modelopt_hf_quant_config(const std::vector<std::string>& ignore) {
  return {{"producer", producer()},
          {"quantization",
           {{"quant_algo", "NVFP4"}, {"kv_cache_quant_algo", nullptr}, {"group_size", 16}, {"exclude_modules", ignore}}}};
}

// convert_hf_quant_config_format's shape (docs/guides/checkpoints.md section 2.4), without
// kv_cache_scheme: the converter quantizes no KV cache.
nlohmann::json modelopt_quantization_config(nlohmann::json config, const std::vector<std::string>& ignore) {
  if (!config.is_object()) config = nlohmann::json::object();
  const nlohmann::json args = {{"dynamic", false}, {"num_bits", 4}, {"type", "float"}, {"group_size", 16}};
  config["quantization_config"] = {
      {"config_groups", {{"group_0", {{"input_activations", args}, {"weights", args}, {"targets", {"Linear"}}}}}},
      {"ignore", ignore},
      {"quant_algo", "NVFP4"},
      {"producer", producer()},
      {"quant_method", "modelopt"}};
  return config;
}

// ---- format B: compressed-tensors ------------------------------------------------------------

// config.json's quantization_config for nvfp4-pack-quantized weights with the NVFP4A16 scheme (no
// activation quantization: the converter calibrates none), docs/guides/checkpoints.md section 3.4.
nlohmann::json compressed_tensors_quantization_config(nlohmann::json config, const std::vector<std::string>& ignore) {
  if (!config.is_object()) config = nlohmann::json::object();
  const nlohmann::json weights = {
      {"num_bits", 4},     {"type", "float"},  {"strategy", "tensor_group"},          {"group_size", 16},
      {"symmetric", true}, {"dynamic", false}, {"scale_dtype", "torch.float8_e4m3fn"}};
  config["quantization_config"] = {{"quant_method", "compressed-tensors"},
                                   {"format", "nvfp4-pack-quantized"},
                                   {"quantization_status", "compressed"},
                                   {"config_groups",
                                    {{"group_0",
                                      {{"targets", {"Linear"}},
                                       {"weights", weights},
                                       {"input_activations", nullptr},
                                       {"output_activations", nullptr},
                                       {"format", "nvfp4-pack-quantized"}}}}},
                                   {"ignore", ignore},
                                   {"producer", producer()}};
  return config;
}

// ---- format C: miles' converter (current version) ------------------------------------------

// Every unquantized `*.weight` as its module name, and `<attn>.qkv_proj` for an ignored q/k/v_proj
// (docs/guides/checkpoints.md section 4.4).
std::vector<std::string> miles_ignored(const std::string& t, const io::TensorInfo&) {
  if (!t.ends_with(".weight")) return {};
  const std::string m = module_of(t);
  for (const char* leaf : {".q_proj", ".k_proj", ".v_proj"})
    if (m.ends_with(leaf)) return {m, m.substr(0, m.size() - 7) + ".qkv_proj"};
  return {m};
}

// docs/guides/checkpoints.md section 4.5; the producer is this tool (miles copies the source's file or
// writes {"name": "modelopt"}).
nlohmann::json miles_hf_quant_config(const std::vector<std::string>& ignore) {
  return {{"producer", producer()},
          {"quantization",
           {{"quant_algo", "NVFP4"}, {"kv_cache_quant_algo", "FP8"}, {"group_size", 16}, {"exclude_modules", ignore}}}};
}

nlohmann::json miles_quantization_config(nlohmann::json config, const std::vector<std::string>& ignore) {
  if (!config.is_object()) config = nlohmann::json::object();
  config["quantization_config"] = {{"quant_algo", "NVFP4"},
                                   {"quant_method", "modelopt"},
                                   {"group_size", 16},
                                   {"ignore", ignore},
                                   {"kv_cache_scheme", {{"dynamic", false}, {"num_bits", 8}, {"type", "float"}}}};
  return config;
}

// Format C's weight_scale_2, the one place it is computed. miles' _nvfp4_global_decode_scale_te
// does not take the global scale from the quantizer (TE's NVFP4QuantizerRef exports none): it
// computes S = torch.div(448 * 6, g), S = min(S, FLT_MAX), S = 1 if S == 0 -- TE's reference
// encode scale, the project's GS = TE_PYREF -- and stores torch.div(1.0, S) = RN(1/S)
// (docs/guides/checkpoints.md section 4.2). That is the reciprocal of the encode scale, not g/2688, so
// it differs from ModelOpt's RN(g * r2688) in the last bit for some g; S is taken from the
// reference's formula rather than re-derived so that the two cannot drift apart.
float recip_pyref_s(float g) { return div_rn(1.0f, global_scale(GlobalScaleRule::TE_PYREF, g).S); }

}  // namespace

// What formats A and B share: the Linear layers left out (docs/guides/checkpoints.md section 2.5), the
// modules that share one global amax (section 2.6), and the BMM expert parameters (section 2.7).
const std::vector<std::string> kLinearExclusions = {
    "*embed_tokens*", "*lm_head*", "*norm*", "*router*", "*mlp.gate", "*mlp.shared_expert_gate", "*block_sparse_moe.gate"};
const std::vector<std::vector<std::string>> kAttentionAndMlpSharing = {{"q_proj", "k_proj", "v_proj"}, {"gate_proj", "up_proj"}};
const std::vector<std::string> kBmmExpertParameters = {"model.layers.*.experts.gate_up_proj", "model.layers.*.experts.down_proj"};

std::span<const CheckpointFormat> checkpoint_formats() {
  static const std::vector<CheckpointFormat> formats = {
      // docs/guides/checkpoints.md sections 2.5 (default exclusions) and 2.6 (q/k/v and gate/up share one
      // amax; per expert by name).
      {
          .name = "modelopt",
          .default_profile = "modelopt",
          .quantized = {"model.layers.*_proj.weight"},
          .excluded = kLinearExclusions,
          .shared_amax = kAttentionAndMlpSharing,
          .data_suffix = ".weight",
          .scale_suffix = ".weight_scale",
          .global_suffix = ".weight_scale_2",
          .stored_global = StoredGlobal::PROFILE,
          .ignored = modelopt_ignored,
          .hf_quant_config = modelopt_hf_quant_config,
          .with_quantization_config = modelopt_quantization_config,
          .bmm_experts = kBmmExpertParameters,
          .bmm_model_types = {"llama4", "llama4_text", "gpt_oss"},
          .bmm_layout = true,
      },
      // docs/guides/checkpoints.md section 3: weight_packed, weight_scale (linear), weight_global_scale =
      // G [1]; q/k/v and gate/up share the largest amax (llm-compressor's
      // update_fused_layer_weight_global_scales takes the smallest G); the Linear layers left out
      // follow format A's conventions (lm_head, embeddings, norms, routers), as llm-compressor's MoE
      // recipes ignore the routers. compressed-tensors computes in the weight's dtype, and the
      // checkpoints converted are BF16: an F32 source takes --profile compressed-tensors.
      {
          .name = "compressed-tensors",
          .default_profile = "compressed-tensors-bf16",
          .quantized = {"model.layers.*_proj.weight"},
          .excluded = kLinearExclusions,
          .shared_amax = kAttentionAndMlpSharing,
          .data_suffix = ".weight_packed",
          .scale_suffix = ".weight_scale",
          .global_suffix = ".weight_global_scale",
          .stored_global = StoredGlobal::PROFILE,
          .global_as_vector = true,
          .ignored = modelopt_ignored,
          .hf_quant_config = nullptr,
          .with_quantization_config = compressed_tensors_quantization_config,
          // Experts are separate 2-D modules in this format: a BMM parameter is refused.
          .bmm_experts = kBmmExpertParameters,
          .bmm_layout = false,
      },
      // docs/guides/checkpoints.md sections 4.1 (names, input_scale = 1.0), 4.3 (data and scales of
      // te-pyref), 4.4 (MoE expert linears only) and 4.5 (gate/up, w1/w3 share max(gate, up)).
      {
          .name = "miles",
          .default_profile = "te-pyref",
          .quantized = {"*.w1.weight", "*.w2.weight", "*.w3.weight", "*.gate_proj.weight", "*.up_proj.weight",
                        "*.down_proj.weight", "*.gate_up_proj.weight"},
          .quantized_within = {".experts.", ".shared_experts.", "block_sparse_moe.experts.", ".moe.experts."},
          .shared_amax = {{"gate_proj", "up_proj"}, {"w1", "w3"}},
          .data_suffix = ".weight",
          .scale_suffix = ".weight_scale",
          .global_suffix = ".weight_scale_2",
          .placeholder_input_suffix = ".input_scale",
          .stored_global = StoredGlobal::RECIP_PYREF_S,
          .stacked_experts = true,
          .ignored = miles_ignored,
          .hf_quant_config = miles_hf_quant_config,
          .with_quantization_config = miles_quantization_config,
          // miles' names end in ".weight": a BMM parameter is not selected.
      },
  };
  return formats;
}

const CheckpointFormat* find_format(std::string_view name) {
  for (const CheckpointFormat& f : checkpoint_formats())
    if (f.name == name) return &f;
  return nullptr;
}

std::string supported_formats() {
  std::string names;
  for (const CheckpointFormat& f : checkpoint_formats()) names += (names.empty() ? "" : ", ") + f.name;
  return names;
}

std::vector<std::int64_t> global_shape(const CheckpointFormat& f, std::vector<std::int64_t> lead) {
  if (lead.empty() && f.global_as_vector) return {1};
  return lead;
}

std::string module_of(const std::string& weight_name) {
  const std::string suffix = ".weight";
  if (weight_name.size() > suffix.size() && weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return weight_name.substr(0, weight_name.size() - suffix.size());
  return weight_name;
}

bool is_selected(const CheckpointFormat& f, const std::string& tensor, const std::vector<std::string>& extra_excludes) {
  bool included = false;
  for (const std::string& p : f.quantized) included = included || matches(p, tensor);
  if (!included) return false;
  bool within = f.quantized_within.empty();
  for (const std::string& s : f.quantized_within) within = within || tensor.find(s) != std::string::npos;
  if (!within) return false;
  const std::string module = module_of(tensor);
  for (const std::string& p : f.excluded)
    if (matches(p, module)) return false;
  for (const std::string& p : extra_excludes)
    if (matches(p, module)) return false;
  return true;
}

bool is_quantized(const CheckpointFormat& f, const std::string& tensor, const io::TensorInfo& info,
                  const std::vector<std::string>& extra_excludes) {
  return (info.shape.size() == 2 || (info.shape.size() == 3 && f.stacked_experts)) && is_float(info.dtype) &&
         is_selected(f, tensor, extra_excludes);
}

bool is_bmm_selected(const CheckpointFormat& f, const std::string& tensor, const io::TensorInfo& info,
                     const std::vector<std::string>& extra_excludes) {
  if (info.shape.size() != 3 || !is_float(info.dtype)) return false;
  bool included = false;
  for (const std::string& p : f.bmm_experts) included = included || matches(p, tensor);
  if (!included) return false;
  for (const std::string& p : f.excluded)
    if (matches(p, tensor)) return false;
  for (const std::string& p : extra_excludes)
    if (matches(p, tensor)) return false;
  return true;
}

std::string model_type_of(const nlohmann::json& config) {
  if (!config.is_object()) return "";
  for (const nlohmann::json* c : {config.contains("text_config") ? &config["text_config"] : nullptr, &config})
    if (c && c->is_object() && c->value("model_type", nlohmann::json()).is_string()) return (*c)["model_type"].get<std::string>();
  return "";
}

bool is_bmm_model(const CheckpointFormat& f, const nlohmann::json& config) {
  const std::string t = model_type_of(config);
  for (const std::string& m : f.bmm_model_types)
    if (t == m) return true;
  return false;
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

QuantizedWeight quantize_for_format(cases::Backend& b, const CheckpointFormat& f, const std::string& name, const io::Tensor& w,
                                    const std::string& profile, float amax) {
  if (w.shape.size() == 3) {
    QuantizedWeight q = quantize_experts(b, name, w, profile, f.swizzled_scales);
    if (!q.global_scale && f.stored_global == StoredGlobal::RECIP_PYREF_S) {
      std::vector<float> g;
      for (float a : q.expert_amax) g.push_back(recip_pyref_s(a));
      q.global_scale = io::make_tensor_from<float>(io::DType::F32, {w.shape.at(0)}, g);
    }
    return q;
  }
  QuantizedWeight q = quantize_weight(b, name, w, profile, amax, f.swizzled_scales);
  if (!q.global_scale && f.stored_global == StoredGlobal::RECIP_PYREF_S)
    q.global_scale = io::make_tensor_from<float>(io::DType::F32, {}, std::vector<float>{recip_pyref_s(amax)});
  if (q.global_scale) q.global_scale->shape = global_shape(f, {});
  return q;
}

}  // namespace nvfp4::checkpoint
