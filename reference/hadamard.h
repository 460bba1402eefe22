// The 16-point random Hadamard transform (docs/NUMERICS.md §3.19): the sum of the 16 signed
// products rounded to binary32 as [knob RHT] says, then round-to-nearest-even to BF16.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "reference/constants.h"
#include "reference/profile.h"
#include "reference/tensor.h"

namespace nvfp4 {

// TransformerEngine's fixed sign vector: bit k set means s_k = -1 (applied to input index k).
using constants::kRhtDefaultMask;

// The registry's names of the RHT values ("exact", "mma-sm90"), the `rht` operation's
// `accumulation`; nullopt for any other name.
std::optional<RhtSum> rht_sum_of(std::string_view name);
std::string_view rht_sum_name(RhtSum sum);

// One 16-vector of BF16 values (as their exact binary32 values) to its 16 BF16 outputs (also as
// binary32), H16[k][n] = (-1)^popcount(k&n), p_k = s_k * H16[k][n] * 0.25 * x[k]:
// - EXACT: y[n] = RNbf16(RN(sum_k p_k)); an exact zero is -0.0 only when every product is -0.0 (as
//   any IEEE summation order gives), else +0.0.
// - MMA_SM90: y[n] = RNbf16(fused_sum_toward_zero(p, 25)) (reference/mma.h), the products as
//   MMA-Sim normalises BF16 operands; a zero sum is +0.0.
// NaN anywhere -> 16 NaNs; +inf and -inf in one sum -> NaN.
std::array<float, 16> rht16(const std::array<float, 16>& x, std::uint16_t mask, RhtSum sum);

// One output of rht16 with its intermediates, for explanations: the exact sum, its binary32
// roundings, and the BF16 results (canonical double rounding, the single rounding of the exact sum
// that a kernel skipping the binary32 step would give, and the tensor-core model's).
struct Rht16Sum {
  std::string exact;      // the exact sum as a hexadecimal float ("0x1.004p-2"), or "NaN", "inf", ...
  float binary32 = 0;     // RN(exact)
  float bf16 = 0;         // RNbf16(RN(exact)): what rht16 returns with EXACT
  float bf16_single = 0;  // RNbf16(exact)
  float mma = 0;          // the fused sum rounded toward zero, MMA_SM90's binary32 value
  float bf16_mma = 0;     // RNbf16(mma): what rht16 returns with MMA_SM90
};
Rht16Sum rht16_sum(const std::array<float, 16>& x, std::uint16_t mask, unsigned n);

// x [M, N] of BF16 values -> Y [N, M]: Y[c][16b + n] = rht16(x[16b .. 16b+15][c])[n], the transform
// along the row (token) dimension, stored transposed as the columnwise copy is. E_DIM16_M / E_DIM16_K
// when M or N is not a multiple of 16.
FloatMatrix rht(const FloatMatrix& x, std::uint16_t mask, RhtSum sum);

}  // namespace nvfp4
