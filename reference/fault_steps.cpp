#include "reference/fault_steps.h"

#include <algorithm>
#include <array>
#include <utility>

#include "reference/hadamard.h"
#include "reference/scale_layout.h"

namespace nvfp4::faults {
namespace {

// The non-negative E2M1 grid, by magnitude code.
constexpr std::array<float, 8> kGrid = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

std::uint8_t with_sign(float y, std::uint8_t magnitude) { return std::uint8_t((sign_bit(y) ? 0x8 : 0x0) | magnitude); }

// The profile's code for a zero of y's sign: encoders differ on -0 (0x8 or 0x0).
std::uint8_t zero_code(E2M1Encoder e, float y) { return e2m1_encode(e, sign_bit(y) ? -0.0f : 0.0f); }

}  // namespace

std::uint8_t e2m1_ties_away(E2M1Encoder e, float y) {
  const float a = abs_f(y);
  for (std::uint8_t m = 1; m < 8; ++m)  // the tie below grid point m goes up to m
    if (a == 0.5f * (kGrid[m - 1] + kGrid[m])) return with_sign(y, m);
  return e2m1_encode(e, y);
}

std::uint8_t e2m1_toward_zero(E2M1Encoder e, float y) {
  if (is_nan(y)) return e2m1_encode(e, y);
  const float a = abs_f(y);
  std::uint8_t m = 7;
  while (m > 0 && kGrid[m] > a) --m;
  return m == 0 ? zero_code(e, y) : with_sign(y, m);
}

std::uint8_t e2m1_no_saturation(E2M1Encoder e, float y) {
  return !is_nan(y) && abs_f(y) > 6.0f ? zero_code(e, y) : e2m1_encode(e, y);
}

std::uint8_t e4m3_ties_up(E4M3Cast cast, float t) {
  const std::uint8_t b = e4m3_cast(cast, t), m = b & 0x7F;
  if (is_nan(t) || m >= 0x7E) return b;  // NaN, or no larger finite neighbour
  const float lo = e4m3_decode(m), hi = e4m3_decode(std::uint8_t(m + 1));
  return abs_f(t) == 0.5f * (lo + hi) ? std::uint8_t((b & 0x80) | (m + 1)) : b;  // lo + hi is exact: neighbours
}

float e4m3_decode_subnormal_as_normal(std::uint8_t b) {
  if ((b & 0x78) != 0) return e4m3_decode(b);               // normal or NaN: decoded as specified
  const float v = (1.0f + float(b & 0x7) / 8.0f) / 128.0f;  // no exponent-0 branch, zero included; exact
  return (b & 0x80) ? -v : v;
}

float amax_signed_step(AmaxRule rule, float acc, float x) {
  if (rule != AmaxRule::IGNORE && (is_nan(acc) || is_nan(x))) return canonical_nan();
  return fmax_c99(acc, x);  // x itself, not |x|
}

GlobalScale global_scale_no_zero_guard(GlobalScaleRule rule, float g) {
  if (rule != GlobalScaleRule::TE || g != 0.0f) return global_scale(rule, g);
  GlobalScale r;
  r.S = fmin_c99(div_rn(constants::kFp4TimesFp8Max, g), constants::flt_max());  // 2688/0 = inf -> FLT_MAX
  r.Sd = div_rn(1.0f, r.S);
  r.G = r.S;
  return r;
}

GlobalScale global_scale_reciprocal(GlobalScaleRule rule, float g) {
  GlobalScale r = global_scale(rule, g);
  std::swap(r.S, r.Sd);
  return r;
}

void block_amax_span_32(AmaxRule rule, FloatMatrix& a) {
  for (std::size_t r = 0; r < a.shape(0); ++r)
    for (std::size_t j = 0; j + 1 < a.shape(1); j += 2) a(r, j) = a(r, j + 1) = amax_combine(rule, a(r, j), a(r, j + 1));
}

namespace {

// off(r, c) of §2.4.2 with the 128 rows of a tile in plain order.
std::size_t plain_rows_offset(std::size_t r, std::size_t c, std::size_t cols) {
  return ((r / 128) * (cols / 4) + c / 4) * 512 + (r % 128) * 4 + c % 4;
}

}  // namespace

ByteMatrix swizzle_scales_plain_rows(const ByteMatrix& compact) {
  ByteMatrix out = swizzle_scales(compact);  // the shape checks and the padding of the specified swizzle
  for (std::size_t r = 0; r < compact.shape(0); ++r)
    for (std::size_t c = 0; c < compact.shape(1); ++c) out.data()[plain_rows_offset(r, c, compact.shape(1))] = compact(r, c);
  return out;
}

ByteMatrix unswizzle_scales_plain_rows(const ByteMatrix& swizzled) {
  ByteMatrix out = unswizzle_scales(swizzled);
  for (std::size_t r = 0; r < swizzled.shape(0); ++r)
    for (std::size_t c = 0; c < swizzled.shape(1); ++c) out(r, c) = swizzled.data()[plain_rows_offset(r, c, swizzled.shape(1))];
  return out;
}

ByteMatrix swap_nibbles(const ByteMatrix& data) {
  ByteMatrix out = data;
  for (std::uint8_t& b : out) b = std::uint8_t((b << 4) | (b >> 4));
  return out;
}

ByteMatrix scales_per_32(const ByteMatrix& compact) {
  ByteMatrix out = compact;
  for (std::size_t r = 0; r < out.shape(0); ++r)
    for (std::size_t j = 1; j < out.shape(1); j += 2) out(r, j) = compact(r, j - 1);
  return out;
}

std::uint16_t reverse_mask_bits(std::uint16_t mask) {
  std::uint16_t out = 0;
  for (int k = 0; k < 16; ++k) out = std::uint16_t(out | (((mask >> k) & 1u) << (15 - k)));
  return out;
}

FloatMatrix rht_without_norm(const FloatMatrix& x, std::uint16_t mask, RhtSum sum) {
  FloatMatrix x4 = x;
  for (float& v : x4) v = mul_rn(v, 4.0f);  // exact on BF16 values below 2^126
  return rht(x4, mask, sum);
}

FloatMatrix rht_binary32(const FloatMatrix& x, std::uint16_t mask, RhtSum sum) {
  FloatMatrix y = rht(x, mask, sum);  // the shape checks, and the output's shape
  std::array<float, 16> v;
  for (std::size_t c = 0; c < x.shape(1); ++c)
    for (std::size_t b = 0; b < x.shape(0) / 16; ++b) {
      for (std::size_t k = 0; k < 16; ++k) v[k] = x(16 * b + k, c);
      for (unsigned n = 0; n < 16; ++n) {
        const Rht16Sum s = rht16_sum(v, mask, n);
        y(c, 16 * b + n) = sum == RhtSum::EXACT ? s.binary32 : s.mma;
      }
    }
  return y;
}

}  // namespace nvfp4::faults
