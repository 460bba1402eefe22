// The distributed-cast operations of the case model (fuzz/case.h) on the device: the shard
// operations as one-task lists, and cast_master_weights with R ranks simulated on one GPU, each a
// RankFlow, with the all-reduce and the all-gather done by copies between them.
#pragma once

#include <cuda_runtime_api.h>

#include "fuzz/case.h"

namespace nvfp4::device {

// kAmaxPartial, kFusedScale, kPartialCast or kCastMasterWeights.
TensorMap run_distributed(const Case& c, cudaStream_t stream);

}  // namespace nvfp4::device
