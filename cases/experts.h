// 3-D expert weights [E, N, K] (MoE), quantized one expert at a time: each expert is its own
// tensor with its own amax (docs/NUMERICS.md §2.4.3), and every output gains a leading E.
#pragma once

#include <functional>

#include "cases/case.h"

namespace nvfp4::cases {

// With parameter `experts` false, quantize(c). Otherwise x must be [E, N, K] (E_RANK): each
// expert x[e] quantized by `quantize` as a 2-D case, the outputs stacked along a new first axis.
TensorMap run_per_expert(const Case& c, const std::function<TensorMap(const Case&)>& quantize);

// The 2-D case of expert e (x[e], parameter experts false), and expert e's slice of stacked
// outputs: what run_per_expert ran and stacked, for explanations of one expert.
Case expert_case(const Case& c, std::int64_t e);
TensorMap expert_outputs(const TensorMap& stacked, std::int64_t e);

}  // namespace nvfp4::cases
