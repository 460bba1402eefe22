#include "reference/nibble_gather.h"

#include "reference/distributed_formulas.h"
#include "reference/error.h"

namespace nvfp4 {

std::vector<std::uint8_t> gather_nibbles(const std::vector<RankRange>& ranks,
                                         const std::vector<std::vector<std::uint8_t>>& buffers) {
  if (buffers.size() != ranks.size())
    fail("gather_nibbles", ErrorCode::E_SHARD, "{} buffers for {} ranks", buffers.size(), ranks.size());
  const std::int64_t total = ranks.empty() ? 0 : ranks.back().end;
  std::vector<std::uint8_t> out(std::size_t((total + 1) / 2), 0);
  for (std::size_t rho = 0; rho < ranks.size(); ++rho) {
    const RankRange& r = ranks[rho];
    if (std::int64_t(buffers[rho].size()) != r.buffer_bytes())
      fail("gather_nibbles", ErrorCode::E_DATA_SHAPE, "rank {} sent {} bytes; its range [{}, {}) covers {}", rho,
           buffers[rho].size(), r.begin, r.end, r.buffer_bytes());
    for (std::int64_t e = r.begin; e < r.end; ++e) {
      const std::uint8_t local = buffers[rho][std::size_t(shard_local_byte(e, r.begin))];
      out[std::size_t(e >> 1)] = with_nibble(out[std::size_t(e >> 1)], e, nibble_at(local, int(e & 1)));
    }
  }
  return out;
}

}  // namespace nvfp4
