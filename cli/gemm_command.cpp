// `nvfp4-verify gemm`: the NVFP4 GEMM (docs/NUMERICS.md §3.20) of two files as `quantize` writes
// them: D = alpha * A * B^T (+ beta * C) (+ bias), both operands K-major, B stored [N, K], in EXACT
// mode or an MMA mode (--accumulation, §3.20.6).
#include <fmt/format.h>

#include "cases/registry.h"
#include "cli/backends.h"
#include "cli/commands.h"
#include "cli/registry_choices.h"
#include "io/output_path.h"
#include "io/tensor_convert.h"
#include "reference/scale_layout.h"

namespace nvfp4::cli {
namespace {

struct GemmArgs {
  std::string a, b, output, alpha, beta, c, bias, out_dtype = "f32", accumulation = "exact", backend = "reference";
};

const io::Tensor& require(const io::File& f, const std::string& path, const std::string& name) {
  const auto it = f.tensors.find(name);
  if (it == f.tensors.end())
    throw UsageError(fmt::format("{}: missing tensor '{}' (gemm reads the rowwise copy: data, scale, amax)", path, name));
  return it->second;
}

bool swizzled(const io::File& f) {
  const auto it = f.metadata.find("scale_layout");
  return it != f.metadata.end() && it->second == "swizzled";
}

// The only tensor of a file (C, bias), or the one named `name`.
io::Tensor only_tensor(const std::string& path, const char* name) {
  const io::File f = io::read_file(path);
  if (const auto it = f.tensors.find(name); it != f.tensors.end()) return it->second;
  if (f.tensors.size() != 1)
    throw UsageError(fmt::format("{}: holds {} tensors; name the one to use '{}'", path, f.tensors.size(), name));
  return f.tensors.begin()->second;
}

void run(const GemmArgs& a) {
  io::prepare_output_file(a.output, "--output");
  const io::File qa = io::read_file(a.a), qb = io::read_file(a.b);
  cases::Case c = cases::make_case("gemm");
  // One scale layout for both operands: a swizzled operand beside a compact one is unswizzled.
  const bool both_swizzled = swizzled(qa) && swizzled(qb);
  c.params.set("scale_layout", std::string(both_swizzled ? "swizzled" : "compact"));
  for (const auto& [side, file, path] : {std::tuple{"a", &qa, a.a}, std::tuple{"b", &qb, a.b}}) {
    const std::string s = side;
    c.inputs[s + "_data"] = require(*file, path, "data");
    io::Tensor scale = require(*file, path, "scale");
    if (swizzled(*file) && !both_swizzled)
      scale = io::from_byte_matrix(unswizzle_scales(io::to_byte_matrix(scale, "gemm", s + "_scale")));
    c.inputs[s + "_scale"] = scale;
    c.inputs[s + "_amax"] = require(*file, path, "amax");
  }
  if (!a.alpha.empty()) c.params.set("alpha", cases::F32Bits{bits_of(parse_f32("--alpha", a.alpha))});
  if (!a.beta.empty()) {
    if (a.c.empty()) throw UsageError("--beta needs --c C.safetensors");
    c.params.set("beta", cases::F32Bits{bits_of(parse_f32("--beta", a.beta))});
    c.inputs["c"] = only_tensor(a.c, "c");
  } else if (!a.c.empty()) {
    throw UsageError("--c needs --beta");
  }
  if (!a.bias.empty()) {
    c.params.set("with_bias", true);
    c.inputs["bias"] = only_tensor(a.bias, "bias");
  }
  c.params.set("output_dtype", registry_value("gemm", "output_dtype", a.out_dtype));
  c.params.set("accumulation", a.accumulation);
  // Row-scaled operands (one amax per row) take the post-scale path of §3.20.4.
  c.params.set("row_scaled", c.inputs.at("a_amax").numel() > 1 || c.inputs.at("b_amax").numel() > 1);
  cases::validate_case(c);

  io::File out;
  out.tensors["d"] = make_backend(a.backend)->run(c).at("d");
  out.metadata = {
      {"format", "nvfp4-verify gemm"},        {"mode", a.accumulation}, {"backend", a.backend}, {"a", a.a}, {"b", a.b},
      {"tool", "nvfp4-verify " NVFP4_VERSION}};
  io::write_file_atomic(a.output, out);
}

}  // namespace

void register_gemm(CLI::App& app) {
  auto a = std::make_shared<GemmArgs>();
  CLI::App* cmd =
      app.add_subcommand("gemm",
                         "NVFP4 GEMM: d = alpha * A * B^T (+ beta * C) (+ bias), one rounding of the exact result (EXACT) or "
                         "as Blackwell's MMA instructions chain it (--accumulation mma-sm100|mma-sm120)");
  cmd->add_option("--a", a->a, "operand A [M, K]: a file as `quantize` writes it (data, scale, amax)")->required();
  cmd->add_option("--b", a->b, "operand B [N, K], K-major like A")->required();
  cmd->add_option("--output", a->output, "output .safetensors file (tensor d [M, N])")->required();
  cmd->add_option("--alpha", a->alpha, "alpha itself (default: from the two amaxes, NUMERICS.md §3.20.1)");
  cmd->add_option("--beta", a->beta, "beta, with --c");
  cmd->add_option("--c", a->c, "C [M, N] F32 (.safetensors, its only tensor or one named c)");
  cmd->add_option("--bias", a->bias, "bias [N] F32 (.safetensors, its only tensor or one named bias)");
  cmd->add_option("--out-dtype", a->out_dtype, "output dtype")
      ->check(CLI::IsMember(registry_choices("gemm", "output_dtype", Spelling::kLowerCase)))
      ->capture_default_str();
  cmd->add_option("--accumulation", a->accumulation,
                  "exact, or the modelled MMA instruction chained along K (NUMERICS.md §3.20.6)")
      ->check(CLI::IsMember(registry_choices("gemm", "accumulation")))
      ->capture_default_str();
  add_output_backend_option(cmd, a->backend);
  cmd->callback([a] { run(*a); });
}

}  // namespace nvfp4::cli
