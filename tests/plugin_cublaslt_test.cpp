// The cuBLASLt plugin (device/plugin/, libnvfp4_cublaslt_plugin.so) through the plugin loader. It
// declares the per-tensor gemm that cuBLASLt computes in one call. Where it cannot run (no CUDA
// device; a GPU without NVFP4 block-scaled GEMM, such as Hopper) the tests skip with the plugin's
// own reason; on a Blackwell GPU every element of d must lie within the bound of docs/guides/gemm-ulp.md:
//   |d - EXACT| <= K·2^-24·|α|·Σ_k |a_k·b_k| + 2 ulps of the output format at EXACT
// (an FP32 accumulation in any order of exact block products, then α and the output rounding), and
// with split-K off it must equal the MMA mode of its tensor cores bit for bit (NUMERICS.md §3.20.6).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <tuple>

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "cases/gemm_case.h"
#include "cases/reference_backend.h"
#include "compare/compare.h"
#include "compare/diff.h"
#include "device/plugin/cublaslt_gemm.h"
#include "external/plugin/plugin_backend.h"
#include "reference/e2m1.h"
#include "reference/e4m3.h"
#include "reference/layout.h"
#include "tests/support/gemm_cases.h"
#include "tests/support/gpu.h"

namespace nvfp4 {
namespace {

// Found from the test binary, so that it is found in build-gpu/ carried to the GPU machine too.
external::PluginBackend& plugin() {
  static const std::unique_ptr<external::PluginBackend> p =
      external::load_plugin(std::filesystem::canonical("/proc/self/exe").parent_path() / NVFP4_CUBLASLT_PLUGIN_FROM_TESTS);
  return *p;
}

// Why the plugin cannot run a gemm here (its answer to a first small case); nullopt when it can.
const std::optional<std::string>& cublaslt_unavailable() {
  static const std::optional<std::string> why = []() -> std::optional<std::string> {
    try {
      plugin().run(test_support::normal_gemm_case(16, 16, 64, 1));
      return std::nullopt;
    } catch (const cases::BackendUnavailable& e) {
      return std::string(e.what());
    }
  }();
  return why;
}

#define REQUIRE_CUBLASLT_NVFP4() \
  if (const auto& why_ = ::nvfp4::cublaslt_unavailable()) GTEST_SKIP() << *why_

TEST(CublasLtPlugin, DeclaresThePerTensorGemmOfOneCublasLtCall) {
  const cases::Declaration& d = *plugin().declaration();
  EXPECT_EQ(d.operations(), std::vector<std::string>{"gemm"});
  const auto& params = d.find("gemm")->params;
  EXPECT_EQ(params.size(), 6u);                // output_dtype, beta, with_bias, row_scaled, accumulate, accumulation
  EXPECT_FALSE(params.count("scale_layout"));  // both layouts: the plugin swizzles compact scales
  EXPECT_FALSE(params.count("alpha"));
  const char* mode = std::getenv("NVFP4_CUBLASLT_ACCUMULATION");
  EXPECT_EQ(params.at("accumulation"), std::vector<cases::ParamValue>{std::string(mode && *mode ? mode : "exact")});
}

// The modelled instruction of this GPU's tensor cores (NUMERICS.md §3.20.6), or why there is none.
std::optional<std::string> mma_mode_of_this_gpu(std::string& why) {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    why = "cannot read the device's compute capability";
    return std::nullopt;
  }
  if (major == 10) return std::string("mma-sm100");
  if (major == 12) return std::string("mma-sm120");
  why = fmt::format("no modelled block-scaled MMA instruction for sm_{}{}", major, minor);
  return std::nullopt;
}

// On Blackwell: cuBLASLt without split-K equals the MMA mode of its GPU bit for bit, on normal
// operands (α from their amaxes) and on scales over the whole UE4M3 range, K off the 64-element
// chunk, F32 and BF16 outputs. Skips on Hopper (no NVFP4 block-scaled GEMM) with cuBLASLt's reason.
TEST(CublasLtPlugin, EqualsTheMmaModeOfItsGpuBitwise) {
  REQUIRE_CUBLASLT_NVFP4();
  std::string why;
  const std::optional<std::string> mode = mma_mode_of_this_gpu(why);
  if (!mode) GTEST_SKIP() << why;
  cases::ReferenceBackend reference;
  std::mt19937 rng(std::random_device{}());
  int seed = 100;
  for (const char* output : {"F32", "BF16"})
    for (const auto& [M, N, K] : {std::tuple{128, 128, 64}, std::tuple{48, 80, 4112}, std::tuple{256, 384, 1024}}) {
      cases::Case c = test_support::normal_gemm_case(M, N, K, ++seed, output);
      c.params.set("accumulation", *mode);
      for (bool wide_scales : {false, true}) {
        if (wide_scales)  // every finite non-negative byte: chunks whose terms the adder truncates
          for (const char* side : {"a_scale", "b_scale"})
            for (std::uint8_t& b : c.inputs.at(side).bytes) b = std::uint8_t(rng() % 0x7F);
        const cases::TensorMap want = reference.run(c), got = plugin().run(c);
        const std::vector<compare::TensorDiff> d = compare::diff_outputs(want, got);
        EXPECT_TRUE(d.empty()) << *mode << " " << output << " M=" << M << " N=" << N << " K=" << K
                               << " wide scales=" << wide_scales << "\n"
                               << compare::describe(d);
      }
    }
}

TEST(CublasLtPlugin, SaysWhyItCannotRunHere) {
  const std::optional<std::string>& why = cublaslt_unavailable();
  if (!why) GTEST_SKIP() << "cuBLASLt runs NVFP4 block-scaled GEMMs on this GPU";
  if (const auto& no_gpu = gpu_unavailable_reason())
    EXPECT_NE(why->find(*no_gpu), std::string::npos) << *why;
  else
    EXPECT_NE(why->find(device::cublaslt::kNoBlockScaledGemm), std::string::npos) << *why;
  GTEST_SKIP() << *why;
}

TEST(CublasLtPlugin, RejectsNegativeScaleBytesWhichTheReferenceRuns) {
  REQUIRE_CUBLASLT_NVFP4();
  cases::Case c = test_support::normal_gemm_case(32, 32, 64, 2);
  c.inputs.at("b_scale").bytes[1] |= 0x80;
  cases::ReferenceBackend reference;
  const compare::Comparison cmp = compare::compare_backends(c, reference, plugin(), {true, std::nullopt});
  EXPECT_EQ(cmp.verdict, compare::Verdict::kError) << cmp.problem;
  EXPECT_NE(cmp.problem.find("is negative"), std::string::npos) << cmp.problem;
}

// The dequantized value of element k of row r of an operand.
double element(const GemmOperand& x, std::int64_t r, std::int64_t k) {
  return double(e2m1_decode(nibble_at(x.data(r, k / 2), int(k % 2)))) * double(e4m3_decode(x.scale(r, k / 16)));
}

// The output format's spacing at bits (the larger of its two neighbour gaps).
double spacing(io::DType dtype, std::uint32_t bits) {
  const std::int64_t o = *compare::ulp_ordinal(dtype, bits);
  const double v = compare::ulp_value(dtype, bits), below = compare::ulp_value(dtype, compare::ulp_bits(dtype, o - 1));
  return std::max(std::abs(v - below), std::abs(compare::ulp_value(dtype, compare::ulp_bits(dtype, o + 1)) - v));
}

TEST(CublasLtPlugin, StaysWithinTheFp32AccumulationBoundOfExact) {
  REQUIRE_CUBLASLT_NVFP4();
  cases::ReferenceBackend reference;
  compare::UlpTotals totals;
  int seed = 10;
  for (const char* output : {"F32", "BF16"})
    for (const auto& [M, N, K] :
         {std::tuple{128, 128, 64}, std::tuple{256, 128, 1024}, std::tuple{48, 80, 4096}, std::tuple{2048, 512, 4096}}) {
      const cases::Case c = test_support::normal_gemm_case(M, N, K, ++seed, output);
      const std::string what = fmt::format("{} M={} N={} K={}", output, M, N, K);
      const compare::Comparison cmp = compare::compare_backends(c, reference, plugin(), {true, std::nullopt});
      ASSERT_EQ(cmp.verdict, compare::Verdict::kAgree) << what << ": " << cmp.problem;
      ASSERT_EQ(cmp.ulp.size(), 1u);
      totals.add(cmp.ulp[0], what);
      cases::GemmInputs in;
      cases::read_gemm_inputs(c, in);
      const double alpha = gemm_alpha(1.0f, in.a.amax(0), in.b.amax(0));
      const io::Tensor &exact = cmp.expected.at("d"), &actual = cmp.actual.at("d");
      const std::size_t size = io::dtype_size(exact.dtype);
      int outside = 0;
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          double magnitude = 0;
          for (std::int64_t k = 0; k < K; ++k) magnitude += std::abs(element(in.a, m, k) * element(in.b, n, k));
          std::uint32_t e = 0, a = 0;
          std::memcpy(&e, &exact.bytes[std::size_t(m * N + n) * size], size);
          std::memcpy(&a, &actual.bytes[std::size_t(m * N + n) * size], size);
          const double bound = double(K) * std::ldexp(1.0, -24) * std::abs(alpha) * magnitude + 2 * spacing(exact.dtype, e);
          const double error = std::abs(compare::ulp_value(exact.dtype, a) - compare::ulp_value(exact.dtype, e));
          if (!(error <= bound) && outside++ < 5)
            ADD_FAILURE() << what << " d[" << m << ", " << n << "] = " << compare::ulp_value_text(exact.dtype, a) << ", EXACT "
                          << compare::ulp_value_text(exact.dtype, e) << ": error " << error << " > bound " << bound;
        }
    }
  RecordProperty("ulp_max", std::to_string(totals.max));
  RecordProperty("ulp_mean", std::to_string(totals.mean()));
  std::cout << compare::describe_ulp_totals(totals);
}

}  // namespace
}  // namespace nvfp4
