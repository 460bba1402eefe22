// An NVFP4 checkpoint format as data (docs/checkpoints.md): which weights it quantizes, which of
// them share one global amax, the names it stores them under and its configuration files. Only
// format A (ModelOpt's HF export) exists so far; format B needs a profile the project lacks
// (docs/checkpoints.md section 3.6).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace nvfp4::checkpoint {

struct CheckpointFormat {
  std::string name;             // "modelopt"
  std::string default_profile;  // the profile whose numerics the format's producer has
  // fnmatch patterns over tensor names of the weights quantized (2-D, float) ...
  std::vector<std::string> quantized;
  // ... unless their module name (the name without ".weight") matches one of these.
  std::vector<std::string> excluded;
  // Modules sharing one global amax: members' last name component, e.g. {q_proj, k_proj, v_proj};
  // members are siblings (same parent module).
  std::vector<std::vector<std::string>> shared_amax;
  std::string data_suffix, scale_suffix, global_suffix;  // appended to the module name
  bool swizzled_scales = false;                          // false: linear [N, K/16]
};

const CheckpointFormat& modelopt_format();

// The format of that name; cli-level callers turn nullopt into a usage error.
std::optional<CheckpointFormat> find_format(const std::string& name);
std::string supported_formats();  // "modelopt"

// "model.layers.0.mlp.up_proj.weight" -> "model.layers.0.mlp.up_proj".
std::string module_of(const std::string& weight_name);

// Whether the format quantizes this tensor, with `extra_excludes` (--exclude) added.
bool is_quantized(const CheckpointFormat& f, const std::string& tensor, const io::TensorInfo& info,
                  const std::vector<std::string>& extra_excludes);

// The key of the shared-amax group of a module: modules with the same key share one amax; a
// module in no group gets its own name.
std::string amax_group(const CheckpointFormat& f, const std::string& module);

// hf_quant_config.json, and config.json with its quantization_config (docs/checkpoints.md
// section 2.4). `exclude_modules`: the 2-D linears left unquantized.
nlohmann::json hf_quant_config(const std::vector<std::string>& exclude_modules);
nlohmann::json with_quantization_config(nlohmann::json config, const std::vector<std::string>& exclude_modules);

}  // namespace nvfp4::checkpoint
