// How two backends' outputs are compared: bit for bit (the contract), or, for GEMM outputs only,
// by each element's distance in ULPs to EXACT (`--compare ulp`, docs/guides/gemm-ulp.md), because no
// vendor GEMM rounds like EXACT (NUMERICS.md §3.20.2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvfp4::compare {

struct CompareMode {
  bool ulp = false;
  std::optional<std::uint64_t> max_ulp;  // ulp: a case passes when every element is this close (none: always)
};

// Whether an operation's outputs are GEMM outputs, the only ones compared with a tolerance.
bool is_gemm_operation(std::string_view op);

// The registered GEMM operations, in registry order.
std::vector<std::string> gemm_operation_names();

// `mode` for a case of `op`: bitwise for an operation without GEMM outputs.
CompareMode compare_mode_for(const CompareMode& mode, std::string_view op);

}  // namespace nvfp4::compare
