// `nvfp4-verify quantize`: one 2-D tensor in, the NVFP4 tensors of NUMERICS.md §2 out.
#include <charconv>
#include <cstdlib>
#include <ranges>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/quantize_case.h"
#include "cases/registry.h"
#include "cli/commands.h"
#include "cli/registry_choices.h"
#include "io/output_path.h"
#include "io/tensor_convert.h"
#include "reference/arith.h"

namespace nvfp4::cli {
namespace {

struct QuantizeArgs {
  std::string input, tensor, output, profile = "te", block = "1d", direction = "rowwise", amax, scale_layout = "compact",
                                     rounding = "nearest", rht_mask = "0xD7E8";
  bool row_scaled = false, rht = false, experts = false;
  std::uint64_t seed = 0, offset = 0;
};

// The tensor to quantize: --tensor NAME, or the file's only tensor.
const io::Tensor& pick_tensor(const io::File& file, const QuantizeArgs& a, std::string& name) {
  if (!a.tensor.empty()) {
    const auto it = file.tensors.find(a.tensor);
    if (it == file.tensors.end())
      throw UsageError(fmt::format("{}: no tensor named '{}' (it holds: {})", a.input, a.tensor,
                                   fmt::join(std::views::keys(file.tensors), ", ")));
    name = a.tensor;
    return it->second;
  }
  if (file.tensors.size() != 1)
    throw UsageError(fmt::format("{}: holds {} tensors ({}); choose one with --tensor", a.input, file.tensors.size(),
                                 fmt::join(std::views::keys(file.tensors), ", ")));
  name = file.tensors.begin()->first;
  return file.tensors.begin()->second;
}

void run(const QuantizeArgs& a) {
  io::prepare_output_file(a.output, "--output");
  const io::File in = io::read_file(a.input);
  std::string name;
  const io::Tensor& t = pick_tensor(in, a, name);
  io::require_rank(t, a.experts ? 3 : 2, "quantize", name);

  // The case the registry's quantize runs: the same options as every backend reads.
  cases::Case c = cases::make_case("quantize");
  c.params.set("profile", a.profile);
  c.params.set("block", a.block);
  c.params.set("direction", a.direction);
  c.params.set("row_scaled", a.row_scaled);
  c.params.set("experts", a.experts);
  if (!a.amax.empty()) c.params.set("amax", cases::F32Bits{bits_of(parse_f32("--amax", a.amax))});
  c.params.set("scale_layout", a.scale_layout);
  c.params.set("rounding", a.rounding);
  c.params.set("seed", a.seed);
  c.params.set("offset", a.offset);
  c.params.set("rht", a.rht);
  c.params.set("rht_mask", parse_rht_mask(a.rht_mask));
  c.inputs["x"] = t;
  cases::validate_case(c);
  const QuantizeOptions o = cases::quantize_options(c);

  io::File out;
  out.tensors = cases::operation("quantize").reference(c);
  out.metadata = {
      {"format", "nvfp4"},
      {"profile", a.profile},
      {"block", a.block},
      {"direction", a.direction},
      {"row_scaled", a.row_scaled ? "true" : "false"},
      {"experts", a.experts ? "true" : "false"},
      {"amax_override", o.amax ? fmt::format("0x{:08X}", bits_of(*o.amax)) : "none"},
      {"scale_layout", a.scale_layout},
      {"rounding", a.rounding},
      {"seed", std::to_string(a.seed)},
      {"offset", std::to_string(a.offset)},
      {"rht", o.rht_mask ? fmt::format("0x{:04X}", *o.rht_mask) : "none"},
      {"input_tensor", name},
      {"input_dtype", std::string(io::dtype_name(t.dtype))},
      {"input_shape", fmt::format("[{}]", fmt::join(t.shape, ", "))},
      {"tool", "nvfp4-verify " NVFP4_VERSION},
  };
  io::write_file_atomic(a.output, out);
}

}  // namespace

float parse_f32(std::string_view option, const std::string& text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    std::uint32_t bits = 0;
    const auto [end, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), bits, 16);
    if (ec == std::errc() && end == text.data() + text.size() && text.size() <= 10) return float_of(bits);
  } else {
    char* end = nullptr;
    const float v = std::strtof(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size()) return v;
  }
  throw UsageError(fmt::format("{}: '{}' is not a float (use e.g. 2.5, inf, nan or 0x40200000)", option, text));
}

void register_quantize(CLI::App& app) {
  auto a = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand("quantize", "Quantize one 2-D F32/BF16/F16 tensor to NVFP4");
  cmd->add_option("--input", a->input, "input .safetensors file")->required();
  cmd->add_option("--tensor", a->tensor, "tensor to quantize when the file holds several");
  cmd->add_option("--output", a->output, "output .safetensors file")->required();
  cmd->add_option("--profile", a->profile, "numerics profile (see `nvfp4-verify profiles`)")
      ->check(CLI::IsMember(registry_choices("quantize", "profile")))
      ->capture_default_str();
  cmd->add_option("--block", a->block, "1d: 1x16 blocks; 2d: 16x16 tiles")
      ->check(CLI::IsMember(registry_choices("quantize", "block")))
      ->capture_default_str();
  cmd->add_option("--direction", a->direction, "rowwise, columnwise (x^T, stored transposed) or both")
      ->check(CLI::IsMember(registry_choices("quantize", "direction")))
      ->capture_default_str();
  cmd->add_flag("--row-scaled", a->row_scaled, "per-row global amax (per-column for the columnwise copy)");
  cmd->add_flag("--experts", a->experts, "x is [E, N, K] expert weights: each expert quantized alone with its own amax");
  cmd->add_option("--amax", a->amax, "global amax to use instead of the computed one (float or 0x bit pattern)");
  cmd->add_option("--scale-layout", a->scale_layout, "compact or swizzled (cuBLASLt 128x4)")
      ->check(CLI::IsMember(registry_choices("quantize", "scale_layout")))
      ->capture_default_str();
  cmd->add_option("--rounding", a->rounding, "E2M1 rounding: nearest, or stochastic (canonical Philox bits)")
      ->check(CLI::IsMember(registry_choices("quantize", "rounding")))
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "stochastic rounding: Philox key (u64)")->capture_default_str();
  cmd->add_option("--offset", a->offset, "stochastic rounding: Philox counter offset (u64)")->capture_default_str();
  cmd->add_flag("--rht", a->rht, "columnwise copy of the 16-point random Hadamard transform of x (BF16 input, 1d)");
  cmd->add_option("--rht-mask", a->rht_mask, "rht sign mask (16 bits; 0 = plain Hadamard)")->capture_default_str();
  cmd->callback([a] { run(*a); });
}

}  // namespace nvfp4::cli
