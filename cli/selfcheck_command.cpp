// `nvfp4-verify selfcheck`: verifies the worked examples of NUMERICS.md §6 and quantizes a
// built-in example under every profile, counting the blocks that differ from `te`.
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "cases/recipe.h"
#include "cli/commands.h"
#include "reference/half_float.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "reference/worked_examples.h"

namespace nvfp4::cli {
namespace {

struct SelfcheckArgs {
  std::size_t size = 1024;
  std::uint64_t seed = 1;
};

int check_worked_examples() {
  std::map<std::string, std::pair<int, int>> per_section;  // section -> (checks, passed)
  std::vector<std::string> failures;
  for (const WorkedExample& e : worked_examples()) {
    const std::uint32_t got = e.compute();
    auto& [checks, passed] = per_section[e.section];
    ++checks;
    if (got == e.expected)
      ++passed;
    else
      failures.push_back(fmt::format("  FAIL §{}: {}: expected 0x{:X}, got 0x{:X}", e.section, e.name, e.expected, got));
  }
  fmt::print("Worked examples of NUMERICS.md §6\n  {:<24} {:>6} {:>6}\n", "section", "checks", "passed");
  int total = 0, passed_total = 0;
  for (const auto& [section, counts] : per_section) {
    fmt::print("  {:<24} {:>6} {:>6}\n", section, counts.first, counts.second);
    total += counts.first;
    passed_total += counts.second;
  }
  for (const std::string& f : failures) fmt::print("{}\n", f);
  fmt::print("  {:<24} {:>6} {:>6}\n\n", "total", total, passed_total);
  return total - passed_total;
}

struct BlockDiff {
  std::size_t scales = 0, codes = 0;  // blocks whose scale byte / any code differs
};

BlockDiff diff_blocks(const QuantizedTensor& a, const QuantizedTensor& b) {
  BlockDiff d;
  for (std::size_t r = 0; r < a.data.shape(0); ++r)
    for (std::size_t j = 0; j < a.data.shape(1) / 8; ++j) {
      d.scales += a.scale(r, j) != b.scale(r, j);
      bool codes = false;
      for (std::size_t k = 0; k < 8; ++k) codes |= a.data(r, 8 * j + k) != b.data(r, 8 * j + k);
      d.codes += codes;
    }
  return d;
}

void compare_profiles(const SelfcheckArgs& a) {
  // BF16-exact values, as models quantize: block amaxes with 8 significant bits land near E4M3
  // rounding ties far more often than FP32 values, which is where the profiles' orders differ.
  // Whether they do depends on the global amax, so the row-scaled run (one global amax per
  // row) shows the differences the 1D run (one global amax) may miss.
  FloatMatrix x = cases::randn_matrix(a.size, a.size, a.seed);
  for (float& v : x) v = bf16_to_float(float_to_bf16(v));
  fmt::print(
      "Profiles on the built-in example: {0}x{0} approximately-randn BF16 (seed {1}), {2} blocks of 1x16;\n"
      "blocks that differ from te (scale byte / any code), per-tensor and row-scaled\n",
      a.size, a.seed, a.size * a.size / 16);
  fmt::print("  {:<14} {:>12} {:>12} {:>14} {:>14} {:>8}\n", "profile", "1D scales", "1D codes", "row-sc scales", "row-sc codes",
             "ms");
  std::optional<QuantizedTensor> te, te_rows;
  for (const NamedProfile& p : all_profiles()) {
    QuantizeOptions o;
    o.profile = p.knobs;
    const auto t0 = std::chrono::steady_clock::now();
    const QuantizedTensor q = *quantize(x, o).rowwise;
    o.row_scaled = true;
    const QuantizedTensor q_rows = *quantize(x, o).rowwise;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!te) te = q, te_rows = q_rows;
    const BlockDiff d = diff_blocks(*te, q), d_rows = diff_blocks(*te_rows, q_rows);
    fmt::print("  {:<14} {:>12} {:>12} {:>14} {:>14} {:>8.0f}\n", p.name, d.scales, d.codes, d_rows.scales, d_rows.codes, ms);
  }
  fmt::print("\n");
}

}  // namespace

void register_selfcheck(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SelfcheckArgs>();
  CLI::App* cmd =
      app.add_subcommand("selfcheck", "Verify NUMERICS.md's worked examples and compare every profile on a built-in example");
  cmd->add_option("--size", a->size, "rows and columns of the built-in example (a multiple of 16)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "seed of the built-in example")->capture_default_str();
  cmd->callback([a, &exit_code] {
    if (a->size % 16) throw UsageError(fmt::format("--size {} is not a multiple of 16", a->size));
    const int failed = check_worked_examples();
    compare_profiles(*a);
    fmt::print("selfcheck: {} worked-example checks failed\n", failed);
    exit_code = failed ? 1 : 0;
  });
}

}  // namespace nvfp4::cli
