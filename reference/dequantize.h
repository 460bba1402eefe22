// NVFP4 dequantization (NUMERICS.md §3.13) under a profile's dequantization chain.
#pragma once

#include "reference/profile.h"
#include "reference/tensor.h"

namespace nvfp4 {

// data [M, K/2], compact scales [roundup(M,128), roundup(K/16,4)], amax [1] (or [M] when
// row-scaled). Returns the binary32 products RN(f4(q) * factor); narrowing to BF16/FP16 is a
// separate RNE step (RNout). Columnwise data dequantizes the same way, as the tensor x^T.
// Single steps of dequantization replaced by others, for the fault catalogue (docs/spec/faults.md).
// A default record is the specification. Host only.
struct DequantizeSteps {
  float (*scale_decode)(std::uint8_t) = nullptr;  // f8(sf)
  bool encode_scale = false;                      // each block's factor RN(f8(sf) * S_enc), whatever the profile's DQ
};

FloatMatrix dequantize(const ByteMatrix& data, const ByteMatrix& scale, const FloatVector& amax, const Profile& profile,
                       const DequantizeSteps& steps = {});

}  // namespace nvfp4
