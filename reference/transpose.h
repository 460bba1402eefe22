// Nibble transpose of packed data and the 2D scale transpose (NUMERICS.md §3.14).
#pragma once

#include "reference/tensor.h"

namespace nvfp4 {

// [M, K/2] -> [K, M/2]; E_EVEN if M is odd.
ByteMatrix transpose_packed(const ByteMatrix& in);

// Rowwise scales of a 2D-quantized [M, K] tensor -> its columnwise scales; reads only the first
// row of each 16-row group, with the input's padded pitch.
ByteMatrix transpose_scales_2d(const ByteMatrix& in, std::size_t M, std::size_t K);

}  // namespace nvfp4
