// --compare bitwise|ulp and --max-ulp N, shared by fuzz, gate and replay (docs/guides/gemm-ulp.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compare/compare_mode.h"

namespace nvfp4::cli {

struct CompareArgs {
  std::string compare = "bitwise";
  std::uint64_t max_ulp = 0;
  CLI::Option* max_ulp_option = nullptr;  // whether --max-ulp was given
};

void add_compare_options(CLI::App* cmd, CompareArgs& a);

// The mode the options ask for; UsageError for --max-ulp without --compare ulp.
compare::CompareMode compare_mode(const CompareArgs& a);

// The operations a campaign draws in this mode: bitwise, `ops` as given (empty: all); ulp, the
// GEMM operations, all of them when `ops` is empty. UsageError when `ops` names another operation,
// or when this build registers no GEMM operation.
std::vector<std::string> campaign_operations(const compare::CompareMode& mode, const std::vector<std::string>& ops);

}  // namespace nvfp4::cli
