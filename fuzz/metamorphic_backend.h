// A CPU backend that computes every operation through a metamorphic relation instead of the
// reference's own route, so that a machine without a GPU still compares two computations:
//  * quantize(x) rowwise == columnwise copy of quantize(x^T), and vice versa (1D, 2D, row-scaled);
//  * dequantize is row-local: 16-row slices dequantized separately and concatenated;
//  * amax over rows/columns/blocks == the transposed amax of x^T; global amax == max of row amaxes;
//  * swizzle/unswizzle are band-local: 128-row bands processed separately and concatenated;
//  * the packed transpose goes through an unpacked nibble matrix and xtensor's transpose;
//  * the 2D scale transpose scatters where the reference gathers;
//  * partial amax and partial cast are computed on the shard's two halves;
//  * the fused scale is computed one tile row at a time;
//  * cast_master_weights across ranks is quantize_2d of each whole weight (§3.17's property).
#pragma once

#include "fuzz/case.h"

namespace nvfp4 {

class MetamorphicBackend : public Backend {
 public:
  std::string_view name() const override { return "metamorphic"; }
  TensorMap run(const Case& c) override;
};

}  // namespace nvfp4
