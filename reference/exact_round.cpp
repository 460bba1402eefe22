#include "reference/exact_round.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "reference/arith.h"

namespace nvfp4 {

Dyadic dyadic_of(float x) {
  const std::uint32_t b = bits_of(x), e = (b >> 23) & 0xFFu, f = b & 0x7FFFFFu;
  Dyadic d{BigInt(e == 0 ? f : (f | 0x800000u)), e == 0 ? -149 : int(e) - 150};
  if (b >> 31) d.n = -d.n;
  return d;
}

Dyadic exact_sum(const Dyadic& x, const Dyadic& y) {
  const int e = std::min(x.exponent, y.exponent);
  return {(x.n << (x.exponent - e)) + (y.n << (y.exponent - e)), e};
}

float round_to_binary32(const Dyadic& v) {
  if (v.n == 0) return 0.0f;
  const bool negative = v.n < 0;
  BigInt mag = negative ? BigInt(-v.n) : v.n;
  const int top = int(boost::multiprecision::msb(mag));
  // The exponent of the result's last significand bit: 24 bits, or the subnormal step 2^-149.
  const int lsb = std::max(top + v.exponent - 23, -149);
  const int shift = lsb - v.exponent;
  if (shift > 0) {
    const BigInt rest = mag & ((BigInt(1) << shift) - 1), half = BigInt(1) << (shift - 1);
    mag >>= shift;
    if (rest > half || (rest == half && boost::multiprecision::bit_test(mag, 0))) mag += 1;
  } else {
    mag <<= -shift;
  }
  // mag <= 2^24, exact in binary32; ldexp is exact, or infinity past the largest finite value.
  const float r = std::ldexp(float(mag.convert_to<std::uint32_t>()), lsb);
  return negative ? -r : r;
}

}  // namespace nvfp4
