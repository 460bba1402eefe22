// The rowwise-only path of device::quantize() under profile te's knobs (device/quantize_rows.cu).
#pragma once

#include <cstdint>

#include "device/kernels.h"

namespace nvfp4::device {

// Whether quantize() takes the path below: te's knobs, round-to-nearest, 1x16 blocks, only the
// rowwise copy, and fewer than 2^32 blocks.
bool quantize_rows_te_applies(std::int64_t M, std::int64_t K, const QuantizeParams& params, const QuantizeOutputs& out);

// quantize() for that case; the scale padding is the caller's.
void quantize_rows_te(const void* x, InputType type, std::int64_t M, std::int64_t K, const QuantizeParams& params,
                      const QuantizeOutputs& out, cudaStream_t stream);

}  // namespace nvfp4::device
