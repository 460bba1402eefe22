// The CPU oracle's speed (`nvfp4_gemm_cpu_bench`): the EXACT GEMM of the reference
// (reference/gemm.h) on quantized random operands, M x N x K = 1024^3 by default (target: under
// 5 s on 2 cores), on every core and on one, with the TFLOP-equivalent 2·M·N·K / time.
#include <chrono>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "reference/gemm.h"
#include "reference/profiles.h"
#include "reference/quantize.h"

namespace {

using namespace nvfp4;

GemmOperand operand(std::int64_t rows, std::int64_t K, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  FloatMatrix x = xt::zeros<float>({std::size_t(rows), std::size_t(K)});
  for (float& v : x) v = normal(rng);
  QuantizeOptions o;
  o.profile = default_profile().knobs;
  const Quantization q = quantize(x, o);
  return {q.rowwise->data, q.rowwise->scale, q.rowwise->amax};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The CPU EXACT GEMM oracle's time"};
  std::int64_t M = 1024, N = 1024, K = 1024;
  app.add_option("-m", M, "rows of A")->capture_default_str();
  app.add_option("-n", N, "rows of B")->capture_default_str();
  app.add_option("-k", K, "K, a multiple of 16")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const GemmOperand a = operand(M, K, 1), b = operand(N, K, 2);
  const double flop = 2.0 * double(M) * double(N) * double(K);
  auto time_it = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    const FloatMatrix d = gemm(a, b, {});
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double all = time_it();
  fmt::print("CPU EXACT GEMM {}x{}x{} on {} threads: {:.3f} s, {:.3f} TFLOP-equivalent (target: under 5 s on 2 cores)\n", M, N, K,
             std::thread::hardware_concurrency(), all, flop / all / 1e12);
  return 0;
}
