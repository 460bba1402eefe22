// NVFP4 dequantization (NUMERICS.md §3.13) under a profile's dequantization chain.
#pragma once

#include "reference/profile.h"
#include "reference/tensor.h"

namespace nvfp4 {

// data [M, K/2], compact scales [roundup(M,128), roundup(K/16,4)], amax [1] (or [M] when
// row-scaled). Returns the binary32 products RN(f4(q) * factor); narrowing to BF16/FP16 is a
// separate RNE step (RNout). Columnwise data dequantizes the same way, as the tensor x^T.
FloatMatrix dequantize(const ByteMatrix& data, const ByteMatrix& scale, const FloatVector& amax, const Profile& profile);

}  // namespace nvfp4
