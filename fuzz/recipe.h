// Deterministic input recipes: the same (distribution, seed, shape) yields the same bytes on
// every machine, because only integer arithmetic and single correctly rounded conversions are
// used (no libm, no std:: distributions, whose algorithms differ between standard libraries).
#pragma once

#include <cstdint>

#include "reference/tensor.h"

namespace nvfp4::fuzz {

// SplitMix64: a tiny, well-mixed, fully specified 64-bit generator.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

// Approximately standard normal values: the Irwin-Hall sum of 12 uniform 24-bit integers,
// centred, divided by 2^24 (one rounding to binary32).
FloatMatrix randn_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed);

}  // namespace nvfp4::fuzz
