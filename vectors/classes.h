// The classes conformance vectors are built from (docs/vectors.md): block regimes, where a
// block's amax sits against the global amax and so which scale path runs, and element patterns,
// where the elements sit on the E2M1 grid of the block's scale. A vector's input x lays one
// pattern out in one regime (lay_out); its expected outputs are the reference's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "cases/recipe.h"
#include "io/tensor_convert.h"
#include "reference/tensor.h"

namespace nvfp4::vectors {

// Level 1: the full product of the regimes with the small pattern set, seconds to check; level 2
// adds the larger pattern set, every mode under every pattern and shapes that are not multiples of
// the tile sizes.
enum class Level { k1 = 1, k2 = 2 };

struct Regime {
  std::string_view name;
  std::string_view exercises;  // one line, for the docs and the manifest
  // The block amaxes of the even and odd 16-column tile columns, for an input of dtype t; rng draws
  // the seeded regime's values.
  std::array<float, 2> (*amaxes)(io::FloatType t, cases::SplitMix64& rng);
  std::optional<std::uint32_t> amax_bits;         // the global amax given as quantize's `amax`, or computed
  void (*edit)(FloatMatrix& x, io::FloatType t);  // after the layout (specials, row spread); may be null
};

struct Pattern {
  std::string_view name;
  std::string_view exercises;
  Level level;  // the first level that has it
  // The 16 values of a block whose amax is A, each exact in dtype t; index 0 holds +-A.
  std::array<float, 16> (*values)(float A, io::FloatType t);
};

std::span<const Regime> regimes();
std::span<const Pattern> patterns(Level level);  // the patterns of `level` (level 2 includes level 1's)

// x [M, K] of dtype t: element (r, c) is value (r + c) mod 16 of the pattern for the block amax of
// tile column (c / 16) mod 2, negated in odd tile columns, so that each 1x16 and each 16x1 block
// holds a rotation of the pattern (its maximum at every position across 16 rows) and each 16x16
// tile every value 16 times; then the regime's edit. Values are binary32, exact in t.
FloatMatrix lay_out(const Regime& regime, const Pattern& pattern, std::int64_t M, std::int64_t K, io::FloatType t,
                    cases::SplitMix64& rng);

}  // namespace nvfp4::vectors
