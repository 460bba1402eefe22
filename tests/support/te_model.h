// An independent model of te quantization, own code from the NUMERICS.md text (§2.1-§2.2,
// §3.1, §3.5-§3.12); it shares nothing with reference/formulas.h, so that the quantize tests can
// take expected values from it.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "reference/quantize.h"

namespace nvfp4::test_support {

inline float fbits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline std::uint32_t ubits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// §2.1.1 code table.
inline constexpr std::array<float, 16> kF4 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                              -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// §2.2.1 decoding.
inline float f8_ref(std::uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 0xF, m = b & 7;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  const double mag = e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
  return float(s ? -mag : mag);
}

// §2.2.2 e4m3sat by brute force over the positive grid (ties -> even byte).
inline std::uint8_t e4m3sat_ref(float v) {
  if (std::isnan(v)) return 0x7F;
  const std::uint8_t s = std::signbit(v) ? 0x80 : 0x00;
  const double a = std::fabs(double(v));
  if (a <= std::ldexp(1.0, -10)) return s;
  if (a > 464.0) return s | 0x7E;
  int best = 0;
  double best_d = std::fabs(a - f8_ref(0));
  for (int b = 1; b <= 0x7E; ++b) {
    const double d = std::fabs(a - f8_ref(std::uint8_t(b)));
    if (d < best_d || (d == best_d && b % 2 == 0)) best = b, best_d = d;
  }
  return std::uint8_t(s | best);
}

// §2.1.2 e2m1 (HW).
inline std::uint8_t e2m1_ref(float v) {
  if (std::isnan(v)) return 0x7;
  const std::uint8_t s = std::signbit(v) ? 8 : 0;
  const float a = std::fabs(v);
  std::uint8_t m;
  if (a <= 0.25f)
    m = 0;
  else if (a < 0.75f)
    m = 1;
  else if (a <= 1.25f)
    m = 2;
  else if (a < 1.75f)
    m = 3;
  else if (a <= 2.5f)
    m = 4;
  else if (a < 3.5f)
    m = 5;
  else if (a <= 5.0f)
    m = 6;
  else
    m = 7;
  return s | m;
}

inline const float kFltMax = std::numeric_limits<float>::max();
inline const float kR6 = fbits(0x3E2AAAABu);
inline const float kR2688 = fbits(0x39C30C31u);

// §3.1 IGNORE: max |x| over non-NaN elements, +0 if none.
inline float amax_ignore_ref(const float* p, std::size_t n, std::size_t stride = 1) {
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = std::fabs(p[i * stride]);
    if (!std::isnan(a) && a > m) m = a;
  }
  return m;
}

struct TeScale {
  float S, Sd;
};
// §3.5 (std::fmin is C99 fminf: a NaN operand is ignored).
inline TeScale te_global_ref(float g) {
  float S = std::fmin(2688.0f / g, kFltMax);
  if (g == 0.0f || S == 0.0f) S = 1.0f;
  return {S, 1.0f / S};
}

// §3.6-§3.8 for one block of 16 values with block amax A: scale byte and 16 codes.
inline std::uint8_t te_block_ref(const float* x, std::size_t stride, float A, TeScale gs, std::uint8_t* codes) {
  const float m = gs.S * kR6;
  const float sd = std::fmin(A * m, kFltMax);
  const std::uint8_t sf = e4m3sat_ref(sd);
  const float p = f8_ref(sf) * gs.Sd;
  const float enc = std::fmin(1.0f / p, kFltMax);
  for (int i = 0; i < 16; ++i) codes[i] = e2m1_ref(x[i * stride] * enc);
  return sf;
}

// Rowwise te quantization of x [M, K] with per-row global amax g_row (§3.9, §3.12); 2D tiles
// when two_d (§3.11). Returns (data, compact scales) computed by the model.
struct RefOut {
  ByteMatrix data, scale;
};
inline RefOut te_rowwise_ref(const FloatMatrix& x, const std::vector<float>& g_row, bool two_d) {
  const std::size_t M = x.shape(0), K = x.shape(1);
  RefOut o;
  o.data = xt::zeros<std::uint8_t>({M, K / 2});
  o.scale = xt::zeros<std::uint8_t>({(M + 127) / 128 * 128, (K / 16 + 3) / 4 * 4});
  for (std::size_t r = 0; r < M; ++r) {
    const TeScale gs = te_global_ref(g_row[r]);
    for (std::size_t j = 0; j < K / 16; ++j) {
      float A = 0.0f;
      if (two_d) {
        const std::size_t r0 = r / 16 * 16;
        for (std::size_t rr = r0; rr < r0 + 16; ++rr) A = std::max(A, amax_ignore_ref(&x(rr, 16 * j), 16));
      } else {
        A = amax_ignore_ref(&x(r, 16 * j), 16);
      }
      std::uint8_t q[16];
      o.scale(r, j) = te_block_ref(&x(r, 16 * j), 1, A, gs, q);
      for (int i = 0; i < 16; i += 2) o.data(r, 8 * j + i / 2) = std::uint8_t(q[i] | (q[i + 1] << 4));
    }
  }
  return o;
}

}  // namespace nvfp4::test_support
