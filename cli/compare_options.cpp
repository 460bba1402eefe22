#include "cli/compare_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"

namespace nvfp4::cli {

void add_compare_options(CLI::App* cmd, CompareArgs& a) {
  cmd->add_option("--compare", a.compare,
                  "bitwise (the contract), or ulp: GEMM outputs by their distance in ULPs to EXACT, with a histogram "
                  "(gemm and grouped_gemm only)")
      ->check(CLI::IsMember({"bitwise", "ulp"}))  // how two backends' outputs compare: no registry parameter
      ->capture_default_str();
  a.max_ulp_option = cmd->add_option("--max-ulp", a.max_ulp,
                                     "with --compare ulp: a case passes when every element is within N ULPs "
                                     "(default: no bound, every case passes and the run only reports)");
}

compare::CompareMode compare_mode(const CompareArgs& a) {
  compare::CompareMode mode;
  mode.ulp = a.compare == "ulp";
  const bool bound = a.max_ulp_option && a.max_ulp_option->count() > 0;
  if (bound && !mode.ulp) throw UsageError("--max-ulp needs --compare ulp (the bitwise comparison has no tolerance)");
  if (bound) mode.max_ulp = a.max_ulp;
  return mode;
}

std::vector<std::string> campaign_operations(const compare::CompareMode& mode, const std::vector<std::string>& ops) {
  if (!mode.ulp) return ops;
  const std::vector<std::string> gemm = compare::gemm_operation_names();
  if (gemm.empty()) throw UsageError("--compare ulp: this build registers no GEMM operation (gemm, grouped_gemm)");
  for (const std::string& op : ops)
    if (!compare::is_gemm_operation(op))
      throw UsageError(
          fmt::format("--compare ulp compares GEMM outputs only ({}); --ops names '{}': compare it bitwise "
                      "in a campaign of its own",
                      fmt::join(gemm, ", "), op));
  return ops.empty() ? gemm : ops;
}

}  // namespace nvfp4::cli
