// RapidCheck generators shared by the property tests and the fuzzing harness (NUMERICS.md §2.3,
// §2.4, §4; docs/design/toolchain.md "RapidCheck").
//
// Rules followed here (docs/design/toolchain.md):
//  * structure (shapes, distribution kind, profile, which edge case) comes from shrinkable
//    generators; bulk data comes from a gen::noShrink seed feeding std::mt19937, so a failing
//    case shrinks by shrinking its shape while its data stays reproducible from (shape, kind, seed);
//  * gen::arbitrary<float> never yields NaN/inf/-0/subnormals: floats are built from uint32 bit
//    patterns mixed with weighted special values;
//  * gen::inRange's max is exclusive and its range grows with size; small domains use elementOf;
//  * nothing here needs max_size > 100.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <string_view>
#include <tuple>
#include <vector>

#include "reference/arith.h"
#include "reference/profiles.h"
#include "reference/tensor.h"

namespace nvfp4::fuzz {

// ---- shapes ------------------------------------------------------------------------------

struct Shape {
  std::size_t M = 16;
  std::size_t K = 16;
};

inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.M << "x" << s.K; }

// A multiple of 16 in [16, max_dim] (max_dim is rounded down to a multiple of 16, at least 16).
// Biased towards 16, 48, 80 and other odd multiples of 16 (not multiples of 32), then multiples
// of 32 that are not multiples of 64, of 64 that are not multiples of 128, and of 128: those are
// the widths where padding (roundup(K/16, 4), roundup(M, 128)) and swizzle tiles bite.
inline rc::Gen<std::size_t> dim16(std::size_t max_dim) {
  const std::size_t max_mult = std::max<std::size_t>(1, max_dim / 16);
  auto pick = [max_mult](std::initializer_list<std::size_t> values) {
    std::vector<std::size_t> v;
    for (std::size_t x : values)
      if (x / 16 <= max_mult) v.push_back(x);
    if (v.empty()) v.push_back(16);
    return rc::gen::elementOf(v);
  };
  return rc::gen::weightedOneOf<std::size_t>({
      {4, pick({16, 48, 80})},
      {2, pick({112, 144, 176, 208, 240, 272, 304})},              // odd multiples of 16
      {1, pick({32, 96, 160, 224, 288, 64, 192, 320, 128, 256})},  // 32 mod 64, 64 mod 128, 128
      {4, rc::gen::map(rc::gen::inRange<std::size_t>(1, max_mult + 1), [](std::size_t m) { return 16 * m; })},
  });
}

// M and K multiples of 16 up to max_dim: arbitrary pairs, square, tall (M > K) and wide (K > M).
inline rc::Gen<Shape> shape16(std::size_t max_dim) {
  auto pair = rc::gen::tuple(dim16(max_dim), dim16(max_dim));
  return rc::gen::weightedOneOf<Shape>({
      {3, rc::gen::map(pair,
                       [](const std::tuple<std::size_t, std::size_t>& t) {
                         return Shape{std::get<0>(t), std::get<1>(t)};
                       })},
      {1, rc::gen::map(dim16(max_dim),
                       [](std::size_t d) {
                         return Shape{d, d};
                       })},
      {1, rc::gen::map(pair,
                       [](const std::tuple<std::size_t, std::size_t>& t) {  // tall
                         const auto [a, b] = t;
                         return Shape{std::max(a, b), std::min(a, b)};
                       })},
      {1, rc::gen::map(pair,
                       [](const std::tuple<std::size_t, std::size_t>& t) {  // wide
                         const auto [a, b] = t;
                         return Shape{std::min(a, b), std::max(a, b)};
                       })},
  });
}

// ---- floats ------------------------------------------------------------------------------

// Weighted special values: zeros, subnormals, normal limits, infinities, NaNs of both signs
// and several payloads, E2M1 grid points and tie points (§2.1.2), E4M3 limits (§2.2).
inline const std::vector<std::uint32_t>& special_float_bits() {
  static const std::vector<std::uint32_t> v = {
      0x00000000u, 0x80000000u,                            // +-0
      0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu,  // +-min / max subnormal
      0x00010000u, 0x80010000u,                            // BF16 subnormal 2^-133
      0x00800000u, 0x80800000u,                            // +-FLT_MIN
      0x7F7FFFFFu, 0xFF7FFFFFu,                            // +-FLT_MAX
      0x7F800000u, 0xFF800000u,                            // +-inf
      0x7FC00000u, 0xFFC00000u, 0x7FFFFFFFu, 0xFFFFFFFFu,  // quiet NaNs, canonical GPU NaN
      0x7F800001u, 0xFF800001u, 0x7FA00000u,               // signalling NaNs / payloads
      // E2M1 ties 0.25 0.75 1.25 1.75 2.5 3.5 5 and grid 0.5 1 1.5 2 3 4 6, both signs
      0x3E800000u, 0x3F400000u, 0x3FA00000u, 0x3FE00000u, 0x40200000u, 0x40600000u, 0x40A00000u, 0xBE800000u, 0xBF400000u,
      0xBFA00000u, 0xBFE00000u, 0xC0200000u, 0xC0600000u, 0xC0A00000u, 0x3F000000u, 0x3F800000u, 0x3FC00000u, 0x40000000u,
      0x40400000u, 0x40800000u, 0x40C00000u, 0xBF000000u, 0xBF800000u, 0xBFC00000u, 0xC0000000u, 0xC0400000u, 0xC0800000u,
      0xC0C00000u, 0x3E800001u, 0x40A00001u, 0xBE800001u,  // just past a tie
      0x43E00000u, 0x43E80000u, 0x43E80001u,               // 448, 464, 464+
      0x3A800000u, 0x3B000000u,                            // 2^-10, 2^-9
  };
  return v;
}

