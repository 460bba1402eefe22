// Philox4x32-10 (docs/NUMERICS.md §3.18.2) on the host, from Random123, the library the
// generator comes from. The kernels use their own (device/kernels/philox.cuh); tests check the two agree.
#pragma once

#include "reference/stochastic_rounding.h"

namespace nvfp4 {

PhiloxCounter philox4x32_10(const PhiloxCounter& counter, const PhiloxKey& key);

// The draw of one block under the canonical assignment (§3.18.3).
inline PhiloxCounter sr_draw(std::uint64_t seed, std::uint64_t offset, SrDirection dir, std::uint64_t block) {
  return philox4x32_10(sr_counter(offset, dir, block), sr_key(seed));
}

}  // namespace nvfp4
