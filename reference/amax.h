// Global, block, row and column amax (NUMERICS.md §3.1-§3.3) under a profile's NaN rule.
#pragma once

#include "reference/profile.h"
#include "reference/tensor.h"

namespace nvfp4 {

float amax_global(const FloatMatrix& x, AmaxRule rule);
FloatVector amax_rows(const FloatMatrix& x, AmaxRule rule);  // [M]
FloatVector amax_cols(const FloatMatrix& x, AmaxRule rule);  // [K]

// Block amax matrices, one entry per block: 1x16 -> [M, K/16], 16x1 -> [M/16, K],
// 16x16 -> [M/16, K/16]. Dimensions must be multiples of 16 along the blocked axes.
FloatMatrix amax_blocks_1x16(const FloatMatrix& x, AmaxRule rule);
FloatMatrix amax_blocks_16x1(const FloatMatrix& x, AmaxRule rule);
FloatMatrix amax_tiles_16x16(const FloatMatrix& x, AmaxRule rule);

}  // namespace nvfp4
