// Philox4x32-10 (docs/NUMERICS.md §3.18.2) for the kernels' stochastic rounding: an
// implementation of the project's own, independent of the host's Random123 generator
// (reference/philox.h), which DevicePhilox tests compare it with. Its ten round keys depend only
// on the key, so a kernel takes them computed once (philox_round_keys; SrStream in encode16.cuh
// says where) rather than adding the key's increments in every draw, as curand_Philox4x32_10
// does: a round is then two wide multiplies and two three-way XORs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "reference/stochastic_rounding.h"

namespace nvfp4::device {

constexpr int kPhiloxRounds = 10;

// The key of each round: (k[2r], k[2r + 1]) is the key plus r times the Weyl increments.
struct PhiloxRoundKeys {
  std::uint32_t k[2 * kPhiloxRounds];
};

__host__ __device__ inline PhiloxRoundKeys philox_round_keys(const PhiloxKey& key) {
  PhiloxRoundKeys keys{};
  for (int r = 0; r < kPhiloxRounds; ++r) {
    keys.k[2 * r] = key.x + std::uint32_t(r) * 0x9E3779B9u;      // W0
    keys.k[2 * r + 1] = key.y + std::uint32_t(r) * 0xBB67AE85u;  // W1
  }
  return keys;
}

// The ten rounds on counter c: each multiplies words 0 and 2 (M0, M1), 32 x 32 -> 64 bits.
__device__ __forceinline__ uint4 philox4x32_10_rounds(uint4 c, const PhiloxRoundKeys& keys) {
#pragma unroll
  for (int r = 0; r < kPhiloxRounds; ++r) {
    const std::uint32_t hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;  // M0
    const std::uint32_t hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;  // M1
    c = make_uint4(hi1 ^ c.y ^ keys.k[2 * r], lo1, hi0 ^ c.w ^ keys.k[2 * r + 1], lo0);
  }
  return c;
}

}  // namespace nvfp4::device
