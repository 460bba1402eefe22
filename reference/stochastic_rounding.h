// Stochastic rounding (docs/NUMERICS.md §3.18): the element function and the canonical
// assignment of random bits to elements. Shared by the CPU reference and the CUDA kernels; the
// Philox generator itself is not (reference/philox.h uses Random123, the kernels CUDA's own), so
// that the two sides check each other.
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
  const float t = fma_rn(u, e2m1_step(a), a);               // one rounding, as the fma in TE
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

// sr_e2m1(y, r8)'s value divided by 64, r8 = byte l of `word` (sr_byte's rule), by binary32
// arithmetic, for kernels: the same contract as e2m1_hw_value_over_64 (an exact E4M3 value whose
// E4M3 byte gives the code through e2m1_codes_of_e4m3_bytes; a NaN keeps its sign, and kernels
// pass only positive ones). The steps, each exact or the one rounding of §3.18.1:
//  * Clamping |y| to 6 changes nothing (above 6 the result is 6 anyway) and turns NaN into 6.
//  * All of §3.18.1 scaled by 2^-6 (a scaling by a power of two commutes with its one rounding:
//    r8 > 0 keeps t above 2^-15, and with r8 = 0 t is a). The step of a is the last place of a's
//    magic number M (e2m1_magic_over_64), so M with r8 in its low byte is M + r8 * step, and less M
//    it is r8 * step, exactly; t = fma(r8 * step, 2^-8, a) is §3.18.1's fma(u, step, a).
//  * floor(t / step(t)) * step(t) is t truncated to a multiple of a's step instead of t's, by adding
//    M in round-toward-zero: where t has left a's E2M1 binade for the next one, starting at B, t is
//    below B + step(a) (u <= 255/256, and t's rounding is far finer than step(a) / 256), and both
//    steps truncate it to B.
NVFP4_HD float sr_e2m1_value_over_64(float y, std::uint32_t word, unsigned l) {
  const float a = e2m1_magnitude_over_64(y);
  const float m = e2m1_magic_over_64(a);
  const float r8_steps = add_rn(float_of(with_low_byte(bits_of(m), word, l)), -m);
  const float t = fma_rn(r8_steps, 0.00390625f, a);
  return with_sign_of(add_rn(add_rz(t, m), -m), y);
}

}  // namespace nvfp4
