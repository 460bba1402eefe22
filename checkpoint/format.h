// The NVFP4 checkpoint formats as data (docs/guides/checkpoints.md), one descriptor per format: which
// weights it quantizes, which of them share one global amax, the names it stores them under, how it
// obtains its global scale and what its configuration files say: A (`modelopt`, ModelOpt's HF
// export), B (`compressed-tensors`, llm-compressor's nvfp4-pack-quantized weights as vLLM loads
// them) and C (`miles`, miles' converter, current version).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/weight_quantizer.h"
#include "io/safetensors.h"

namespace nvfp4::checkpoint {

// Where a format's stored global scale (`weight_scale_2`) comes from.
enum class StoredGlobal {
  PROFILE,        // the profile's exported global scale; a profile exporting none cannot be used
  RECIP_PYREF_S,  // the profile's when it exports one, else the format's own RN(1/S) (format C)
};

struct CheckpointFormat {
  std::string name;             // "modelopt", "compressed-tensors", "miles"
  std::string default_profile;  // the profile whose numerics the format's producer has
  // fnmatch patterns over tensor names of the weights quantized (float) ...
  std::vector<std::string> quantized;
  // ... whose name contains one of these (empty: no such condition) ...
  std::vector<std::string> quantized_within;
  // ... unless their module name (the name without ".weight") matches one of these.
  std::vector<std::string> excluded;
  // Modules sharing one global amax: members' last name component, e.g. {q_proj, k_proj, v_proj};
  // members are siblings (same parent module).
  std::vector<std::vector<std::string>> shared_amax;
  std::string data_suffix, scale_suffix, global_suffix;  // appended to the module name
  std::string placeholder_input_suffix;                  // written as F32 1.0 when not ""
  bool swizzled_scales = false;                          // false: linear [N, K/16]
  StoredGlobal stored_global = StoredGlobal::PROFILE;
  // The format quantizes 3-D [E, N, K] expert tensors expert by expert, each expert with its own
  // amax, stored stacked ([E, N, K/2], [E, N, K/16], global scale [E]). false: the format's layout
  // for them is not documented, and a selected 3-D tensor is refused rather than copied.
  bool stacked_experts = false;
  // The global scale of a 2-D weight is stored as [1] (compressed-tensors) rather than a scalar [].
  bool global_as_vector = false;
  // The entries the configuration files' ignore list gets for an unquantized tensor.
  std::vector<std::string> (*ignored)(const std::string& tensor, const io::TensorInfo& info);
  // hf_quant_config.json (nullptr: the format writes none), and config.json with its
  // quantization_config, for the ignore list.
  nlohmann::json (*hf_quant_config)(const std::vector<std::string>& ignore);
  nlohmann::json (*with_quantization_config)(nlohmann::json config, const std::vector<std::string>& ignore);
  // BMM-style 3-D expert parameters (Llama-4 `Llama4TextExperts`, GPT-OSS `GptOssExperts`,
  // docs/guides/checkpoints.md section 2.7): fnmatch patterns over the names of [E, in, out] parameters,
  // stored without ".weight" (empty: the format has no rule for them, and they are copied as any
  // unselected tensor) ...
  std::vector<std::string> bmm_experts = {};
  // ... the models they have that layout in (config.json's model_type, or text_config's) ...
  std::vector<std::string> bmm_model_types = {};
  // ... and whether the format writes them, in ModelOpt's layout (quantize_bmm_experts):
  // <p> U8 [E, in/2, out], <p>_weight_scale F8_E4M3 [E, in/16, out], <p>_weight_scale_2 F32 [];
  // false: a selected one is refused.
  bool bmm_layout = false;
};

// The suffixes of a BMM expert parameter's block scale and global scale (quantizer_attr_names).
inline constexpr const char* kBmmScaleSuffix = "_weight_scale";
inline constexpr const char* kBmmGlobalSuffix = "_weight_scale_2";

// Every format, one row each, in the order the command line lists them.
std::span<const CheckpointFormat> checkpoint_formats();

// The shape a format stores a global scale in, for a weight whose leading dimensions are `lead`
// ([] for a 2-D weight, [E] for 3-D experts).
std::vector<std::int64_t> global_shape(const CheckpointFormat& f, std::vector<std::int64_t> lead);

// The format of that name; nullptr when there is none (cli-level callers make it a usage error).
const CheckpointFormat* find_format(std::string_view name);
std::string supported_formats();  // "modelopt, compressed-tensors, miles"

// "model.layers.0.mlp.up_proj.weight" -> "model.layers.0.mlp.up_proj".
std::string module_of(const std::string& weight_name);

// Whether the format's name rules select this tensor, whatever its rank and dtype, with
// `extra_excludes` (--exclude) added.
bool is_selected(const CheckpointFormat& f, const std::string& tensor, const std::vector<std::string>& extra_excludes);
// Whether the format quantizes this tensor: selected, float, and 2-D (or 3-D [E, N, K] where the
// format has stacked_experts).
bool is_quantized(const CheckpointFormat& f, const std::string& tensor, const io::TensorInfo& info,
                  const std::vector<std::string>& extra_excludes);

// Whether the tensor is a BMM-style 3-D expert parameter the format's rules select: a 3-D float
// tensor whose name matches bmm_experts and is not excluded (the format's exclusions and
// `extra_excludes` over its name, which is its module name).
bool is_bmm_selected(const CheckpointFormat& f, const std::string& tensor, const io::TensorInfo& info,
                     const std::vector<std::string>& extra_excludes);
// The model type config.json (null when absent) declares: text_config.model_type where there is
// one (a multimodal wrapper, as Llama-4's "llama4" around "llama4_text"), else model_type; "" when
// neither is a string.
std::string model_type_of(const nlohmann::json& config);
// Whether that model type is one of the format's bmm_model_types.
bool is_bmm_model(const CheckpointFormat& f, const nlohmann::json& config);

// The key of the shared-amax group of a module: modules with the same key share one amax; a
// module in no group gets its own name.
std::string amax_group(const CheckpointFormat& f, const std::string& module);

// The stored tensors of one weight in format `f`: quantize_weight, with the global scale the format
// stores: the profile's exported one, or the format's own (StoredGlobal); none where neither has
// one (format A under a profile exporting none). A 3-D w [E, N, K] is quantized expert by expert
// (quantize_experts), each expert with its own amax: `amax` is not used, and the global scale is
// [E].
QuantizedWeight quantize_for_format(cases::Backend& b, const CheckpointFormat& f, const std::string& name, const io::Tensor& w,
                                    const std::string& profile, float amax);

}  // namespace nvfp4::checkpoint
