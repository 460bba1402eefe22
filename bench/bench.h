// The GPU benchmark (`nvfp4_bench`, `nvfp4-verify bench`): copy bandwidth, then each kernel's
// median time, bytes moved and bandwidth as a fraction of the copy bandwidth of the same run; the
// distributed master-weight cast (one rank of 8 over a 1B-parameter transformer's weights, the
// launches per step); and the CPU reference's throughput.
#pragma once

#include <string>

namespace nvfp4::bench {

struct BenchOptions {
  int repetitions = 50;     // timed launches per kernel, after warm-up
  bool large = true;        // include 16384 x 16384
  std::string json_path;    // also write the results as JSON here ("" = no file)
};

// Prints the table; returns a process exit code (2 when no GPU is usable).
int run_bench(const BenchOptions& options);

}  // namespace nvfp4::bench
