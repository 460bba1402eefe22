// nvfp4_bench: the GPU benchmark as a standalone program (the GPU machine runs it from build-gpu/).
#include <CLI/CLI.hpp>

#include "bench/bench.h"
#include "bench/cublas_gemm.h"

int main(int argc, char** argv) {
  CLI::App app{"NVFP4 kernel benchmark"};
  nvfp4::bench::BenchOptions o;
  app.add_option("--repetitions", o.repetitions, "timed launches per kernel")->capture_default_str();
  app.add_option("--json", o.json_path, "write the results as JSON to this file");
  app.add_option("--campaign-seconds", o.campaign_seconds, "length of each timed fuzz campaign (0: none)")->capture_default_str();
  bool small = false;
  app.add_flag("--small", small, "skip the 16384 x 16384 shapes");
  bool warm_l2 = false;
  app.add_flag("--warm-l2", warm_l2, "time runs back to back, each starting with the last one's data in L2");
  CLI11_PARSE(app, argc, argv);
  o.large = !small;
  o.cold_l2 = !warm_l2;
  try {
    return nvfp4::bench::run_bench(o, nvfp4::bench::cublas_bf16_gemm());
  } catch (const std::exception& e) {
    fprintf(stderr, "nvfp4_bench: %s\n", e.what());
    return 1;
  }
}