inline bool is_finite_bits(std::uint32_t u) { return (u & 0x7F800000u) != 0x7F800000u; }

// Any binary32 bit pattern: uniform over all 2^32 (size pinned so that small sizes do not
// confine it to subnormals), special values, and "ordinary" magnitudes 2^-24..2^24.
inline rc::Gen<std::uint32_t> float_bits() {
  auto ordinary = rc::gen::map(rc::gen::tuple(rc::gen::arbitrary<bool>(), rc::gen::inRange(-24, 25),
                                              rc::gen::resize(100, rc::gen::arbitrary<std::uint32_t>())),
                               [](const std::tuple<bool, int, std::uint32_t>& t) {
                                 const auto [neg, e, mant] = t;
                                 return (neg ? 0x80000000u : 0u) | (std::uint32_t(127 + e) << 23) | (mant & 0x7FFFFFu);
                               });
  return rc::gen::weightedOneOf<std::uint32_t>({
      {3, rc::gen::resize(100, rc::gen::arbitrary<std::uint32_t>())},
      {2, rc::gen::elementOf(special_float_bits())},
      {3, ordinary},
  });
}

// Finite only (no NaN, no inf).
inline rc::Gen<std::uint32_t> finite_float_bits() {
  return rc::gen::suchThat(float_bits(), [](std::uint32_t u) { return is_finite_bits(u); });
}

// A full-width 32-bit seed that never shrinks (bulk data is derived from it).
inline rc::Gen<std::uint32_t> seed() { return rc::gen::noShrink(rc::gen::resize(100, rc::gen::arbitrary<std::uint32_t>())); }

// ---- data matrices -----------------------------------------------------------------------

enum class Dist {
  kRandn,            // N(0, sigma^2), sigma a random power of two in 2^-8..2^8
  kUniform,          // U(-a, a), a a random power of two in 2^-8..2^8
  kBlockLogUniform,  // per 16x16 tile and per 1x16 block, magnitudes 2^-150..2^127 (subnormal..huge)
  kSpecials,         // ~30 % special values (zeros, subnormals, limits, inf, NaN, ties), rest randn
  kGrid,             // E2M1 grid and tie points times a per-tile power of two
  kBf16,             // randn rounded to BF16 (8 significant bits) times a per-tile power of two:
                     // few mantissa bits make exact E4M3/E2M1 ties common (NUMERICS §6.7-§6.9)
};

inline std::ostream& operator<<(std::ostream& os, Dist d) {
  static constexpr std::string_view names[] = {"randn", "uniform", "block-log-uniform", "specials", "grid", "bf16"};
  return os << names[static_cast<int>(d)];
}

inline rc::Gen<Dist> dist() {
  return rc::gen::element(Dist::kRandn, Dist::kUniform, Dist::kBlockLogUniform, Dist::kSpecials, Dist::kGrid, Dist::kBf16);
}

struct DataOptions {
  bool finite = false;        // replace NaN and +-inf by finite values
  bool non_negative = false;  // clear every sign bit (|x|; -0.0 becomes +0.0)
  bool no_negative_zero = false;
};

