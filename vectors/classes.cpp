#include "vectors/classes.h"

#include <cmath>
#include <cstdlib>

#include "reference/arith.h"
#include "reference/constants.h"
#include "reference/half_float.h"

namespace nvfp4::vectors {
namespace {

using io::FloatType;
using Values = std::array<float, 16>;
using constants::bf16_max;
using constants::flt_max;
using constants::flt_min;

// ---- values exact in an input dtype ----

float narrow(float v, FloatType t) {
  switch (t) {
    case FloatType::F32:
      return v;
    case FloatType::BF16:
      return bf16_to_float(float_to_bf16(v));
    case FloatType::F16:
      return half_to_float(float_to_half(v));
  }
  return v;
}

// v moved n ulps of dtype t away from zero (toward it for n < 0); zeros and non-finite values stay.
float step_ulps(float v, FloatType t, int n) {
  if (v == 0.0f || !std::isfinite(v)) return v;
  switch (t) {
    case FloatType::F32:
      return float_of((bits_of(v) & 0x80000000u) | ((bits_of(v) & 0x7FFFFFFFu) + std::uint32_t(n)));
    case FloatType::BF16: {
      const std::uint16_t h = float_to_bf16(v);
      return bf16_to_float(std::uint16_t((h & 0x8000u) | ((h & 0x7FFFu) + n)));
    }
    case FloatType::F16: {
      const std::uint16_t h = float_to_half(v);
      return half_to_float(std::uint16_t((h & 0x8000u) | ((h & 0x7FFFu) + n)));
    }
  }
  return v;
}

float dtype_max(FloatType t) { return t == FloatType::F32 ? flt_max() : t == FloatType::BF16 ? bf16_max() : 65504.0f; }
float dtype_min_normal(FloatType t) { return t == FloatType::F16 ? std::ldexp(1.0f, -14) : flt_min(); }
float dtype_min_subnormal(FloatType t) {
  return t == FloatType::F32 ? std::ldexp(1.0f, -149) : t == FloatType::BF16 ? std::ldexp(1.0f, -133) : std::ldexp(1.0f, -24);
}

// ---- patterns: values in units of A/6, the block maximum +-6 written as +-A exactly ----

Values in_units(const Values& units, float A, FloatType t, int ulps = 0) {
  const float u = div_rn(A, 6.0f);
  Values out;
  for (std::size_t i = 0; i < 16; ++i) {
    const float v = units[i];
    out[i] = std::fabs(v) == 6.0f ? std::copysign(A, v) : step_ulps(narrow(mul_rn(v, u), t), t, ulps);
  }
  return out;
}

constexpr Values kGrid = {6, -4, 3, -2, 1.5f, -1, 0.5f, -0.0f, 0, -0.5f, 1, -1.5f, 2, -3, 4, -6};
constexpr Values kMidpoints = {6, 0.25f, -0.75f, 1.25f, -1.75f, 2.5f, -3.5f, 5, -0.25f, 0.75f, -1.25f, 1.75f, -2.5f, 3.5f, -5, 0};
constexpr Values kSignedZeros = {6,     -0.0f, 0,      0.125f, -0.125f, 0.25f,   -0.25f,   0.2f,
                                 -0.2f, 0.26f, -0.26f, -0.0f,  0,       0.0625f, -0.0625f, -6};
constexpr Values kQuarters = {6,       0.125f, -0.375f, 0.625f, -0.875f, 1.125f, -1.375f, 1.625f,
                              -1.875f, 2.25f,  -2.75f,  3.25f,  -3.75f,  4.5f,   -5.5f,   0};

// The dtype's subnormals (and the normals beside them) in a block whose maximum is A.
Values subnormals(float A, FloatType t) {
  const float s = dtype_min_subnormal(t), n = dtype_min_normal(t);
  return {A, s, -s, 2 * s, 3 * s, -5 * s, n - s, -(n - s), n, -n, narrow(n / 2 + s, t), 0, -0.0f, 7 * s, -64 * s, -A};
}

constexpr Pattern kPatterns[] = {
    {"grid", "exact E2M1 grid values of both signs, +0 and -0", Level::k1,
     [](float A, FloatType t) { return in_units(kGrid, A, t); }},
    {"midpoints", "every E2M1 midpoint exactly (ties to even)", Level::k1,
     [](float A, FloatType t) { return in_units(kMidpoints, A, t); }},
    {"midpoints-up", "one ulp of the input dtype above each midpoint's magnitude", Level::k1,
     [](float A, FloatType t) { return in_units(kMidpoints, A, t, 1); }},
    {"midpoints-down", "one ulp of the input dtype below each midpoint's magnitude", Level::k2,
     [](float A, FloatType t) { return in_units(kMidpoints, A, t, -1); }},
    {"signed-zeros", "+0, -0 and values around the 0 / 0.5 tie of both signs", Level::k2,
     [](float A, FloatType t) { return in_units(kSignedZeros, A, t); }},
    {"quarter-points", "values a quarter into each E2M1 bin (no tie)", Level::k2,
     [](float A, FloatType t) { return in_units(kQuarters, A, t); }},
    {"subnormals", "subnormal inputs of the dtype beside its smallest normals", Level::k2, subnormals},
};

// ---- regimes ----

constexpr std::uint32_t kG2688 = 0x45280000;  // S_enc = 1 under TE: the block scale is A/6 itself

std::array<float, 2> same(float a) { return {a, a}; }

// A BF16-exact value (1 + m/128) * 2^e, e in [-8, 8]: exact in every input dtype.
float seeded_amax(cases::SplitMix64& rng) {
  const int e = int(rng.below(17)) - 8;
  return std::ldexp(1.0f + float(rng.below(128)) / 128.0f, e);
}

// Elements at pattern index 0 (each block's maximum position) replaced by v, keeping the sign.
void at_maximum(FloatMatrix& x, float v) {
  for (std::size_t r = 0; r < x.shape(0); ++r)
    for (std::size_t c = 0; c < x.shape(1); ++c)
      if ((r + c) % 16 == 0) x(r, c) = std::isnan(v) ? v : std::copysign(v, x(r, c));
}

void row_spread(FloatMatrix& x, FloatType t) {
  for (std::size_t r = 0; r < x.shape(0); ++r) {
    const int e = t == FloatType::F16 ? int(r % 16) - 8 : 8 * int(r % 16) - 60;
    for (std::size_t c = 0; c < x.shape(1); ++c) x(r, c) = std::ldexp(x(r, c), e);
  }
}

using cases::SplitMix64;

const Regime kRegimes[] = {
    {"zero", "every element +-0: g = 0, the S = 1 rules and zero blocks", [](FloatType, SplitMix64&) { return same(0); },
     std::nullopt, nullptr},
    {"zero-amax-given", "amax 0 given with nonzero content: the g = 0 guard", [](FloatType, SplitMix64&) { return same(6); },
     0x00000000u, nullptr},
    {"unit-scale", "amax 2688 given: S_enc = 1, the block scale is A/6 = 1 and ties land exactly",
     [](FloatType, SplitMix64&) { return same(6); }, kG2688, nullptr},
    {"at-global", "block amax = global amax = 6: scale 448 (0x7E), encode factor 1 (§6.11)",
     [](FloatType, SplitMix64&) { return same(6); }, std::nullopt, nullptr},
    {"seeded", "block amaxes drawn from the seed, amax computed: ordinary blocks below the global amax",
     [](FloatType, SplitMix64& rng) {
       return std::array<float, 2>{seeded_amax(rng), seeded_amax(rng)};
     },
     std::nullopt, nullptr},
    {"order-a", "§6.7: same scale byte, the encode chain decides a tie",
     [](FloatType, SplitMix64&) { return same(float_of(0x3F5F0000)); }, 0x40BA0000u, nullptr},
    {"order-b", "§6.8: the scale byte depends on whether A/6 is rounded first",
     [](FloatType, SplitMix64&) { return same(float_of(0x3EC30000)); }, 0x40820000u, nullptr},
    {"order-c1", "§6.9 C1: codes flip the other way", [](FloatType, SplitMix64&) { return same(float_of(0x3F330000)); },
     0x40D50000u, nullptr},
    {"order-c2", "§6.9 C2: a tiny block under a small global amax",
     [](FloatType, SplitMix64&) { return same(float_of(0x3A490000)); }, 0x40E40000u, nullptr},
    {"scale-tie", "pre-cast block scales exactly on E4M3 ties: 0.1953125 (0x24/0x25) and 1.5 * 2^-9 (subnormal)",
     [](FloatType, SplitMix64&) {
       return std::array<float, 2>{6 * 0.1953125f, 6 * 0.0029296875f};
     },
     kG2688, nullptr},
    {"scale-subnormal", "block scales 2^-8 and 3 * 2^-9: E4M3 subnormals",
     [](FloatType, SplitMix64&) {
       return std::array<float, 2>{6 * 0.00390625f, 6 * 0.005859375f};
     },
     kG2688, nullptr},
    {"scale-underflow", "block scales 2^-11 and 2^-10 (the underflow tie): E4M3 0, the ZERO and LO rules",
     [](FloatType, SplitMix64&) {
       return std::array<float, 2>{6 * 0.00048828125f, 6 * 0.0009765625f};
     },
     kG2688, nullptr},
    {"scale-saturate", "block scales 512 and 464 (E4M3's overflow tie): saturation, NaN or clamp",
     [](FloatType, SplitMix64&) {
       return std::array<float, 2>{6 * 512.0f, 6 * 464.0f};
     },
     kG2688, nullptr},
    {"dtype-max", "the input dtype's largest finite value as the amax",
     [](FloatType t, SplitMix64&) { return same(dtype_max(t)); }, std::nullopt, nullptr},
    {"tiny-global", "6 times the dtype's smallest normal as the amax: S_enc overflows (F32, BF16)",
     [](FloatType t, SplitMix64&) { return same(6 * dtype_min_normal(t)); }, std::nullopt, nullptr},
    {"inf", "+inf (even tile columns) and -inf (odd) at each block's maximum position: g = inf",
     [](FloatType, SplitMix64&) { return same(6); }, std::nullopt, [](FloatMatrix& x, FloatType) { at_maximum(x, INFINITY); }},
    {"nan", "NaN at each block's maximum position: the AMAX NaN rules and NaN codes",
     [](FloatType, SplitMix64&) { return same(6); }, std::nullopt, [](FloatMatrix& x, FloatType) { at_maximum(x, NAN); }},
    {"row-spread", "rows scaled by 2^-60 .. 2^60 (F16: 2^-8 .. 2^7): row amaxes orders of magnitude apart",
     [](FloatType, SplitMix64&) { return same(6); }, std::nullopt, row_spread},
};

}  // namespace

std::span<const Regime> regimes() { return kRegimes; }

std::span<const Pattern> patterns(Level level) {
  std::size_t n = 0;
  while (n < std::size(kPatterns) && kPatterns[n].level <= level) ++n;
  return std::span<const Pattern>(kPatterns, n);
}

FloatMatrix lay_out(const Regime& regime, const Pattern& pattern, std::int64_t M, std::int64_t K, io::FloatType t,
                    cases::SplitMix64& rng) {
  const std::array<float, 2> A = regime.amaxes(t, rng);
  const std::array<Values, 2> v = {pattern.values(narrow(A[0], t), t), pattern.values(narrow(A[1], t), t)};
  FloatMatrix x = xt::empty<float>({std::size_t(M), std::size_t(K)});
  for (std::size_t r = 0; r < std::size_t(M); ++r)
    for (std::size_t c = 0; c < std::size_t(K); ++c) {
      const std::size_t tile = (c / 16) % 2;
      const float e = v[tile][(r + c) % 16];
      x(r, c) = tile ? -e : e;
    }
  if (regime.edit) regime.edit(x, t);
  return x;
}

}  // namespace nvfp4::vectors
