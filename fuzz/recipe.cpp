#include "fuzz/recipe.h"

namespace nvfp4::fuzz {

FloatMatrix randn_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  SplitMix64 rng(seed);
  FloatMatrix x = xt::empty<float>({rows, cols});
  for (float& v : x) {
    std::int64_t sum = 0;
    for (int i = 0; i < 12; ++i) sum += std::int64_t(rng.next() >> 40);  // 24-bit uniform
    v = float(sum - 6 * (std::int64_t(1) << 24)) / 16777216.0f;         // exact power-of-two scaling
  }
  return x;
}

}  // namespace nvfp4::fuzz
