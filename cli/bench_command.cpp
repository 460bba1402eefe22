// `nvfp4-verify bench`: the GPU benchmark (bench/bench.h); without CUDA it says so and exits 2.
#include <memory>

#include "bench/options.h"
#include "cli/backends.h"
#include "cli/commands.h"
#include "io/output_path.h"
#if NVFP4_WITH_DEVICE
#include "bench/bench.h"
#endif

namespace nvfp4::cli {

void register_bench(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<bench::BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Benchmark the GPU kernels against the copy bandwidth (needs a GPU)");
  bench::add_bench_options(*cmd, *o);
  cmd->callback([o, &exit_code] {
    if (!o->json_path.empty()) io::prepare_output_file(o->json_path, "--json");  // before any GPU work
#if NVFP4_WITH_DEVICE
    exit_code = bench::run_bench(*o);
#else
    throw UsageError("bench: " + device_unavailable());
#endif
  });
}

}  // namespace nvfp4::cli
