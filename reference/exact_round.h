// Rounding an exact dyadic value n · 2^e once to binary32 (NUMERICS.md §1.1 RN: ties to even,
// gradual underflow, overflow to ±inf): the single rounding of every EXACT result.
#pragma once

#include <cstdint>

#include <boost/multiprecision/cpp_int.hpp>

namespace nvfp4 {

using BigInt = boost::multiprecision::cpp_int;

// A finite value n · 2^exponent, exactly.
struct Dyadic {
  BigInt n;
  int exponent = 0;
};

// The finite binary32 x as n · 2^e with the integer significand n (24 bits at most).
struct SmallDyadic {
  std::int32_t n = 0;
  int exponent = 0;
};
SmallDyadic small_dyadic_of(float x);
Dyadic dyadic_of(float x);

// The 128-bit integer v as a cpp_int.
BigInt big_of(__int128 v);

// x + y exactly (aligned to the smaller exponent).
Dyadic exact_sum(const Dyadic& x, const Dyadic& y);

// RN(n · 2^exponent) to binary32. An exact zero is +0.0 (§3.20.3). cpp_int's own conversion to
// float is not correctly rounded (docs/design/toolchain.md), hence this.
float round_to_binary32(const Dyadic& v);

// The same rounding of n · 2^exponent for an n that fits 128 bits (the GEMM's usual α·T), without
// cpp_int's allocations: one rounding routine, instantiated for both integer types.
float round_to_binary32(__int128 n, int exponent);

}  // namespace nvfp4
