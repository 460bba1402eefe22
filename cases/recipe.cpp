#include "cases/recipe.h"

#include <array>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/tensor_convert.h"
#include "reference/formulas.h"

namespace nvfp4::cases {
namespace {

constexpr std::array<std::pair<Distribution, std::string_view>, 6> kNames = {{
    {Distribution::kRandn, "randn"},
    {Distribution::kUniform, "uniform"},
    {Distribution::kBlockLogUniform, "block-log-uniform"},
    {Distribution::kTies, "ties"},
    {Distribution::kSpecials, "specials"},
    {Distribution::kSrThresholds, "sr-thresholds"},
}};

float pow2(int e) {  // 2^e for e in [-149, 127], exact
  if (e >= -126) return float_of(std::uint32_t(e + 127) << 23);
  return float_of(1u << (e + 149));
}

float irwin_hall(SplitMix64& rng) {
  std::int64_t sum = 0;
  for (int i = 0; i < 12; ++i) sum += std::int64_t(rng.next() >> 40);  // 24-bit uniform
  return float(sum - 6 * (std::int64_t(1) << 24)) / 16777216.0f;       // exact power-of-two scaling
}

float with_random_sign(SplitMix64& rng, float v) { return (rng.next() & 1) ? -v : v; }

// A binary32 value with a random mantissa and the unbiased exponent e (subnormal below -126).
float random_with_exponent(SplitMix64& rng, int e) {
  const std::uint32_t mant = std::uint32_t(rng.next()) & 0x7FFFFFu;
  if (e < -126) return float_of(mant >> std::min(23, -126 - e));
  return float_of((std::uint32_t(std::min(e, 127) + 127) << 23) | mant);
}

// The fills below draw element by element, or block by block, in memory order, and write only
// inside the current block, so the first `n` elements (a multiple of 16) do not depend on the
// rest: a recipe that keeps only its first active blocks generates only those. fill_specials is
// the exception (its second pass draws after the whole first one) and always fills everything.

// Calls block(r, c0) for the 16-element blocks that start before element n, in memory order.
template <class Block>
void for_blocks_before(const FloatMatrix& x, std::size_t n, Block block) {
  for (std::size_t r = 0; r < x.shape(0); ++r)
    for (std::size_t c0 = 0; c0 < x.shape(1); c0 += 16) {
      if (r * x.shape(1) + c0 >= n) return;
      block(r, c0);
    }
}

void fill_randn(FloatMatrix& x, SplitMix64& rng, std::size_t n) {
  const float s = pow2(int(rng.below(17)) - 8);
  for (std::size_t i = 0; i < n; ++i) x.data()[i] = irwin_hall(rng) * s;
}

void fill_uniform(FloatMatrix& x, SplitMix64& rng, std::size_t n) {
  const float s = pow2(int(rng.below(17)) - 8);
  for (std::size_t i = 0; i < n; ++i) x.data()[i] = float(std::int64_t(rng.next() >> 40) - (1 << 23)) / 8388608.0f * s;
}

void fill_block_log_uniform(FloatMatrix& x, SplitMix64& rng, std::size_t n) {
  for_blocks_before(x, n, [&](std::size_t r, std::size_t c0) {
    const int e = int(rng.below(277)) - 149;  // the block's top exponent
    for (std::size_t c = c0; c < std::min(x.shape(1), c0 + 16); ++c)
      x(r, c) = with_random_sign(rng, random_with_exponent(rng, e - int(rng.below(13))));
  });
}

// Elements on E2M1 grid points and ties times a per-block power of two, each 16-element block
// holding its amax 6 * 2^e (so that encode factors are often exact powers of two and scaled
// values land exactly on ties); some blocks instead get an amax that puts te's pre-cast block
// scale on an E4M3 rounding tie.
void fill_ties(FloatMatrix& x, SplitMix64& rng, std::size_t n) {
  static constexpr float kPoints[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f,
                                      2.0f, 2.5f,  3.0f, 3.5f,  4.0f, 5.0f,  6.0f};
  const int top = int(rng.below(41)) - 20;
  const float g = 6.0f * pow2(top);
  const float m = mul_rn(global_scale(GlobalScaleRule::TE, g).S, constants::recip6());  // te's RN(S * r6)
  for_blocks_before(x, n, [&](std::size_t r, std::size_t c0) {
    const int e = top - int(rng.below(12));
    for (std::size_t c = c0; c < c0 + 16; ++c) x(r, c) = with_random_sign(rng, kPoints[rng.below(15)] * pow2(e));
    x(r, c0 + rng.below(16)) = with_random_sign(rng, 6.0f * pow2(e));
    if (rng.below(4) == 0) {
      // Midpoint between two adjacent E4M3 codes k and k+1 (k < 0x7E), divided by m.
      const std::uint8_t k = std::uint8_t(1 + rng.below(0x7D));
      const float tie = 0.5f * (e4m3_decode(k) + e4m3_decode(k + 1));
      const float A = div_rn(tie, m);
      if (A <= g) x(r, c0 + rng.below(16)) = with_random_sign(rng, A);
    }
  });
  x(0, 0) = g;  // the tensor amax is g
}

// Stochastic rounding's thresholds (§3.18.1): elements (lower + step * k/256) * 2^e for a grid
// point `lower`, its step to the upper neighbour and k = 1..255 (exact in binary32), a quarter of
// them moved one ulp down and a quarter one ulp up, so that the fma's rounding decides. Each block
// holds its amax 6 * 2^e, as in fill_ties, so that encode factors are often exact powers of two.
void fill_sr_thresholds(FloatMatrix& x, SplitMix64& rng, std::size_t n) {
  static constexpr float kLower[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f};
  const int top = int(rng.below(41)) - 20;
  for_blocks_before(x, n, [&](std::size_t r, std::size_t c0) {
    const int e = top - int(rng.below(12));
    for (std::size_t c = c0; c < c0 + 16; ++c) {
      const float lower = kLower[rng.below(std::size(kLower))];
      const float step = lower >= 4.0f ? 2.0f : (lower >= 2.0f ? 1.0f : 0.5f);
      float v = (lower + step * float(1 + rng.below(255)) / 256.0f) * pow2(e);
      const std::uint64_t nudge = rng.below(4);
      if (nudge < 2) v = std::nextafter(v, nudge == 0 ? 0.0f : INFINITY);
      x(r, c) = with_random_sign(rng, v);
    }
    x(r, c0 + rng.below(16)) = with_random_sign(rng, 6.0f * pow2(e));
  });
  x(0, 0) = 6.0f * pow2(top);  // the tensor amax
}

void fill_specials(FloatMatrix& x, SplitMix64& rng) {
  static constexpr std::uint32_t kSpecial[] = {0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000,
                                               0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                                               0x7FFFFFFF, 0x3E800000, 0xBF400000, 0x40A00000};
  fill_randn(x, rng, x.size());
  for (std::size_t r = 0; r < x.shape(0); ++r)
    for (std::size_t c0 = 0; c0 < x.shape(1); c0 += 16) {
      const std::uint64_t kind = rng.below(8);
      if (kind == 0)  // an all-zero block, signs mixed
        for (std::size_t c = c0; c < c0 + 16; ++c) x(r, c) = with_random_sign(rng, 0.0f);
      else if (kind == 1)  // a constant block
        for (std::size_t c = c0 + 1; c < c0 + 16; ++c) x(r, c) = x(r, c0);
      else if (kind == 2)  // a few special values
        for (int n = 0; n < 3; ++n) x(r, c0 + rng.below(16)) = float_of(kSpecial[rng.below(std::size(kSpecial))]);
    }
}

}  // namespace

std::string_view distribution_name(Distribution d) {
  for (const auto& [k, n] : kNames)
    if (k == d) return n;
  return "unknown";
}

std::optional<Distribution> distribution_from_name(std::string_view name) {
  for (const auto& [k, n] : kNames)
    if (n == name) return k;
  return std::nullopt;
}

FloatMatrix generate_values(const Recipe& r) {
  if (r.version != kRecipeVersion) throw std::runtime_error("recipe version " + std::to_string(r.version) + " is not supported");
  const std::string shape = std::to_string(r.M) + "x" + std::to_string(r.K);
  if (r.M < 0 || r.K < 0 || r.M % 16 || r.K % 16) throw std::runtime_error("recipe shape " + shape + " is not a multiple of 16");
  // Each factor first, so that the product cannot overflow.
  if (r.M > kMaxRecipeElements || r.K > kMaxRecipeElements || r.M * r.K > kMaxRecipeElements)
    throw std::runtime_error("recipe shape " + shape + " exceeds the limit of " + std::to_string(kMaxRecipeElements) +
                             " elements");
  FloatMatrix x = xt::zeros<float>({std::size_t(r.M), std::size_t(r.K)});
  SplitMix64 rng(r.seed ^ 0x6E76667034ull);
  // The elements that survive active_blocks: the fills generate only these (the rest stay 0).
  // Clamped before the multiplication, which a hostile count would wrap.
  const std::size_t n = r.active_blocks >= 0 ? std::min(x.size() / 16, std::size_t(r.active_blocks)) * 16 : x.size();
  switch (r.dist) {
    case Distribution::kRandn:
      fill_randn(x, rng, n);
      break;
    case Distribution::kUniform:
      fill_uniform(x, rng, n);
      break;
    case Distribution::kBlockLogUniform:
      fill_block_log_uniform(x, rng, n);
      break;
    case Distribution::kTies:
      if (x.size()) fill_ties(x, rng, n);
      break;
    case Distribution::kSpecials:
      fill_specials(x, rng);
      break;
    case Distribution::kSrThresholds:
      if (x.size()) fill_sr_thresholds(x, rng, n);
      break;
  }
  if (r.active_blocks >= 0)
    for (std::size_t i = n; i < x.size(); ++i) x.data()[i] = 0.0f;
  return x;
}

io::Tensor generate_tensor(const Recipe& r) {
  const FloatMatrix x = generate_values(r);
  switch (r.dtype) {
    case io::DType::F32:
      return io::from_float_matrix(x, io::FloatType::F32);
    case io::DType::BF16:
      return io::from_float_matrix(x, io::FloatType::BF16);
    case io::DType::F16:
      return io::from_float_matrix(x, io::FloatType::F16);
    default:
      throw std::runtime_error("recipe dtype " + std::string(io::dtype_name(r.dtype)) + " is not F32, BF16 or F16");
  }
}

nlohmann::json recipe_to_json(const Recipe& r) {
  return {{"version", r.version},
          {"dist", distribution_name(r.dist)},
          {"seed", r.seed},
          {"M", r.M},
          {"K", r.K},
          {"dtype", io::dtype_name(r.dtype)},
          {"active_blocks", r.active_blocks}};
}

namespace {

// An integer field of a recipe: a float (1e30) would convert to an integer with undefined behaviour.
template <class T>
T integer_field(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_integer())
    throw std::runtime_error(std::string("bad recipe: ") + key + " must be an integer, not " + v.dump());
  return v.get<T>();
}

}  // namespace

Recipe recipe_from_json(const nlohmann::json& j) {
  try {
    Recipe r;
    r.version = integer_field<int>(j, "version");
    const auto d = distribution_from_name(j.at("dist").get<std::string>());
    if (!d) throw std::runtime_error("unknown distribution '" + j.at("dist").get<std::string>() + "'");
    r.dist = *d;
    r.seed = integer_field<std::uint64_t>(j, "seed");
    r.M = integer_field<std::int64_t>(j, "M");
    r.K = integer_field<std::int64_t>(j, "K");
    const auto t = io::dtype_from_name(j.at("dtype").get<std::string>());
    if (!t) throw std::runtime_error("unknown dtype '" + j.at("dtype").get<std::string>() + "'");
    r.dtype = *t;
    r.active_blocks = j.contains("active_blocks") ? integer_field<std::int64_t>(j, "active_blocks") : -1;
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("bad recipe: ") + e.what());
  }
}

FloatMatrix randn_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  SplitMix64 rng(seed);
  FloatMatrix x = xt::empty<float>({rows, cols});
  for (float& v : x) v = irwin_hall(rng);
  return x;
}

}  // namespace nvfp4::cases
