// The external backends' own cost per case, measured in one run against in-process baselines:
//   reference     the reference run in this process (the baseline every campaign pays anyway)
//   worker        a trivial worker (answers at once, computes nothing): the harness's overhead
//                 per case (encode, pipes, decode, verdict bookkeeping); target <= 50 us
//   worker+ref    a worker that runs the reference behind the protocol, minus the reference alone
//   plugin        the example plugin's amax_global against the reference's amax_global
// Small cases (quantize te 16x64 F32, amax_global 16x64 F32), many in flight.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "external/plugin/plugin_backend.h"
#include "external/worker_backend.h"

namespace {

using namespace nvfp4;
using Clock = std::chrono::steady_clock;

cases::Case small_case(const std::string& op, std::mt19937& rng) {
  cases::Case c = cases::make_case(op);
  std::normal_distribution<float> normal;
  std::vector<float> x(16 * 64);
  for (float& v : x) v = normal(rng);
  c.inputs["x"] = io::make_tensor_from<float>(io::DType::F32, {16, 64}, x);
  return c;
}

// CPU seconds this process (the harness) has used: its own cost, whatever the worker costs.
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct PerCase {
  double wall = 0, harness_cpu = 0;  // seconds per case
};

// Medians over `reps` of the wall and harness CPU seconds per case of one run_many over `cases`.
PerCase per_case(cases::Backend& b, const std::vector<cases::Case>& cases, int reps) {
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const double c0 = cpu_seconds();
    const std::vector<cases::Outcome> out = b.run_many(cases);
    cpu.push_back((cpu_seconds() - c0) / double(cases.size()));
    wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / double(cases.size()));
    for (const cases::Outcome& o : out)
      if (o.fault || o.rejected) throw std::runtime_error(fmt::format("{}: {}", b.name(), o.message));
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nvfp4-verify external backends: cost per case"};
  std::string fake = NVFP4_FAKE_WORKER, plugin = NVFP4_EXAMPLE_PLUGIN;
  std::size_t n = 20000;
  int reps = 5;
  app.add_option("--fake-worker", fake, "the test suite's fake worker")->capture_default_str();
  app.add_option("--plugin", plugin, "the example plugin")->capture_default_str();
  app.add_option("--cases", n, "cases per measurement")->capture_default_str();
  app.add_option("--reps", reps, "repetitions (the median is printed)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::mt19937 rng(std::random_device{}());
  std::vector<cases::Case> quantize, amax;
  for (std::size_t i = 0; i < n; ++i) {
    quantize.push_back(small_case("quantize", rng));
    amax.push_back(small_case("amax_global", rng));
  }
  cases::ReferenceBackend reference;
  external::WorkerOptions trivial_options, conform_options;
  trivial_options.command = fake + " trivial";
  conform_options.command = fake + " conform";
  external::WorkerBackend trivial(trivial_options), conform(conform_options);
  const auto plugin_backend = external::load_plugin(plugin);

  const double ref_q = per_case(reference, quantize, reps).wall, ref_a = per_case(reference, amax, reps).wall;
  const PerCase worker = per_case(trivial, quantize, reps), worker_ref = per_case(conform, quantize, reps);
  const double plug = per_case(*plugin_backend, amax, reps).wall;
  const auto us = [](double s) { return s * 1e6; };
  fmt::print("external backends, {} small cases per run (quantize te 16x64 F32; amax_global 16x64 F32), median of {}\n", n, reps);
  fmt::print("  {:<40} {:>9.2f} us/case wall\n", "reference quantize, in process", us(ref_q));
  fmt::print("  {:<40} {:>9.2f} us/case wall, {:.2f} us harness CPU\n", "trivial worker", us(worker.wall),
             us(worker.harness_cpu));
  fmt::print("  {:<40} {:>9.2f} us/case wall ({:.2f}x the reference in process)\n", "worker running the reference",
             us(worker_ref.wall), worker_ref.wall / ref_q);
  fmt::print("  {:<40} {:>9.2f} us/case wall\n", "reference amax_global, in process", us(ref_a));
  fmt::print("  {:<40} {:>9.2f} us/case wall (overhead {:.2f} us)\n", "example plugin amax_global", us(plug), us(plug - ref_a));
  // The harness's own overhead: its CPU time per case with a worker that does nothing. The wall
  // time adds the worker's own decoding and encoding, and the scheduling of two processes.
  fmt::print(
      "harness overhead per small case: {:.2f} us harness CPU, {:.2f} us wall with a trivial C++ worker (target <= 50 us): {}\n",
      us(worker.harness_cpu), us(worker.wall), us(worker.harness_cpu) <= 50 ? "met" : "MISSED");
  return 0;
}
