// The grouped scale layout (docs/NUMERICS.md §2.4.3) on the device: each group's compact block
// cut out on the GPU and put through the swizzle kernels, the buffers concatenated.
#pragma once

#include <cuda_runtime_api.h>

#include "cases/case.h"

namespace nvfp4::device {

// grouped_swizzle (swizzle = true) and grouped_unswizzle cases.
cases::TensorMap grouped_layout_case(const cases::Case& c, cudaStream_t s, bool swizzle);

}  // namespace nvfp4::device
