// Exhaustive format tests: the emulator's element conversions against the CUDA 13 host conversions
// (docs/design/toolchain.md "CUDA 13 conversions as an oracle") over every binary32 bit pattern and
// every bf16/fp16 input. The 2^32 sweep checks all four conversions per input and runs on
// hardware_concurrency() threads, one contiguous chunk each.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "reference/e2m1.h"
#include "reference/e2m1_table.h"
#include "reference/e4m3.h"
#include "reference/half_float.h"
#include "reference/stochastic_rounding.h"

namespace nvfp4 {
namespace {

// The conversions checked per input: (a) E2M1, (b) E4M3 satfinite, (c) fp16, (d) bf16.
enum Check : int { kE2M1, kE4M3, kFp16, kBf16, kE2M1Table, kE2M1Arith, kNumChecks };
constexpr std::array<const char*, kNumChecks> kCheckNames = {"e2m1_hw vs __nv_cvt_float_to_fp4",
                                                             "e4m3sat vs __nv_cvt_float_to_fp8",
                                                             "float_to_half vs __float2half_rn",
                                                             "float_to_bf16 vs __float2bfloat16_rn",
                                                             "e2m1 table (e2m1_table_index) vs __nv_cvt_float_to_fp4",
                                                             "e2m1 by arithmetic (e2m1_hw_value_over_64, e4m3, "
                                                             "e2m1_codes_of_e4m3_bytes) vs __nv_cvt_float_to_fp4"};
constexpr int kExamplesKept = 4;

struct Tally {
  std::array<std::uint64_t, kNumChecks> count{};
  std::array<std::vector<std::string>, kNumChecks> examples;

  void record(int check, std::uint32_t input, unsigned expected, unsigned actual) {
    if (count[check]++ >= kExamplesKept) return;
    char buf[96];
    std::snprintf(buf, sizeof buf, "input 0x%08X: CUDA 0x%X, emulator 0x%X", input, expected, actual);
    examples[check].emplace_back(buf);
  }
  void merge(const Tally& other) {
    for (int c = 0; c < kNumChecks; ++c) {
      count[c] += other.count[c];
      for (const std::string& e : other.examples[c])
        if (examples[c].size() < kExamplesKept) examples[c].push_back(e);
    }
  }
  // One expectation per check, so a failure names the conversion and shows the first inputs.
  void expect_none(const char* sweep, int num_checks) const {
    for (int c = 0; c < num_checks; ++c) {
      std::string list;
      for (const std::string& e : examples[c]) list += "\n  " + e;
      EXPECT_EQ(count[c], 0u) << sweep << ": " << kCheckNames[c] << " mismatches, first:" << list;
    }
  }
};

bool half_bits_are_nan(unsigned h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

std::uint8_t cuda_fp4(float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest); }
std::uint8_t cuda_fp8(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }

// (a) and (b) for one input, and the E2M1 table.
void check_fp4_fp8(Tally& t, std::uint32_t u, float x) {
  const std::uint8_t fp4 = cuda_fp4(x), fp4_emu = e2m1_hw(x);
  if (fp4 != fp4_emu) t.record(kE2M1, u, fp4, fp4_emu);
  const std::uint8_t fp4_table = e2m1_hw_codes()[e2m1_table_index(x)];  // the reference's table
  if (fp4 != fp4_table) t.record(kE2M1Table, u, fp4, fp4_table);
  // The kernels' arithmetic path: an exact value, the E4M3 conversion CUDA's own (as on the device);
  // a negative NaN, which kernels never pass, keeps its sign (reference/e2m1.h).
  const std::uint8_t fp4_arith = std::uint8_t(e2m1_codes_of_e4m3_bytes(cuda_fp8(e2m1_hw_value_over_64(x))));
  const std::uint8_t fp4_kernel = is_nan(x) && sign_bit(x) ? 0xF : fp4;
  if (fp4_kernel != fp4_arith) t.record(kE2M1Arith, u, fp4_kernel, fp4_arith);
  const std::uint8_t fp8 = cuda_fp8(x), fp8_emu = e4m3sat(x);
  if (fp8 != fp8_emu) t.record(kE4M3, u, fp8, fp8_emu);
}

// (a)-(d) for every pattern in [begin, end). NaN inputs: both fp16 results must be NaN; bf16 must
// be a CUDA NaN and the canonical 0x7FFF of RNbf16 (NUMERICS.md §1.1).
Tally sweep_float32(std::uint64_t begin, std::uint64_t end) {
  Tally t;
  for (std::uint64_t i = begin; i < end; ++i) {
    const std::uint32_t u = std::uint32_t(i);
    const float x = float_of(u);
    check_fp4_fp8(t, u, x);
    const unsigned h = static_cast<__half_raw>(__float2half_rn(x)).x, h_emu = float_to_half(x);
    const unsigned b = static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x, b_emu = float_to_bf16(x);
    if (is_nan(x)) {
      if (!half_bits_are_nan(h) || !half_bits_are_nan(h_emu)) t.record(kFp16, u, h, h_emu);
      if ((b & 0x7F80u) != 0x7F80u || (b & 0x7Fu) == 0 || b_emu != 0x7FFFu) t.record(kBf16, u, b, b_emu);
    } else {
      if (h != h_emu) t.record(kFp16, u, h, h_emu);
      if (b != b_emu) t.record(kBf16, u, b, b_emu);
    }
  }
  return t;
}

TEST(FormatsExhaustive, AllFloat32PatternsMatchCudaConversions) {
  constexpr std::uint64_t kTotal = std::uint64_t(1) << 32;
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<Tally> tallies(n);
  const auto start = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> threads;
    for (unsigned k = 0; k < n; ++k)
      threads.emplace_back([&, k] { tallies[k] = sweep_float32(kTotal * k / n, kTotal * (k + 1) / n); });
    for (std::thread& th : threads) th.join();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ timing   ] 2^32 float32 sweep (e2m1, e4m3, fp16, bf16) on " << n << " threads: " << seconds << " s"
            << std::endl;
  Tally total;
  for (unsigned k = 0; k < n; ++k) {
    std::cout << "[ chunk    ] " << k << ": mismatches e2m1=" << tallies[k].count[kE2M1] << " e4m3=" << tallies[k].count[kE4M3]
              << " fp16=" << tallies[k].count[kFp16] << " bf16=" << tallies[k].count[kBf16] << std::endl;
    total.merge(tallies[k]);
  }
  total.expect_none("float32", kNumChecks);
}

// (a) and (b) for all 2^16 inputs of a 16-bit format, widened by CUDA and cross-checked against
// the emulator's exact widening (NaN: both NaN).
template <class Widen, class EmuWiden>
void sweep_16bit_inputs(const char* name, Widen cuda_widen, EmuWiden emu_widen) {
  const auto start = std::chrono::steady_clock::now();
  Tally t;
  std::uint64_t widen_mismatches = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float x = cuda_widen(std::uint16_t(h)), x_emu = emu_widen(std::uint16_t(h));
    const bool same = is_nan(x) ? is_nan(x_emu) : bits_of(x) == bits_of(x_emu);
    if (!same && widen_mismatches++ < kExamplesKept)
      ADD_FAILURE() << name << " 0x" << std::hex << h << " widens to 0x" << bits_of(x) << " (CUDA), 0x" << bits_of(x_emu)
                    << " (emulator)";
    check_fp4_fp8(t, h, x);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ timing   ] 2^16 " << name << " sweep (e2m1, e4m3): " << seconds << " s" << std::endl;
  EXPECT_EQ(widen_mismatches, 0u) << name << " widening mismatches";
  t.expect_none(name, kE4M3 + 1);  // only (a) and (b) run here
}

