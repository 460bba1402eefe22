// The formulas of TE's distributed 2D weight cast (NUMERICS.md §3.15-§3.16): fused tile scales
// and the partial cast's encode factor and byte index. Shared, like formulas.h, by the CPU
// reference and the CUDA kernels, which differ only in how they walk the shards.
#pragma once

#include <cstdint>

#include "reference/formulas.h"

namespace nvfp4 {

// §3.15 global_scale_helper: the encode scale S both the fused scale and the partial cast use.
// [knob GS] TE is the project default (the flow then equals quantize_2d for every g); TE_HELPER
// is TE's helper, which differs for g = +inf (S = 0) and g = NaN (S = 1).
NVFP4_HD float distributed_encode_scale(GlobalScaleRule rule, float g) { return global_scale(rule, g).S; }

// §3.15: mult = RN(S * r6), computed once per tensor.
NVFP4_HD float fused_scale_multiplier(float S) { return mul_rn(S, constants::recip6()); }

// §3.15: the float per-tile decode scale P = fminf(RN(T * mult), FLT_MAX), before its E4M3 cast.
NVFP4_HD float fused_tile_scale(float tile_amax, float mult) { return fmin_c99(mul_rn(tile_amax, mult), constants::flt_max()); }

// §3.16: the partial cast's decode scale Sd = RN(1 / S'), S' = (S <= 0) ? 1 : S (TE's guard for
// the helper's S = 0).
NVFP4_HD float partial_cast_decode_scale(float S) { return div_rn(1.0f, S <= 0.0f ? 1.0f : S); }

// §3.16: the encode factor of a tile: the float scale is re-quantized to E4M3 first, then
// enc = fminf(RN(1 / RN(sf * Sd)), FLT_MAX), with sf = 0 -> FLT_MAX (the te chain of §3.7).
NVFP4_HD float partial_cast_encode_factor(float tile_scale, float Sd) {
  const float sf = e4m3_decode(e4m3sat(tile_scale));
  const float enc = sf > 0.0f ? div_rn(1.0f, mul_rn(sf, Sd)) : constants::flt_max();
  return fmin_c99(enc, constants::flt_max());
}

// §3.16: the E2M1 code of one element of the shard.
NVFP4_HD std::uint8_t partial_cast_code(float x, float enc) { return e2m1_hw(mul_rn(x, enc)); }

// §3.16: the byte of a shard-local buffer that holds flattened element e of a shard starting at
// element s. Correct for either parity of s (TE's (ref_idx - s) >> 1 is not, §5.1).
NVFP4_HD std::int64_t shard_local_byte(std::int64_t e, std::int64_t s) { return (e >> 1) - (s >> 1); }

// Writes code q as the nibble of element e (even: low, odd: high), keeping the other nibble.
NVFP4_HD std::uint8_t with_nibble(std::uint8_t byte, std::int64_t e, std::uint8_t q) {
  return (e & 1) ? std::uint8_t((byte & 0x0F) | (q << 4)) : std::uint8_t((byte & 0xF0) | q);
}

}  // namespace nvfp4
