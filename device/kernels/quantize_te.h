// launch_quantize()'s path for the launch training and inference run most: only the rowwise copy,
// 1x16 blocks, under profile te's knobs (device/kernels/quantize_rows.cu). It holds blocks in
// registers and encodes round-to-nearest by binary32 arithmetic (device/kernels/e2m1_arith.cuh);
// quantize.cu's general kernel covers the rest. The scale padding is the caller's.
#pragma once

#include <cstdint>

#include "device/kernels/launch.h"

namespace nvfp4::device {

// te's knobs, 1x16 blocks, only the rowwise copy, and fewer than 2^32 blocks.
bool quantize_te_rows_applies(std::int64_t M, std::int64_t K, const QuantizeParams& params, const QuantizeOutputs& out);

void launch_quantize_te_rows(const void* x, InputType type, std::int64_t M, std::int64_t K, const QuantizeParams& params,
                             const QuantizeOutputs& out, cudaStream_t stream);

}  // namespace nvfp4::device
