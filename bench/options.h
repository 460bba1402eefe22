// The GPU benchmark's options and their command-line flags, shared by nvfp4_bench and
// `nvfp4-verify bench`. Nothing here needs CUDA: the CLI declares the command without it too.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace nvfp4::bench {

struct BenchOptions {
  int repetitions = 50;          // timed launches per kernel, after warm-up
  bool large = true;             // include 16384 x 16384
  std::string json_path;         // also write the results as JSON here ("" = no file)
  double campaign_seconds = 10;  // length of each fuzz campaign timed (0 = none)
  bool cold_l2 = true;           // read twice the L2's size before each timed run (see median_ms in bench.cpp)
};

// Adds the flags that set `o` to `app`; `o` must outlive the parse.
inline void add_bench_options(CLI::App& app, BenchOptions& o) {
  app.add_option("--repetitions", o.repetitions, "timed launches per kernel")->capture_default_str();
  app.add_flag_callback(
      "--small", [&o] { o.large = false; }, "skip the 16384 x 16384 shapes");
  app.add_option("--json", o.json_path, "also write the results as JSON to this file");
  app.add_option("--campaign-seconds", o.campaign_seconds, "length of each timed fuzz campaign (0: none)")->capture_default_str();
  app.add_flag_callback(
      "--warm-l2", [&o] { o.cold_l2 = false; }, "time runs back to back, each starting with the last one's data in L2");
}

}  // namespace nvfp4::bench
