// What the seed-corpus families (cases/seeds/<family>.cpp) build their cases from: tensors of
// exact bit patterns, recipes, and cases of one operation with the seed corpus's origin.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cases/case_io.h"
#include "cases/recipe.h"
#include "reference/arith.h"
#include "reference/quantize.h"

namespace nvfp4::cases::seeds {

// A matrix of binary32 bit patterns, written into a case as F32 (bits kept exactly, NaN
// payloads included) or BF16 (the values must be BF16-exact: low 16 bits zero).
struct Grid {
  std::int64_t M, K;
  std::vector<std::uint32_t> bits;
  Grid(std::int64_t m, std::int64_t k) : M(m), K(k), bits(std::size_t(m * k), 0) {}
  std::uint32_t& at(std::int64_t r, std::int64_t c) { return bits[std::size_t(r * K + c)]; }
};

io::Tensor f32_tensor(const Grid& g);
io::Tensor bf16_tensor(const Grid& g);

// A BF16-exact value of random sign with magnitude below 2^floor(log2(limit)) (so below limit),
// at most `spread` binades lower.
std::uint32_t below(SplitMix64& rng, std::uint32_t limit_bits, int spread = 6);

// Fills every element of rows [r0, r1) x cols [c0, c1) that is still +0 with values below limit.
void fill(Grid& g, SplitMix64& rng, std::uint32_t limit_bits, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void fill_all(Grid& g, SplitMix64& rng, std::uint32_t limit_bits);

io::Tensor random_bytes(std::int64_t rows, std::int64_t cols, std::uint64_t seed);

Recipe recipe(Distribution d, std::uint64_t seed, std::int64_t M, std::int64_t K, io::DType dtype);

// The parameters of a quantize seed case (the others at their defaults).
struct Quant {
  std::string profile = "te";
  BlockShape block = BlockShape::k1D;
  Direction direction = Direction::kBoth;
  bool row_scaled = false;
  std::optional<std::uint32_t> amax_bits;
  ScaleLayout layout = ScaleLayout::kCompact;
};

CaseRecord quantize_case(const Quant& q, io::Tensor x, std::string note);
CaseRecord quantize_recipe_case(const Quant& q, const Recipe& rec, std::string note);

// A case of `op` (its profile parameter, where it has one, set to `profile`).
CaseRecord op_case(std::string_view op, const std::string& profile, std::map<std::string, io::Tensor> inputs, std::string note);

}  // namespace nvfp4::cases::seeds
