// `nvfp4-verify cast-master-weights`: FP32 master weights -> NVFP4 2D (both directions) through
// the distributed flow of NUMERICS.md §3.17, with R simulated data-parallel ranks.
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/case.h"
#include "cases/registry.h"
#include "cli/backends.h"
#include "cli/commands.h"
#include "io/output_path.h"
#include "reference/partition.h"
#include "reference/profiles.h"

namespace nvfp4::cli {
namespace {

struct CastArgs {
  std::string input, output, cuts, backend = "reference", profile = "te";
  int ranks = 0;
};

// "c1,c2,..." -> integers; the checks against the weights (count, order, range) are rank_ranges'.
std::vector<std::int64_t> parse_cuts(const std::string& text) {
  std::vector<std::int64_t> cuts;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw UsageError(fmt::format("--cuts: '{}' is not an integer cut point (expected e.g. --cuts 129,4096)", item));
    cuts.push_back(v);
    pos = comma + 1;
  }
  return cuts;
}

void run(const CastArgs& a) {
  io::prepare_output_file(a.output, "--output");
  const io::File in = io::read_file(a.input);
  cases::Case c = cases::make_case("cast_master_weights");
  c.params.set("profile", a.profile);
  std::int64_t total = 0;
  for (const auto& [name, t] : in.tensors)  // every 2-D tensor is a master weight, in name order
    if (t.shape.size() == 2) {
      c.inputs[name] = t;
      total += t.numel();
    }
  if (c.inputs.empty()) throw UsageError(fmt::format("{}: holds no 2-D tensor (master weights are 2-D F32)", a.input));
  if (a.ranks < 1 || a.ranks > kMaxRanks)
    throw UsageError(fmt::format("--ranks {}: between 1 and {} ranks are supported", a.ranks, kMaxRanks));
  const std::vector<std::int64_t> cuts = a.cuts.empty() ? equal_cuts(total, a.ranks) : parse_cuts(a.cuts);
  rank_ranges(total, a.ranks, cuts);  // bad cut points fail here, before any work
  c.params.set("cuts", cuts);
  const cases::TensorMap result = make_backend(a.backend)->run(c);
  io::File out;
  out.tensors = result;
  out.metadata = {
      {"format", "nvfp4"},
      {"profile", a.profile},
      {"block", "2d"},
      {"direction", "both"},
      {"ranks", std::to_string(a.ranks)},
      {"cuts", fmt::format("{}", fmt::join(cuts, ","))},
      {"backend", a.backend},
      {"tool", "nvfp4-verify " NVFP4_VERSION},
  };
  io::write_file_atomic(a.output, out);
}

}  // namespace

void register_cast_master_weights(CLI::App& app) {
  auto a = std::make_shared<CastArgs>();
  CLI::App* cmd = app.add_subcommand("cast-master-weights",
                                     "Cast FP32 master weights to NVFP4 2D across R data-parallel ranks (NUMERICS.md §3.17)");
  cmd->add_option("--input", a->input, "safetensors file; every 2-D tensor is an F32 master weight")->required();
  cmd->add_option("--output", a->output, "output .safetensors: NAME.data, NAME.scale, NAME.amax, NAME.data_t, NAME.scale_t")
      ->required();
  cmd->add_option("--ranks", a->ranks, "number of data-parallel ranks R (1..64)")->required();
  cmd->add_option("--cuts", a->cuts,
                  "R-1 flat cut points between ranks in the concatenation of the weights (sorted by name), e.g. "
                  "129,4096; equal cuts make an empty rank (default: equal slices)");
  add_output_backend_option(cmd, a->backend);
  // Narrower than the registry, which allows every profile so that a case can test the flow's
  // E_UNSUPPORTED: the flow follows TE's kernels, and te is its only profile (validate_flow_profile).
  cmd->add_option("--profile", a->profile, "numerics profile: the flow is TE's distributed path")
      ->check(CLI::IsMember({"te"}))
      ->capture_default_str();
  cmd->callback([a] {
    try {
      run(*a);
    } catch (const cases::BackendUnavailable& e) {
      throw UsageError(fmt::format("--backend device: {}", e.what()));
    }
  });
}

}  // namespace nvfp4::cli
