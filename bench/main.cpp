// nvfp4_bench: the GPU benchmark as a standalone program (the GPU machine runs it from build-gpu/).
#include <CLI/CLI.hpp>

#include "bench/bench.h"
#include "bench/cublas_gemm.h"

int main(int argc, char** argv) {
  CLI::App app{"NVFP4 kernel benchmark"};
  nvfp4::bench::BenchOptions o;
  nvfp4::bench::add_bench_options(app, o);
  CLI11_PARSE(app, argc, argv);
  try {
    return nvfp4::bench::run_bench(o, nvfp4::bench::cublas_bf16_gemm());
  } catch (const std::exception& e) {
    fprintf(stderr, "nvfp4_bench: %s\n", e.what());
    return 1;
  }
}
