#include "reference/exact_round.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "reference/arith.h"

namespace nvfp4 {

SmallDyadic small_dyadic_of(float x) {
  const std::uint32_t b = bits_of(x), e = (b >> 23) & 0xFFu, f = b & 0x7FFFFFu;
  const auto n = std::int32_t(e == 0 ? f : (f | 0x800000u));
  return {(b >> 31) ? -n : n, e == 0 ? -149 : int(e) - 150};
}

Dyadic dyadic_of(float x) {
  const SmallDyadic d = small_dyadic_of(x);
  return {BigInt(d.n), d.exponent};
}

BigInt big_of(__int128 v) {
  const bool negative = v < 0;
  const unsigned __int128 mag = negative ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  BigInt r = BigInt(std::uint64_t(mag >> 64));
  r = (r << 64) | BigInt(std::uint64_t(mag));
  return negative ? BigInt(-r) : r;
}

Dyadic exact_sum(const Dyadic& x, const Dyadic& y) {
  const int e = std::min(x.exponent, y.exponent);
  return {(x.n << (x.exponent - e)) + (y.n << (y.exponent - e)), e};
}

namespace {

// The index of the highest set bit of x > 0, and whether x is odd, for either integer type.
int msb(const BigInt& x) { return int(boost::multiprecision::msb(x)); }
int msb(unsigned __int128 x) {
  const auto hi = static_cast<std::uint64_t>(x >> 64);
  return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll(static_cast<std::uint64_t>(x));
}
bool odd(const BigInt& x) { return boost::multiprecision::bit_test(x, 0); }
bool odd(unsigned __int128 x) { return (x & 1) != 0; }

// RN(mag · 2^exponent) with the sign given, for a magnitude mag > 0 of either integer type.
template <class Int>
float round_magnitude(Int mag, bool negative, int exponent) {
  const int top = msb(mag);
  // Below half the subnormal step 2^-149: zero (and every shift below stays under the width).
  if (top + exponent < -150) return negative ? -0.0f : 0.0f;
  // The exponent of the result's last significand bit: 24 bits, or the subnormal step 2^-149.
  const int lsb = std::max(top + exponent - 23, -149);
  const int shift = lsb - exponent;
  if (shift > 0) {
    Int half = 1;
    half <<= shift - 1;
    const Int rest = mag & (half + half - 1);
    mag >>= shift;
    if (rest > half || (rest == half && odd(mag))) mag += 1;
  } else {
    mag <<= -shift;
  }
  // mag <= 2^24, exact in binary32; ldexp is exact, or infinity past the largest finite value.
  const float r = std::ldexp(float(static_cast<std::uint32_t>(mag)), lsb);
  return negative ? -r : r;
}

}  // namespace

float round_to_binary32(const Dyadic& v) {
  if (v.n == 0) return 0.0f;
  const bool negative = v.n < 0;
  BigInt mag = negative ? BigInt(-v.n) : v.n;
  return round_magnitude(std::move(mag), negative, v.exponent);
}

float round_to_binary32(__int128 n, int exponent) {
  if (n == 0) return 0.0f;
  const auto mag = n < 0 ? -static_cast<unsigned __int128>(n) : static_cast<unsigned __int128>(n);
  return round_magnitude(mag, n < 0, exponent);
}

}  // namespace nvfp4
