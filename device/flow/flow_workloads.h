// Parameter lists and cut points that the multi-GPU check (device/nccl/) and the benchmark run
// the distributed weight cast on (NUMERICS.md §3.17).
#pragma once

#include <cstdint>
#include <vector>

#include "device/flow/rank_flow.h"

namespace nvfp4::device {

// The linear weights of a decoder-only transformer with hidden size 2048 and MLP size 5632
// (about 1B parameters at 16 layers): per layer q, k, v, o [2048, 2048], gate and up
// [5632, 2048], down [2048, 5632]; 7 weights per layer.
std::vector<WeightShape> transformer_weights(int layers);

// Shapes that stress the flow's index arithmetic: a single tile, K/16 not a multiple of 4 (the
// compact scale pitch differs from K/16), M not a multiple of 128, an odd number of tile columns.
std::vector<WeightShape> edge_weights();

std::int64_t total_elements(const std::vector<WeightShape>& shapes);

// ranks - 1 cut points near the equal ones (equal_cuts), each moved by a seeded offset of up to
// 4095 elements and made odd, so that every boundary splits a packed byte between two ranks.
std::vector<std::int64_t> odd_cuts(std::int64_t total, int ranks, std::uint64_t seed);

// The all-gather's chunk size: the largest rank buffer.
std::int64_t chunk_pitch(const std::vector<RankRange>& ranks);

}  // namespace nvfp4::device
