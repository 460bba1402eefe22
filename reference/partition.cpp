#include "reference/partition.h"

#include <algorithm>

#include "reference/error.h"

namespace nvfp4 {

std::vector<std::int64_t> equal_cuts(std::int64_t total, int ranks) {
  std::vector<std::int64_t> cuts;
  for (int rho = 1; rho < ranks; ++rho) cuts.push_back(total / ranks * rho + total % ranks * rho / ranks);
  return cuts;
}

std::vector<RankRange> rank_ranges(std::int64_t total, int ranks, const std::vector<std::int64_t>& cuts) {
  constexpr std::string_view op = "rank_ranges";
  if (ranks < 1 || ranks > kMaxRanks) fail(op, ErrorCode::E_SHARD, "{} ranks; between 1 and {} are supported", ranks, kMaxRanks);
  if (cuts.size() != std::size_t(ranks - 1))
    fail(op, ErrorCode::E_SHARD, "{} cut points for {} ranks; expected {}", cuts.size(), ranks, ranks - 1);
  std::vector<RankRange> r;
  std::int64_t begin = 0;
  for (std::size_t i = 0; i <= cuts.size(); ++i) {
    const std::int64_t end = i < cuts.size() ? cuts[i] : total;
    if (end < begin)
      fail(op, ErrorCode::E_SHARD, "cut point {} ({}) is below the previous one ({}); cut points must not decrease", i + 1, end,
           begin);
    if (end > total) fail(op, ErrorCode::E_SHARD, "cut point {} ({}) is past the {} elements", i + 1, end, total);
    r.push_back({begin, end});
    begin = end;
  }
  return r;
}

std::vector<std::int64_t> weight_offsets(const std::vector<std::int64_t>& weight_elements) {
  std::vector<std::int64_t> offsets{0};
  for (std::int64_t n : weight_elements) offsets.push_back(offsets.back() + n);
  return offsets;
}

std::vector<ShardPiece> rank_pieces(const std::vector<std::int64_t>& weight_elements, const RankRange& r) {
  const std::vector<std::int64_t> offsets = weight_offsets(weight_elements);
  std::vector<ShardPiece> pieces;
  for (std::size_t w = 0; w < weight_elements.size(); ++w) {
    const std::int64_t begin = std::max(r.begin, offsets[w]), end = std::min(r.end, offsets[w + 1]);
    if (begin >= end) continue;
    // offsets[w] is even, so the piece's first byte is offsets[w]/2 + shard.first_byte().
    pieces.push_back({w, Shard{begin - offsets[w], end - begin}, (begin >> 1) - r.first_byte()});
  }
  return pieces;
}

}  // namespace nvfp4
