// How the EXACT GEMM spreads its output tiles over the GPU (docs/design/gemm-kernel.md, "Tail split").
// Plain C++, so that the rule is tested without a GPU.
#pragma once

#include <algorithm>
#include <cstdint>

namespace nvfp4::device {

// Whole tiles fill every full wave of CTAs; the tiles of the last, partial wave are cut along K
// into `parts` pieces of consecutive stages, so that the last wave keeps every SM busy instead of
// a few. The pieces' integer totals add exactly in any order.
struct GemmSplit {
  std::int64_t whole_tiles = 0;  // tiles [0, whole_tiles) run whole, one CTA each
  std::int64_t parts = 1;        // CTAs per remaining tile
  std::int64_t tail_tiles(std::int64_t tiles) const { return tiles - whole_tiles; }
  std::int64_t ctas(std::int64_t tiles) const { return whole_tiles + parts * tail_tiles(tiles); }
};

// A part covers at least this many K stages, so that filling its pipeline and adding its totals
// stay small against its work.
constexpr std::int64_t kGemmMinStagesPerPart = 4;

// tiles: output tiles; stages: K stages per tile; wave: CTAs resident at once on the device.
inline GemmSplit gemm_split(std::int64_t tiles, std::int64_t stages, std::int64_t wave) {
  const std::int64_t tail = tiles % wave;
  if (tail == 0) return {tiles, 1};
  const std::int64_t parts = std::min(wave / tail, stages / kGemmMinStagesPerPart);
  if (parts < 2) return {tiles, 1};
  return {tiles - tail, parts};
}

}  // namespace nvfp4::device
