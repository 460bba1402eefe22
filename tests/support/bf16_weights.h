// Random BF16 weights for the checkpoint tests: 1x16 blocks spanning a few binades, scaled per
// tensor so that the members of a shared-amax group have different amaxes.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "io/safetensors.h"
#include "reference/half_float.h"

namespace nvfp4::test_support {

inline io::Tensor random_bf16(std::vector<std::int64_t> shape, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-6, 0);
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<std::uint16_t> v(static_cast<std::size_t>(n));
  for (std::size_t b = 0; b < v.size(); b += 16) {
    const float m = scale * std::ldexp(1.0f, binade(rng));
    for (std::size_t i = b; i < b + 16 && i < v.size(); ++i) v[i] = float_to_bf16(normal(rng) * m);
  }
  return io::make_tensor_from<std::uint16_t>(io::DType::BF16, std::move(shape), v);
}

}  // namespace nvfp4::test_support
