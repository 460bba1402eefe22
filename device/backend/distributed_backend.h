// The distributed-cast operations of the case model (cases/registry.h) on the device: the shard
// operations as one-task lists, and cast_master_weights with R ranks simulated on one GPU, each a
// RankFlow, with the all-reduce and the all-gather done by copies between them.
#pragma once

#include <cuda_runtime_api.h>

#include "cases/case.h"

namespace nvfp4::device {

cases::TensorMap amax_partial_case(const cases::Case& c, cudaStream_t s);
cases::TensorMap fused_scale_case(const cases::Case& c, cudaStream_t s);
cases::TensorMap partial_cast_case(const cases::Case& c, cudaStream_t s);
cases::TensorMap master_weights_case(const cases::Case& c, cudaStream_t s);

}  // namespace nvfp4::device