// Deterministic fill of an [M, K] matrix from (dist, seed); M and K need not be multiples of 16.
inline FloatMatrix fill_data(Shape s, Dist d, std::uint32_t seed_value, DataOptions opts = {}) {
  std::mt19937 rng(seed_value);
  FloatMatrix x = xt::zeros<float>({s.M, s.K});
  auto pow2 = [&](int lo, int hi) { return std::ldexp(1.0f, std::uniform_int_distribution<int>(lo, hi)(rng)); };
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::vector<std::uint32_t>& specials = special_float_bits();
  const std::size_t tiles_r = (s.M + 15) / 16, tiles_c = (s.K + 15) / 16;
  switch (d) {
    case Dist::kRandn: {
      const float sigma = pow2(-8, 8);
      for (float& v : x) v = normal(rng) * sigma;
      break;
    }
    case Dist::kUniform: {
      const float a = pow2(-8, 8);
      std::uniform_real_distribution<float> u(-a, a);
      for (float& v : x) v = u(rng);
      break;
    }
    case Dist::kBlockLogUniform: {
      std::uniform_int_distribution<int> tile_exp(-140, 120), block_off(-8, 7), elem_drop(0, 12);
      std::uniform_real_distribution<float> frac(1.0f, 2.0f);
      std::bernoulli_distribution neg(0.5);
      std::vector<int> te(tiles_r * tiles_c);
      for (int& e : te) e = tile_exp(rng);
      for (std::size_t r = 0; r < s.M; ++r)
        for (std::size_t jb = 0; jb < tiles_c; ++jb) {
          const int e = te[(r / 16) * tiles_c + jb] + block_off(rng);
          for (std::size_t c = 16 * jb; c < std::min(s.K, 16 * jb + 16); ++c) {
            const float v = std::ldexp(frac(rng), std::min(e - elem_drop(rng), 127));
            x(r, c) = neg(rng) ? -v : v;
          }
        }
      break;
    }
    case Dist::kSpecials: {
      std::bernoulli_distribution special(0.3);
      std::uniform_int_distribution<std::size_t> which(0, specials.size() - 1);
      const float sigma = pow2(-4, 4);
      for (float& v : x) v = special(rng) ? float_of(specials[which(rng)]) : normal(rng) * sigma;
      break;
    }
    case Dist::kGrid: {
      // Grid values (|code| 0..7) and tie points, so scaled elements land on or between codes.
      static constexpr float grid[] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f, 3.0f, 4.0f, 6.0f,
                                       0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
      std::uniform_int_distribution<int> idx(0, 14), tile_exp(-20, 20);
      std::bernoulli_distribution neg(0.5);
      std::vector<int> te(tiles_r * tiles_c);
      for (int& e : te) e = tile_exp(rng);
      for (std::size_t r = 0; r < s.M; ++r)
        for (std::size_t c = 0; c < s.K; ++c) {
          const float v = std::ldexp(grid[idx(rng)], te[(r / 16) * tiles_c + c / 16]);
          x(r, c) = neg(rng) ? -v : v;
        }
      break;
    }
    case Dist::kBf16: {
      std::uniform_int_distribution<int> tile_exp(-12, 12);
      std::vector<int> te(tiles_r * tiles_c);
      for (int& e : te) e = tile_exp(rng);
      for (std::size_t r = 0; r < s.M; ++r)
        for (std::size_t c = 0; c < s.K; ++c) {
          const std::uint32_t u = bits_of(std::ldexp(normal(rng), te[(r / 16) * tiles_c + c / 16]));
          x(r, c) = float_of((u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u);  // RNE to BF16
        }
      break;
    }
  }
  std::uniform_real_distribution<float> finite_fill(-8.0f, 8.0f);
  for (float& v : x) {
    if (opts.finite && !std::isfinite(v)) v = finite_fill(rng);
    if (opts.non_negative) v = float_of(bits_of(v) & 0x7FFFFFFFu);
    if (opts.no_negative_zero && bits_of(v) == 0x80000000u) v = 0.0f;
  }
  return x;
}

// A data matrix with the recipe that rebuilt it (printed in counterexamples).
struct DataMatrix {
  Shape shape;
  Dist dist = Dist::kRandn;
  std::uint32_t seed = 0;
  FloatMatrix x;
};

inline std::ostream& operator<<(std::ostream& os, const DataMatrix& d) {
  return os << "DataMatrix{" << d.shape << ", " << d.dist << ", seed=0x" << std::hex << d.seed << std::dec << "}";
}

inline rc::Gen<DataMatrix> data_matrix(rc::Gen<Shape> shapes, DataOptions opts = {}) {
  return rc::gen::map(rc::gen::tuple(std::move(shapes), dist(), seed()), [opts](const std::tuple<Shape, Dist, std::uint32_t>& t) {
    const auto [s, d, sd] = t;
    return DataMatrix{s, d, sd, fill_data(s, d, sd, opts)};
  });
}

inline rc::Gen<DataMatrix> data_matrix(std::size_t max_dim, DataOptions opts = {}) { return data_matrix(shape16(max_dim), opts); }

// Random bytes [rows, cols] from a seed (packed data, scale buffers).
inline ByteMatrix fill_bytes(std::size_t rows, std::size_t cols, std::uint32_t seed_value) {
  std::mt19937 rng(seed_value);
  std::uniform_int_distribution<int> byte(0, 255);
  ByteMatrix b = xt::zeros<std::uint8_t>({rows, cols});
  for (std::uint8_t& v : b) v = std::uint8_t(byte(rng));
  return b;
}

// ---- profiles ----------------------------------------------------------------------------

// A named profile of all_profiles(), printed by name.
struct ProfileRef {
  const NamedProfile* p = nullptr;
  const Profile& knobs() const { return p->knobs; }
  std::string_view name() const { return p->name; }
};

inline std::ostream& operator<<(std::ostream& os, const ProfileRef& r) { return os << "profile " << r.p->name; }

inline rc::Gen<ProfileRef> profile() {
  std::vector<ProfileRef> v;
  for (const NamedProfile& p : all_profiles()) v.push_back(ProfileRef{&p});
  return rc::gen::elementOf(v);  // shrinks towards the first profile, `te`
}

}  // namespace nvfp4::fuzz
