// Compact <-> GEMM-swizzled ("128x4") scale layouts (NUMERICS.md §2.4.2, §3.21).
#pragma once

#include "reference/tensor.h"

namespace nvfp4 {

// Both keep the [R', C'] shape of the compact matrix; the swizzled one holds its R'*C' bytes in
// swizzled order. E_SCALE_SHAPE unless R' is a multiple of 128 and C' a multiple of 4.
ByteMatrix swizzle_scales(const ByteMatrix& compact);
ByteMatrix unswizzle_scales(const ByteMatrix& swizzled);

}  // namespace nvfp4
