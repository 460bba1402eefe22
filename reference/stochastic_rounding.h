// Stochastic rounding (docs/NUMERICS.md §3.18): the element function and the canonical
// assignment of random bits to elements. Shared by the CPU reference and the CUDA kernels; the
// Philox generator itself is not (reference/philox.h uses Random123, the kernels
// device/kernels/philox.cuh), so that the two sides check each other.
#pragma once

#include <cstdint>

#include "reference/arith.h"
#include "reference/e2m1.h"

namespace nvfp4 {

struct PhiloxCounter {
  std::uint32_t x = 0, y = 0, z = 0, w = 0;
};
NVFP4_HD bool operator==(const PhiloxCounter& a, const PhiloxCounter& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w;
}
struct PhiloxKey {
  std::uint32_t x = 0, y = 0;
};

// Which stored copy an element belongs to (the `dir` of §3.18.3).
enum class SrDirection : std::uint32_t { kRowwise = 0, kColumnwise = 1 };

// §3.18.3: one Philox draw per 16-element block of the stored copy; `block` = i >> 4 for the
// element's linear index i in the stored orientation (rowwise r*K+c, columnwise c*M+r).
NVFP4_HD PhiloxCounter sr_counter(std::uint64_t offset, SrDirection dir, std::uint64_t block) {
  const std::uint64_t sub = block | (std::uint64_t(dir) << 63);
  return {std::uint32_t(offset), std::uint32_t(offset >> 32), std::uint32_t(sub), std::uint32_t(sub >> 32)};
}
NVFP4_HD PhiloxKey sr_key(std::uint64_t seed) { return {std::uint32_t(seed), std::uint32_t(seed >> 32)}; }

// The random byte of element e (0..15) of a block from its draw: word (e >> 2) & 3, byte e & 3.
NVFP4_HD std::uint8_t sr_byte(const PhiloxCounter& draw, unsigned e) {
  const unsigned word = (e >> 2) & 3u;
  const std::uint32_t bits = word == 0 ? draw.x : word == 1 ? draw.y : word == 2 ? draw.z : draw.w;
  return std::uint8_t(bits >> (8 * (e & 3u)));
}

// The spacing of the E2M1 grid at and above a magnitude: 0.5 below 2, 1 below 4, then 2.
NVFP4_HD float e2m1_step(float a) { return a >= 4.0f ? 2.0f : (a >= 2.0f ? 1.0f : 0.5f); }

// §3.18.1, TransformerEngine's software definition: y (the scaled element) rounded up to the
// next grid point when its fraction of the step plus r8/256 reaches 1. Grid points never move;
// NaN -> 0x7, +-inf -> 0x7/0xF, -0.0 -> 0x8.
NVFP4_HD std::uint8_t sr_e2m1(float y, std::uint8_t r8) {
  const float u = mul_rn(float(r8), float_of(0x3B800000u));  // r8 / 256, exact
  const float a = abs_f(y);
  const float t = fma_rn(u, e2m1_step(a), a);  // one rounding, as the fma in TE
  const float inv_t = t >= 4.0f ? 0.5f : (t >= 2.0f ? 1.0f : 2.0f);
  // floor(t / step) * step: both products exact; NaN and +inf t saturate through fminf to 6.
  const float qv = fmin_c99(mul_rn(floor_f(mul_rn(t, inv_t)), e2m1_step(t)), 6.0f);
  const bool negative = !is_nan(y) && sign_bit(y);
  return e2m1_hw(negative ? -qv : qv);  // qv is on the grid: the encoder is exact here
}

// `bits`, whose low byte is zero, with byte l of `word` in that byte: one byte permutation on the
// GPU.
NVFP4_HD std::uint32_t with_low_byte(std::uint32_t bits, std::uint32_t word, unsigned l) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(word, bits, 0x7650u | l);
#else
  return bits | ((word >> (8 * l)) & 0xFFu);
#endif
}

// e2m1_magnitude_over_64(y) + 2^-32, rounded toward zero: the magnitude of sr_e2m1_value_over_64.
// On the GPU one FFMA.RZ of |y| (an operand modifier) before the minimum with 6/64, which gives
// the same value: 6/64 + 2^-32 truncates to 6/64, and |y| / 64 is exact down to 2^-120, below
// which the sum toward zero is 2^-32 either way.
NVFP4_HD float sr_magnitude_over_64(float y) {
#if defined(__CUDA_ARCH__)
  return fminf(__fmaf_rz(fabsf(y), 0.015625f, 0x1p-32f), 0.09375f);
#else
  return add_rz(e2m1_magnitude_over_64(y), 0x1p-32f);
#endif
}
// e2m1_magic_over_64(a) / 256: its last place is a's E2M1 step divided by 256.
NVFP4_HD float sr_magic_over_64(float a) { return float_of(bits_of(e2m1_magic_over_64(a)) - (8u << 23)); }

// sr_e2m1(y, r8)'s value divided by 64, r8 = byte l of `word` (sr_byte's rule), by binary32
// arithmetic, for kernels: the same contract as e2m1_hw_value_over_64 (an exact E4M3 value whose
// E4M3 byte gives the code through e2m1_codes_of_e4m3_bytes; a NaN keeps its sign, and kernels
// pass only positive ones). Two instructions an element more than round-to-nearest: the byte
// permutation and the truncation. Over 64, with s the E2M1 step of a = |y| / 64 (2^(E-1), E the
// exponent of max(a, 2^-6)) and x = a + (r8 / 256) * s exactly, §3.18.1 is floor(t / s(t)) * s(t)
// with t = RN(x):
//  * Where a >= 2^-6, x is exact in a's binade (r8 * s / 256 is a multiple of a's last place); past
//    it, x is below B + s, B the next binade's start, which both floors truncate to B. So the
//    result is floor(x / s) * s.
//  * Where a < 2^-6 (s = 2^-7), RN(x) reaches 2^-7 exactly when x >= 2^-7 - 2^-32 (half the last
//    place below 2^-7; the tie goes to 2^-7, the even neighbour), and 2^-6 exactly when x does. So
//    the result is floor((x + 2^-32) / s) * s, and adding 2^-32 toward zero to a does that: it is
//    exact for a < 2^-8, and where a's last place is larger it changes nothing, as it must (x is
//    then a multiple of 2^-31, never in [2^-7 - 2^-32, 2^-7)).
//  * Clamping |y| to 6 changes nothing (above 6 the result is 6 anyway) and turns NaN into 6.
//  * The floor: N = 2^(E+14) (sr_magic_over_64) has last place s / 256, so N with r8 in its low
//    byte is N + r8 * s / 256, and adding a toward zero gives N + x truncated to a multiple of
//    s / 256 (the sum stays below 2^(E+15)). Its 8 low bits cleared, it is N + floor(x / s) * s;
//    subtracting N is exact.
NVFP4_HD float sr_e2m1_value_over_64(float y, std::uint32_t word, unsigned l) {
  const float a = sr_magnitude_over_64(y);
  const float n = sr_magic_over_64(a);
  const float sum = add_rz(a, float_of(with_low_byte(bits_of(n), word, l)));
  return with_sign_of(add_rn(float_of(bits_of(sum) & ~0xFFu), -n), y);
}

}  // namespace nvfp4
