// The MMA modes' GPU arithmetic (device/kernels/mma_chain.cuh), compiled for the host, against the
// reference's model (reference/mma.h) on random chains of chunks: the kernel's exact pass
// (fused_dot_add on the integers T_j = P_j·n_a·n_b) on every chunk, and its fast path
// (chunk_is_exact, then keep_24_bits of the integer sum) wherever it claims a chunk, which must
// be often for scales near one and must never differ from the model. A chunk that negates the one
// before it makes the sum cancel down to the bits the adder truncated, where the direction of the
// truncation shows.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "tests/support/cuda_host_shim.h"
// The shim comes first.
#include "device/kernels/mma_chain.cuh"
#include "reference/e4m3.h"
#include "reference/mma.h"
#include "tests/support/campaign_seed.h"

namespace nvfp4 {
namespace {

constexpr int kValues[] = {0, 1, 2, 3, 4, 6, 8, 12};  // 2·f4 of the codes 0..7

struct Chunk {
  std::array<std::int8_t, 64> a{}, b{};
  std::array<std::uint8_t, 4> sa{}, sb{};
  int groups = 4;
};

std::uint8_t random_scale(int kind, std::mt19937_64& rng) {
  const std::uint8_t b = std::uint8_t(rng());
  switch (kind) {
    case 0:
      return std::uint8_t(0x30 + b % 16);  // 0.5 .. 1.875
    case 1:
      return (b & 0x7F) == 0x7F ? std::uint8_t(b ^ 1) : b;  // the whole range, either sign, no NaN
    default:
      return rng() % 3 ? std::uint8_t(0x38 + int(rng() % 64) - 32) : std::uint8_t(rng() % 2 ? 0x00 : 0x7E);
  }
}

Chunk random_chunk(int kind, std::mt19937_64& rng) {
  Chunk x;
  x.groups = rng() % 4 ? 4 : 1 + int(rng() % 4);
  const int sparsity = int(rng() % 4);  // how many elements are zero: none .. most
  for (int k = 0; k < 16 * x.groups; ++k) {
    const auto value = [&] {
      if (int(rng() % 4) < sparsity) return std::int8_t(0);
      const int v = kValues[rng() % 8];
      return std::int8_t(rng() % 2 ? -v : v);
    };
    x.a[std::size_t(k)] = value();
    x.b[std::size_t(k)] = rng() % 8 ? value() : x.a[std::size_t(k)];  // often equal, for cancellation below
  }
  if (rng() % 4 == 0)  // group 0 cancels to zero: a·b and then a·(-b)
    for (int k = 8; k < 16; ++k) {
      x.a[std::size_t(k)] = x.a[std::size_t(k - 8)];
      x.b[std::size_t(k)] = std::int8_t(-x.b[std::size_t(k - 8)]);
    }
  for (int g = 0; g < 4; ++g) {
    x.sa[std::size_t(g)] = random_scale(kind, rng);
    x.sb[std::size_t(g)] = random_scale(kind, rng);
  }
  return x;
}

std::int32_t n_of(std::uint8_t byte) { return std::int32_t(e4m3_decode(byte & 0x7F) * 512.0f); }  // |f8|·2^9

// The kernel's side of one chunk: the terms, their exponents, the u bounds of chunk_u_kernel.
struct Terms {
  long long t[4] = {};
  int e[4] = {};
  long long sum = 0;
  int u_min = 0, u_max = 0;
};

Terms terms_of(const Chunk& x, int zero_exponent) {
  Terms r;
  int lo_a = 127, hi_a = -128, lo_b = 127, hi_b = -128;
  for (int g = 0; g < x.groups; ++g) {
    int p = 0;
    bool any = false;
    for (int i = 0; i < 16; ++i) {
      const int q = x.a[std::size_t(16 * g + i)] * x.b[std::size_t(16 * g + i)];
      p += q;
      any |= q != 0;
    }
    const std::int32_t na = n_of(x.sa[std::size_t(g)]), nb = n_of(x.sb[std::size_t(g)]);
    r.t[g] = static_cast<long long>(p * na) * nb;
    r.e[g] = any && na && nb ? device::mma::scale_u(na) + device::mma::scale_u(nb) - 12 : zero_exponent;
    r.sum += r.t[g];
    if (na) lo_a = std::min(lo_a, device::mma::scale_u(na)), hi_a = std::max(hi_a, device::mma::scale_u(na));
    if (nb) lo_b = std::min(lo_b, device::mma::scale_u(nb)), hi_b = std::max(hi_b, device::mma::scale_u(nb));
  }
  r.u_min = lo_a + lo_b;
  r.u_max = hi_a + hi_b;
  return r;
}

TEST(MmaChain, KernelArithmeticEqualsTheModelOnRandomChains) {
  const MmaModel& model = mma_model(GemmAccumulation::MMA_SM100);
  const std::uint64_t seed = test_support::campaign_seed();
  std::mt19937_64 rng(seed);
  long long chunks = 0, fast = 0, fast_near_one = 0, chunks_near_one = 0;
  for (int chain = 0; chain < 3000; ++chain) {
    const int kind = chain % 3;
    float want = 0.0f;  // the reference's accumulator
    float slow = 0.0f;  // the exact pass's
    long long acc = 0;  // the fast path's, in units of 2^-20, while every chunk so far was fast
    bool all_fast = true;
    const int length = 1 + int(rng() % 24);
    Chunk previous;
    for (int step = 0; step < length; ++step) {
      Chunk x = random_chunk(kind, rng);
      if (step > 0 && rng() % 3 == 0) {  // the previous chunk negated: the sum cancels down to what was truncated
        x = previous;
        for (std::int8_t& v : x.a) v = std::int8_t(-v);
        if (rng() % 2) x.sa[rng() % 4] = random_scale(kind, rng);  // nearly: one group's scale changed
      }
      previous = x;
      want = mma_fused_dot_add(model, want, x.a.data(), x.b.data(), x.sa.data(), x.sb.data(), x.groups);
      const Terms t = terms_of(x, model.zero_exponent);
      slow = device::mma::fused_dot_add(slow, t.t, t.e, x.groups, model.fraction_bits, model.zero_exponent);
      ASSERT_EQ(bits_of(slow), bits_of(want)) << fmt::format("exact pass: chain {} step {} seed {}", chain, step, seed);
      ++chunks;
      chunks_near_one += kind == 0;
      if (all_fast && device::mma::chunk_is_exact(acc, t.u_min, t.u_max, model.fraction_bits)) {
        acc = device::mma::keep_24_bits(acc + t.sum);
        ASSERT_EQ(bits_of(std::ldexp(float(acc), -20)), bits_of(want))
            << fmt::format("fast path: chain {} step {} seed {}", chain, step, seed);
        ++fast;
        fast_near_one += kind == 0;
      } else {
        all_fast = false;  // the kernel leaves this output to the exact pass from here on
      }
    }
  }
  EXPECT_GT(fast_near_one, chunks_near_one * 9 / 10) << "scales near one should almost always take the fast path";
  EXPECT_LT(fast, chunks) << "the whole E4M3 range should sometimes leave a chunk to the exact pass";
}

// keep_24_bits is binary32's rounding toward zero of an integer: against the conversion itself.
TEST(MmaChain, KeepTwentyFourBitsIsRoundingTowardZero) {
  std::mt19937_64 rng(test_support::campaign_seed());
  for (int i = 0; i < 200000; ++i) {
    const long long x = static_cast<long long>(rng() >> (1 + rng() % 63)) * (rng() % 2 ? 1 : -1);
    const long long kept = device::mma::keep_24_bits(x);
    ASSERT_LE(std::llabs(kept), std::llabs(x));
    // Exactly representable with 24 bits, and no representable value between kept and x.
    ASSERT_EQ(static_cast<long long>(static_cast<float>(kept)), kept) << x;
    const float up = std::nextafter(static_cast<float>(kept), x < 0 ? -INFINITY : INFINITY);
    ASSERT_GT(std::fabs(static_cast<double>(up)), std::fabs(static_cast<double>(x))) << x;
  }
}

}  // namespace
}  // namespace nvfp4