TEST(FormatsExhaustive, AllBf16InputsMatchCudaFp4AndFp8) {
  sweep_16bit_inputs(
      "bf16",
      [](std::uint16_t h) {
        __nv_bfloat16_raw r;
        r.x = h;
        return __bfloat162float(__nv_bfloat16(r));
      },
      &bf16_to_float);
}

TEST(FormatsExhaustive, AllFp16InputsMatchCudaFp4AndFp8) {
  sweep_16bit_inputs(
      "fp16",
      [](std::uint16_t h) {
        __half_raw r;
        r.x = h;
        return __half2float(__half(r));
      },
      &half_to_float);
}

// The kernels' arithmetic stochastic rounding against sr_e2m1 on every binary32 input, for the
// random bytes at both ends (0: the largest chance of rounding down, 255: of rounding up).
TEST(FormatsExhaustive, ArithmeticStochasticRoundingMatchesTheElementFunction) {
  constexpr std::uint64_t kTotal = std::uint64_t(1) << 32;
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::uint64_t> mismatches(n);
  std::vector<std::uint32_t> first(n);
  {
    std::vector<std::thread> threads;
    for (unsigned k = 0; k < n; ++k)
      threads.emplace_back([&, k] {
        for (std::uint64_t i = kTotal * k / n; i < kTotal * (k + 1) / n; ++i)
          for (const std::uint8_t r8 : {std::uint8_t(0), std::uint8_t(255)}) {
            const float y = float_of(std::uint32_t(i));
            const float got = mul_rn(sr_e2m1_value_over_64(y, r8, 0), 64.0f);
            const float want = is_nan(y) && sign_bit(y) ? -6.0f : e2m1_decode(sr_e2m1(y, r8));  // kernels pass no negative NaN
            if (bits_of(got) != bits_of(want) && mismatches[k]++ == 0) first[k] = std::uint32_t(i);
          }
      });
    for (std::thread& th : threads) th.join();
  }
  for (unsigned k = 0; k < n; ++k) EXPECT_EQ(mismatches[k], 0u) << "first at input 0x" << std::hex << first[k];
}

}  // namespace
}  // namespace nvfp4
