// `nvfp4-verify dequantize`: the inverse of `quantize` under a profile's dequantization chain.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/registry_choices.h"
#include "io/output_path.h"
#include "io/tensor_convert.h"
#include "reference/dequantize.h"
#include "reference/profiles.h"
#include "reference/scale_layout.h"

namespace nvfp4::cli {
namespace {

struct DequantizeArgs {
  std::string input, output, dtype = "f32", profile;
};

const io::Tensor& require(const io::File& f, const std::string& path, const std::string& name) {
  const auto it = f.tensors.find(name);
  if (it == f.tensors.end()) throw UsageError(fmt::format("{}: missing tensor '{}'", path, name));
  return it->second;
}

// Dequantizes one direction: tensors `data<suffix>`, `scale<suffix>`, `amax<suffix>`.
FloatMatrix dequantize_direction(const io::File& f, const DequantizeArgs& a, const std::string& suffix, const Profile& profile,
                                 bool swizzled) {
  const ByteMatrix data = io::to_byte_matrix(require(f, a.input, "data" + suffix), "dequantize", "data" + suffix);
  ByteMatrix scale = io::to_byte_matrix(require(f, a.input, "scale" + suffix), "dequantize", "scale" + suffix);
  const FloatVector amax = io::to_float_vector(require(f, a.input, "amax" + suffix), "dequantize", "amax" + suffix);
  if (swizzled) scale = unswizzle_scales(scale);
  return dequantize(data, scale, amax, profile);
}

void run(const DequantizeArgs& a) {
  io::prepare_output_file(a.output, "--output");
  const io::File in = io::read_file(a.input);
  // The profile recorded by `quantize` is the default; --profile overrides it.
  std::string profile_name = a.profile;
  if (profile_name.empty()) {
    const auto it = in.metadata.find("profile");
    profile_name = it == in.metadata.end() ? std::string(default_profile().name) : it->second;
  }
  const NamedProfile* profile = find_profile(profile_name);
  if (!profile)
    throw UsageError(fmt::format("{}: unknown profile '{}' in metadata (known: {})", a.input, profile_name, profile_names(", ")));
  const auto layout = in.metadata.find("scale_layout");
  const bool swizzled = layout != in.metadata.end() && layout->second == "swizzled";
  const io::FloatType type =
      io::float_type_of(*io::dtype_from_name(registry_value("dequantize", "output_dtype", a.dtype)), "dequantize");

  const bool rowwise = in.tensors.count("data") != 0, columnwise = in.tensors.count("data_t") != 0;
  if (!rowwise && !columnwise) throw UsageError(fmt::format("{}: holds neither 'data' nor 'data_t'", a.input));
  io::File out;
  if (rowwise) out.tensors["x"] = io::from_float_matrix(dequantize_direction(in, a, "", profile->knobs, swizzled), type);
  if (columnwise) out.tensors["x_t"] = io::from_float_matrix(dequantize_direction(in, a, "_t", profile->knobs, swizzled), type);
  out.metadata = {{"profile", profile_name}, {"dtype", a.dtype}, {"tool", "nvfp4-verify " NVFP4_VERSION}};
  io::write_file_atomic(a.output, out);
}

}  // namespace

void register_dequantize(CLI::App& app) {
  auto a = std::make_shared<DequantizeArgs>();
  CLI::App* cmd = app.add_subcommand("dequantize", "Dequantize the output of `quantize` (x from data, x_t from data_t)");
  cmd->add_option("--input", a->input, "quantized .safetensors file")->required();
  cmd->add_option("--output", a->output, "output .safetensors file")->required();
  cmd->add_option("--dtype", a->dtype, "output dtype")
      ->check(CLI::IsMember(registry_choices("dequantize", "output_dtype", Spelling::kLowerCase)))
      ->capture_default_str();
  cmd->add_option("--profile", a->profile, "dequantization profile (default: the one recorded in the file, else te)")
      ->check(CLI::IsMember(registry_choices("dequantize", "profile")));
  cmd->callback([a] { run(*a); });
}

}  // namespace nvfp4::cli
