// The 16-point random Hadamard transform (docs/NUMERICS.md §3.19): the exact sum of the 16
// signed products, one rounding to binary32, then round-to-nearest-even to BF16.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "reference/constants.h"
#include "reference/tensor.h"

namespace nvfp4 {

// TransformerEngine's fixed sign vector: bit k set means s_k = -1 (applied to input index k).
using constants::kRhtDefaultMask;

// One 16-vector of BF16 values (as their exact binary32 values) to its 16 BF16 outputs (also as
// binary32): y[n] = RNbf16(RN(sum_k s_k * H16[k][n] * 0.25 * x[k])), H16[k][n] = (-1)^popcount(k&n).
// NaN anywhere -> 16 NaNs; +inf and -inf in one sum -> NaN; an exact zero is -0.0 only when every
// product is -0.0 (as any IEEE summation order gives), else +0.0.
std::array<float, 16> rht16(const std::array<float, 16>& x, std::uint16_t mask);

// One output of rht16 with its intermediates, for explanations: the exact sum, its binary32
// rounding, and the two BF16 results (canonical double rounding, and the single rounding of the
// exact sum that a kernel skipping the binary32 step would give).
struct Rht16Sum {
  std::string exact;      // the exact sum as a hexadecimal float ("0x1.004p-2"), or "NaN", "inf", ...
  float binary32 = 0;     // RN(exact)
  float bf16 = 0;         // RNbf16(RN(exact)): what rht16 returns
  float bf16_single = 0;  // RNbf16(exact)
};
Rht16Sum rht16_sum(const std::array<float, 16>& x, std::uint16_t mask, unsigned n);

// x [M, N] of BF16 values -> Y [N, M]: Y[c][16b + n] = rht16(x[16b .. 16b+15][c])[n], the transform
// along the row (token) dimension, stored transposed as the columnwise copy is. E_DIM16_M / E_DIM16_K
// when M or N is not a multiple of 16.
FloatMatrix rht(const FloatMatrix& x, std::uint16_t mask);

}  // namespace nvfp4
