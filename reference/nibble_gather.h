// The all-gather of the partial casts' bytes (NUMERICS.md §3.17 step 7), nibble-aware: byte B of
// the concatenated packed data takes its low nibble from the rank that owns element 2B and its
// high nibble from the rank that owns element 2B+1. Ranks whose ranges start or end at an odd
// element share a byte; a byte-granular gather would keep only one rank's nibble (§5.3).
#pragma once

#include <cstdint>
#include <vector>

#include "reference/partition.h"

namespace nvfp4 {

// buffers[ρ] holds ranks[ρ].buffer_bytes() bytes; the result holds (total + 1) / 2 bytes, where
// total is ranks.back().end. Only owned nibbles are read, so unowned nibbles may hold anything.
std::vector<std::uint8_t> gather_nibbles(const std::vector<RankRange>& ranks,
                                         const std::vector<std::vector<std::uint8_t>>& buffers);

}  // namespace nvfp4
