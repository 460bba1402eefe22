// Deterministic input recipes: the same recipe yields the same bytes on every machine, because
// only integer arithmetic and single correctly rounded conversions are used (no libm, no std::
// distributions, whose algorithms differ between standard libraries). Recipes are versioned:
// a change to any generator's output bumps kRecipeVersion, and old versions stay loadable as
// long as they are implemented (a saved case also stores its tensors, so it replays regardless).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "reference/tensor.h"

namespace nvfp4::cases {

constexpr int kRecipeVersion = 1;

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
  std::uint64_t below(std::uint64_t n) { return next() % n; }  // n small: the bias is negligible and fixed

 private:
  std::uint64_t state_;
};

enum class Distribution {
  kRandn,            // approximately N(0, 1) (Irwin-Hall of 12) times a per-tensor power of two
  kUniform,          // uniform in (-2^e, 2^e)
  kBlockLogUniform,  // per-block magnitudes 2^-149 .. 2^127: scales underflow to 0 and saturate at 448
  kTies,             // E2M1 rounding ties after scaling (block amax 6 * 2^e), block amaxes on E4M3 ties
  kSpecials,         // zero blocks, -0.0, subnormals, FLT_MAX, +-inf, NaN, constant blocks, mixed in randn
  kSrThresholds,     // scaled values on stochastic rounding's 1/256 thresholds, and one ulp either side
};
std::string_view distribution_name(Distribution d);
std::optional<Distribution> distribution_from_name(std::string_view name);

struct Recipe {
  int version = kRecipeVersion;
  Distribution dist = Distribution::kRandn;
  std::uint64_t seed = 0;
  std::int64_t M = 16, K = 16;
  io::DType dtype = io::DType::F32;  // F32, BF16 or F16: values are generated in binary32 and narrowed (RNE)
  // Only the first `active_blocks` 1x16 blocks (row-major) keep their values, the others are +0;
  // -1 keeps all. Lets a shrunk case hold one or two interesting blocks.
  std::int64_t active_blocks = -1;
};

// The most elements a recipe may generate (256 MiB of binary32): a case file's recipe is
// checked against it before anything is allocated, since a few bytes of JSON can ask for any shape.
constexpr std::int64_t kMaxRecipeElements = std::int64_t{1} << 26;

// The binary32 values of a recipe (before narrowing to its dtype). Throws std::runtime_error for
// a shape that is negative, not of multiples of 16 or above kMaxRecipeElements.
FloatMatrix generate_values(const Recipe& r);
// The input tensor: values narrowed to r.dtype, as stored in a case file.
io::Tensor generate_tensor(const Recipe& r);

nlohmann::json recipe_to_json(const Recipe& r);
Recipe recipe_from_json(const nlohmann::json& j);  // throws std::runtime_error on a bad/unknown recipe

// Approximately standard normal values (Irwin-Hall sum of 12 uniform 24-bit integers, centred,
// divided by 2^24): the self-check's built-in example.
FloatMatrix randn_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed);

}  // namespace nvfp4::cases
