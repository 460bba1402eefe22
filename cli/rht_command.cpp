// `nvfp4-verify rht`: the 16-point random Hadamard transform (docs/NUMERICS.md §3.19) of one BF16
// tensor x [M, N], written as tensor x_t [N, M].
#include <charconv>

#include <fmt/format.h>

#include "cases/registry.h"
#include "cli/commands.h"
#include "io/output_path.h"
#include "io/tensor_convert.h"

namespace nvfp4::cli {

std::uint64_t parse_rht_mask(const std::string& text) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const char* begin = text.data() + (hex ? 2 : 0);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), v, hex ? 16 : 10);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > 0xFFFF)
    throw UsageError(fmt::format("--rht-mask: '{}' is not a 16-bit mask (use e.g. 0xD7E8 or 0)", text));
  return v;
}

namespace {

struct RhtArgs {
  std::string input, tensor, output, mask = "0xD7E8";
};

void run(const RhtArgs& a) {
  io::prepare_output_file(a.output, "--output");
  const io::File in = io::read_file(a.input);
  if (a.tensor.empty() && in.tensors.size() != 1)
    throw UsageError(fmt::format("{}: holds {} tensors; choose one with --tensor", a.input, in.tensors.size()));
  const std::string name = a.tensor.empty() ? in.tensors.begin()->first : a.tensor;
  const auto it = in.tensors.find(name);
  if (it == in.tensors.end()) throw UsageError(fmt::format("{}: no tensor named '{}'", a.input, name));
  io::require_rank(it->second, 2, "rht", name);

  cases::Case c = cases::make_case("rht");
  c.params.set("rht_mask", parse_rht_mask(a.mask));
  c.inputs["x"] = it->second;
  cases::validate_case(c);
  io::File out;
  out.tensors = cases::operation("rht").reference(c);
  out.metadata = {{"format", "nvfp4-verify rht"},
                  {"rht_mask", fmt::format("0x{:04X}", c.params.unsigned_integer("rht_mask"))},
                  {"input_tensor", name},
                  {"tool", "nvfp4-verify " NVFP4_VERSION}};
  io::write_file_atomic(a.output, out);
}

}  // namespace

void register_rht(CLI::App& app) {
  auto a = std::make_shared<RhtArgs>();
  CLI::App* cmd = app.add_subcommand("rht", "16-point random Hadamard transform of a BF16 tensor x [M, N] -> x_t [N, M]");
  cmd->add_option("--input", a->input, "input .safetensors file")->required();
  cmd->add_option("--tensor", a->tensor, "tensor to transform when the file holds several");
  cmd->add_option("--output", a->output, "output .safetensors file (tensor x_t)")->required();
  cmd->add_option("--rht-mask", a->mask, "sign mask (16 bits; 0 = plain Hadamard)")->capture_default_str();
  cmd->callback([a] { run(*a); });
}

}  // namespace nvfp4::cli
