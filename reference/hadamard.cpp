#include "reference/hadamard.h"

#include <bit>
#include <cmath>

#include <boost/multiprecision/cpp_int.hpp>

#include "reference/arith.h"
#include "reference/error.h"
#include "reference/half_float.h"

namespace nvfp4 {
namespace {

using Fixed = boost::multiprecision::int512_t;  // the exact sum, in units of 2^-135

// Every product s * H * 0.25 * x of a finite BF16 x is an integer multiple of 2^-135 (the BF16
// subnormal step 2^-133 times 0.25) below 2^126 in magnitude: 16 of them sum exactly in 265 bits.
constexpr int kFixedLsbExponent = -135;

// |x| / 2^-135 for a finite BF16 value x: its 8-bit significand shifted by its exponent.
Fixed fixed_magnitude(float x) {
  const std::uint32_t b = bits_of(x) >> 16;
  const std::uint32_t e = (b >> 7) & 0xFFu, f = b & 0x7Fu;
  if (e == 0) return Fixed(f);                  // subnormal: f * 2^-133 * 0.25 = f * 2^-135
  return Fixed(f | 0x80u) << (e - 1);            // (0x80|f) * 2^(e-134) * 0.25 = ... * 2^(e-1-135)
}

// RN(N * 2^-135) to binary32, ties to even. N below 2^24 is exact (binary32's subnormal step
// 2^-149 divides 2^-135); above, the top 24 bits are kept and the rest decides the rounding.
float round_fixed(const Fixed& n) {
  if (n == 0) return 0.0f;
  const bool negative = n < 0;
  Fixed mag = negative ? Fixed(-n) : n;
  const int top = int(boost::multiprecision::msb(mag));
  int shift = 0;
  if (top > 23) {
    shift = top - 23;
    const Fixed rest = mag & ((Fixed(1) << shift) - 1), half = Fixed(1) << (shift - 1);
    mag >>= shift;
    if (rest > half || (rest == half && boost::multiprecision::bit_test(mag, 0))) mag += 1;
  }
  const float v = std::ldexp(float(mag.convert_to<std::uint32_t>()), shift + kFixedLsbExponent);  // exact, or inf
  return negative ? -v : v;
}

// H16[k][n] * s_k: the sign of input k's product in output n.
bool negative_coefficient(unsigned k, unsigned n, std::uint16_t mask) {
  return ((std::popcount(k & n) & 1) != 0) != (((mask >> k) & 1u) != 0);
}

}  // namespace

std::array<float, 16> rht16(const std::array<float, 16>& x, std::uint16_t mask) {
  std::array<float, 16> y{};
  for (float v : x)
    if (is_nan(v)) {
      y.fill(bf16_to_float(float_to_bf16(canonical_nan())));
      return y;
    }
  std::array<Fixed, 16> magnitude;  // each |x[k]| in units of 2^-135, once for the 16 outputs
  for (unsigned k = 0; k < 16; ++k)
    if (!std::isinf(x[k])) magnitude[k] = fixed_magnitude(x[k]);
  for (unsigned n = 0; n < 16; ++n) {
    Fixed sum = 0;
    bool plus_inf = false, minus_inf = false, all_negative_zero = true;
    for (unsigned k = 0; k < 16; ++k) {
      const bool negative = negative_coefficient(k, n, mask) != sign_bit(x[k]);  // the product's sign
      if (std::isinf(x[k])) (negative ? minus_inf : plus_inf) = true;
      else if (x[k] != 0.0f) negative ? sum -= magnitude[k] : sum += magnitude[k];
      all_negative_zero = all_negative_zero && x[k] == 0.0f && negative;
    }
    float s;
    if (plus_inf && minus_inf) s = canonical_nan();
    else if (plus_inf || minus_inf) s = plus_inf ? INFINITY : -INFINITY;
    else if (sum == 0) s = all_negative_zero ? -0.0f : 0.0f;
    else s = round_fixed(sum);
    y[n] = bf16_to_float(float_to_bf16(s));  // the second rounding: binary32 -> BF16, ties to even
  }
  return y;
}

FloatMatrix rht(const FloatMatrix& x, std::uint16_t mask) {
  const std::size_t M = x.shape(0), N = x.shape(1);
  if (M % 16) fail("rht", ErrorCode::E_DIM16_M, "M={} is not a multiple of 16", M);
  if (N % 16) fail("rht", ErrorCode::E_DIM16_K, "N={} is not a multiple of 16", N);
  FloatMatrix out = xt::empty<float>({N, M});
  std::array<float, 16> v;
  for (std::size_t c = 0; c < N; ++c)
    for (std::size_t b = 0; b < M / 16; ++b) {
      for (std::size_t k = 0; k < 16; ++k) v[k] = x(16 * b + k, c);
      const std::array<float, 16> y = rht16(v, mask);
      for (std::size_t n = 0; n < 16; ++n) out(c, 16 * b + n) = y[n];
    }
  return out;
}

}  // namespace nvfp4
