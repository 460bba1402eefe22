// `nvfp4-verify bench`: the GPU benchmark (bench/bench.h); without CUDA it says so and exits 2.
#include <fmt/format.h>

#include "cli/backends.h"
#include "cli/commands.h"
#if NVFP4_WITH_DEVICE
#include "bench/bench.h"
#endif

namespace nvfp4::cli {

void register_bench(CLI::App& app, int& exit_code) {
  struct Args {
    int repetitions = 50;
    bool small = false;
    std::string json;
    double campaign_seconds = 10;
    bool warm_l2 = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("bench", "Benchmark the GPU kernels against the copy bandwidth (needs a GPU)");
  cmd->add_option("--repetitions", a->repetitions, "timed launches per kernel")->capture_default_str();
  cmd->add_flag("--small", a->small, "skip the 16384 x 16384 shapes");
  cmd->add_option("--json", a->json, "also write the results as JSON to this file");
  cmd->add_option("--campaign-seconds", a->campaign_seconds, "length of each timed fuzz campaign (0: none)")->capture_default_str();
  cmd->add_flag("--warm-l2", a->warm_l2, "time runs back to back, each starting with the last one's data in L2");
  cmd->callback([a, &exit_code] {
#if NVFP4_WITH_DEVICE
    exit_code = bench::run_bench({a->repetitions, !a->small, a->json, a->campaign_seconds, !a->warm_l2});
#else
    throw UsageError("bench: " + device_unavailable());
#endif
  });
}

}  // namespace nvfp4::cli
