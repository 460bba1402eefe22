// How R data-parallel ranks cut the flattened concatenation of a list of weights (NUMERICS.md
// §3.17): R contiguous ranges, each owning pieces of one or more weights. Weights have an even
// number of elements, so a weight never shares a packed byte with the next one.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/shard.h"

namespace nvfp4 {

constexpr int kMaxRanks = 64;

// Rank ρ owns flat elements [begin, end) of the concatenation; its buffer holds packed bytes
// [begin div 2, (end + 1) div 2) of the concatenated data, as a shard-local buffer would.
struct RankRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t first_byte() const { return begin >> 1; }
  std::int64_t buffer_bytes() const { return ((end + 1) >> 1) - first_byte(); }
};

// The default cuts: rank ρ starts at floor(total * ρ / R) (equal slices, any parity).
std::vector<std::int64_t> equal_cuts(std::int64_t total, int ranks);

// The R ranges given R-1 cut points. E_SHARD unless 1 <= R <= 64, there are R-1 cuts, they do
// not decrease (equal cuts give empty ranks) and lie in [0, total].
std::vector<RankRange> rank_ranges(std::int64_t total, int ranks, const std::vector<std::int64_t>& cuts);

// One weight's share of a rank: the weight-local shard and where its shard-local bytes start in
// the rank's buffer.
struct ShardPiece {
  std::size_t weight = 0;
  Shard shard;
  std::int64_t buffer_offset = 0;
};

// The non-empty pieces of rank range r, in weight order; weight_elements[i] = M_i * K_i.
std::vector<ShardPiece> rank_pieces(const std::vector<std::int64_t>& weight_elements, const RankRange& r);

// Flat start of every weight in the concatenation, plus the total as the last entry.
std::vector<std::int64_t> weight_offsets(const std::vector<std::int64_t>& weight_elements);

}  // namespace nvfp4
