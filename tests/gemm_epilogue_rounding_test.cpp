// The EXACT GEMM kernel's final rounding (device/kernels/exact_round.cuh), compiled for the host, against
// the reference's Boost rounding (reference/exact_round.h): RN(α·T·2^-20) for random totals and
// α, and for products placed on and around binary32 rounding boundaries, where the kernel's
// binary64 path must hand over to its exact path.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "tests/support/cuda_host_shim.h"
// The shim comes first.
#include "device/kernels/exact_round.cuh"
#include "reference/exact_round.h"

namespace nvfp4 {
namespace {

float reference_product(float alpha, long long t) {
  const Dyadic a = dyadic_of(alpha);
  return round_to_binary32({a.n * BigInt(t), a.exponent - 20});
}

void expect_same(float alpha, long long t) {
  const float want = reference_product(alpha, t);
  const float got = device::exact::gemm_value(false, t, alpha, false, 0.0f, 0.0f);
  ASSERT_EQ(bits_of(got), bits_of(want)) << fmt::format("alpha=0x{:08X} T={}", bits_of(alpha), t);
}

float random_finite(std::mt19937_64& rng) {
  for (;;) {
    const float a = float_of(std::uint32_t(rng()));
    if (std::isfinite(a)) return a;
  }
}

// |T| log-uniform up to 2^63 (the kernel's limit), either sign, 0 now and then.
long long random_total(std::mt19937_64& rng) {
  const int bits = int(rng() % 64);
  const long long m = bits == 0 ? 0 : static_cast<long long>(rng() >> (64 - bits)) & 0x7FFFFFFFFFFFFFFFll;
  return rng() & 1 ? -m : m;
}

TEST(GemmEpilogueRounding, EqualsTheReferenceOnRandomTotalsAndAlphas) {
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed=0x{:x}", seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 2000000; ++i) expect_same(random_finite(rng), random_total(rng));
}

// α with a full significand and T near 2^50, so that α·T needs more than 53 bits and RN64 moves
// it; T steps across the midpoint between a binary32 and its neighbour. Some products round
// exactly onto the midpoint in binary64: the kernel must take its exact path there.
TEST(GemmEpilogueRounding, EqualsTheReferenceOnAndAroundBinary32Midpoints) {
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed=0x{:x}", seed));
  std::mt19937_64 rng(seed);
  int handed_over = 0, checked = 0;
  while (checked < 200000) {
    const float alpha = std::ldexp(1.0f + float(rng() % (1u << 23)) / float(1u << 23), int(rng() % 160) - 110);
    const long long target = static_cast<long long>((rng() >> 12) | (1ull << 49));
    const float f = static_cast<float>(double(alpha) * double(target) * 0x1p-20);
    if (!std::isnormal(f) || !std::isfinite(std::nextafter(f, INFINITY))) continue;
    const double midpoint = (double(f) + double(std::nextafter(f, INFINITY))) / 2;  // exact in binary64
    const long long t0 = std::llround(midpoint * 0x1p20 / double(alpha));
    for (long long d = -3; d <= 3; ++d) {
      const long long t = (rng() & 1 ? -1 : 1) * (t0 + d);
      float fast;
      handed_over += !device::exact::round_product_fast(alpha, t, fast);
      expect_same(alpha, t);
      ++checked;
    }
  }
  EXPECT_GT(handed_over, 0) << "no product landed on a midpoint: the exact path went untested";
}

}  // namespace
}  // namespace nvfp4
