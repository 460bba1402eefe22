// Fused scale, NUMERICS.md §3.15: from all-reduced 16x16 tile amaxes and the global amax, the
// float per-tile scales the partial cast uses and the expanded compact rowwise scale bytes.
#pragma once

#include "reference/profile.h"
#include "reference/tensor.h"

namespace nvfp4 {

struct FusedScale {
  FloatMatrix tile_scale;  // P [M/16, K/16], binary32, before the E4M3 cast
  ByteMatrix scale;        // [roundup(M,128), roundup(K/16,4)]: tile bytes replicated on 16 rows, 0x00 padding
  float amax = 0.0f;       // amax_row = g
  float S = 1.0f;          // the encode scale of global_scale_helper (the partial cast's input)
};

// tile_amax is [M/16, K/16]; rule is [knob GS] (TE or TE_HELPER, else E_UNSUPPORTED).
FusedScale fused_scale_2d(const FloatMatrix& tile_amax, float g, GlobalScaleRule rule);

// E_UNSUPPORTED unless rule is one of the two global_scale_helper formulas of §3.15.
void validate_distributed_scale_rule(std::string_view op, GlobalScaleRule rule);

}  // namespace nvfp4
