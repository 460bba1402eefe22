// The block and tensor amaxes (reference/amax.cpp computes them on the bits of |x|) are
// amax_step folded over the elements from +0 (§3.1), for every rule, on special values and fresh
// random bits.
#include <gtest/gtest.h>

#include <random>

#include "reference/amax.h"
#include "reference/formulas.h"

namespace nvfp4 {
namespace {

float fold(const FloatMatrix& x, AmaxRule rule, std::size_t r0, std::size_t nr, std::size_t c0, std::size_t nc) {
  float acc = 0.0f;
  for (std::size_t r = r0; r < r0 + nr; ++r)
    for (std::size_t c = c0; c < c0 + nc; ++c) acc = amax_step(rule, acc, x(r, c));
  return acc;
}

// Random matrices where each element is, with some probability, a special value: NaN of either
// sign and any payload, infinities, signed zeros, subnormals, the largest finite.
FloatMatrix special_matrix(std::mt19937& rng, std::size_t M, std::size_t K, int special_percent) {
  const std::uint32_t specials[] = {0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7F800000, 0xFF800000,
                                    0x80000000, 0x00000000, 0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF};
  FloatMatrix x = xt::empty<float>({M, K});
  for (float& v : x) v = int(rng() % 100) < special_percent ? float_of(specials[rng() % std::size(specials)]) : float_of(rng());
  return x;
}

TEST(AmaxFold, BlockAndTensorAmaxesEqualTheFoldOfAmaxStep) {
  std::mt19937 rng(std::random_device{}());
  for (const AmaxRule rule : {AmaxRule::IGNORE, AmaxRule::PROPAGATE, AmaxRule::PROPAGATE_BF16})
    for (const int special : {0, 2, 30, 100})
      for (int trial = 0; trial < 8; ++trial) {
        const std::size_t M = 16 * (1 + rng() % 3), K = 16 * (1 + rng() % 3);
        const FloatMatrix x = special_matrix(rng, M, K, special);
        const float g = amax_global(x, rule);
        EXPECT_EQ(bits_of(g), bits_of(fold(x, rule, 0, M, 0, K))) << "amax_global, rule " << int(rule);
        const FloatMatrix b = amax_blocks_1x16(x, rule), c = amax_blocks_16x1(x, rule), t = amax_tiles_16x16(x, rule);
        for (std::size_t i = 0; i < M; ++i)
          for (std::size_t j = 0; j < K / 16; ++j)
            ASSERT_EQ(bits_of(b(i, j)), bits_of(fold(x, rule, i, 1, 16 * j, 16))) << "1x16 (" << i << ", " << j << ")";
        for (std::size_t i = 0; i < M / 16; ++i)
          for (std::size_t j = 0; j < K; ++j)
            ASSERT_EQ(bits_of(c(i, j)), bits_of(fold(x, rule, 16 * i, 16, j, 1))) << "16x1 (" << i << ", " << j << ")";
        for (std::size_t i = 0; i < M / 16; ++i)
          for (std::size_t j = 0; j < K / 16; ++j)
            ASSERT_EQ(bits_of(t(i, j)), bits_of(fold(x, rule, 16 * i, 16, 16 * j, 16))) << "16x16 (" << i << ", " << j << ")";
      }
}

}  // namespace
}  // namespace nvfp4
