#include "device/flow/flow_workloads.h"

#include <algorithm>
#include <random>

namespace nvfp4::device {

std::vector<WeightShape> transformer_weights(int layers) {
  constexpr std::int64_t hidden = 2048, mlp = 5632;
  std::vector<WeightShape> shapes;
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < 4; ++i) shapes.push_back({hidden, hidden});  // q, k, v, o
    shapes.push_back({mlp, hidden});                                 // gate
    shapes.push_back({mlp, hidden});                                 // up
    shapes.push_back({hidden, mlp});                                 // down
  }
  return shapes;
}

std::vector<WeightShape> edge_weights() {
  return {{16, 16}, {48, 80}, {272, 144}, {1040, 112}, {160, 4112}, {512, 768}, {2048, 1024}, {16, 2048}, {4096, 256}};
}

std::int64_t total_elements(const std::vector<WeightShape>& shapes) {
  std::int64_t total = 0;
  for (const WeightShape& s : shapes) total += s.M * s.K;
  return total;
}

std::vector<std::int64_t> odd_cuts(std::int64_t total, int ranks, std::uint64_t seed) {
  std::mt19937_64 rng(seed);  // its output sequence is fixed by the C++ standard
  std::vector<std::int64_t> cuts = equal_cuts(total, ranks);
  if (total == 0) return cuts;
  std::int64_t previous = 0;
  for (std::int64_t& c : cuts) {
    c = std::clamp<std::int64_t>(c + std::int64_t(rng() % 8191) - 4095, previous, total) | 1;
    if (c > total) c = total - 1;  // total is even, so total - 1 is odd
    previous = c;
  }
  return cuts;
}

std::int64_t chunk_pitch(const std::vector<RankRange>& ranks) {
  std::int64_t pitch = 0;
  for (const RankRange& r : ranks) pitch = std::max(pitch, r.buffer_bytes());
  return pitch;
}

}  // namespace nvfp4::device
