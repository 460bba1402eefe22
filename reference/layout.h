// Storage index arithmetic of NUMERICS.md §2.3-§2.4, shared by the reference and the kernels.
#pragma once

#include "reference/constants.h"

namespace nvfp4 {

NVFP4_HD std::int64_t round_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b * b; }

// Compact scale matrix of a [rows, cols] tensor quantized along cols in blocks of 16 (§2.4.1).
NVFP4_HD std::int64_t scale_rows(std::int64_t rows) { return round_up(rows, constants::kScaleRowAlign); }
NVFP4_HD std::int64_t scale_cols(std::int64_t cols) { return round_up(cols / constants::kBlock, constants::kScaleColAlign); }

// Byte offset of compact entry (r, c) in the GEMM-swizzled "128x4" layout (§2.4.2), for a
// compact matrix with padded_cols (a multiple of 4) columns.
NVFP4_HD std::int64_t swizzled_offset(std::int64_t r, std::int64_t c, std::int64_t padded_cols) {
  return ((r / 128) * (padded_cols / 4) + (c / 4)) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
}

}  // namespace nvfp4
