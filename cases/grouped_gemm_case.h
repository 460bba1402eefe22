// The grouped GEMM of docs/NUMERICS.md §3.20.5 as what it is defined to be: G independent EXACT
// GEMMs. A grouped_gemm case splits into one gemm case per group (operands cut from the grouped
// tensors, scales from the grouped layout of §2.4.3, each group's own amaxes); every backend
// runs those with its own gemm and the outputs are put back together.
#pragma once

#include <functional>
#include <vector>

#include "cases/case.h"

namespace nvfp4::cases {

// One gemm case per group, in group order (M-grouped: empty groups included, with no rows).
// Throws nvfp4::Error (E_GROUPS, E_DATA_SHAPE, E_SCALE_SHAPE, E_AMAX_SHAPE, E_UNSUPPORTED).
std::vector<Case> grouped_gemm_groups(const Case& c);

// The grouped output d from the groups' outputs: M-grouped [T, N] (rows in group order),
// K-grouped [G, M, N].
TensorMap assemble_grouped_gemm(const Case& c, const std::vector<TensorMap>& group_outputs);

// Split, run each group with `gemm`, assemble.
TensorMap run_grouped_gemm(const Case& c, const std::function<TensorMap(const Case&)>& gemm);

}  // namespace nvfp4::cases
