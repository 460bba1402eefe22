// nvfp4_nccl_flow: the distributed master-weight cast on every GPU of this machine with NCCL,
// checked bitwise against single-GPU quantization and the CPU reference (nccl_flow.h).
// Exit status: 0 PASS, 1 mismatch or CUDA/NCCL error (CLI11 exits non-zero on bad arguments).
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "device/nccl/nccl_flow.h"

int main(int argc, char** argv) {
  using namespace nvfp4::device;
  CLI::App app{"NVFP4 master-weight cast across GPUs with NCCL, checked bitwise"};
  NcclFlowOptions o;
  std::string weights = "small", cuts = "odd";
  app.add_option("--weights", weights, "parameter list: small (odd shapes) or 1b (16-layer transformer, 112 weights)")
      ->check(CLI::IsMember({"small", "1b"}))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the master weights and of the odd cut points")->capture_default_str();
  app.add_option("--cuts", cuts, "cut points: odd (every boundary shares a byte between two ranks) or equal")
      ->check(CLI::IsMember({"odd", "equal"}))
      ->capture_default_str();
  app.add_option("--cut-points", o.cuts, "explicit cut points (GPUs - 1 of them), instead of --cuts");
  app.add_option("--gpus", o.gpus, "GPUs (= ranks) to use; 0: all")->capture_default_str();
  app.add_option("--steps", o.steps, "steps run back to back; the last one's outputs are checked")->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "seconds a rank may wait for its step before the run is aborted")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  o.weights = weights == "1b" ? WeightList::kTransformer1B : WeightList::kSmall;
  o.cut_rule = cuts == "equal" ? CutRule::kEqual : CutRule::kOdd;
  try {
    const NcclFlowResult r = run_nccl_flow(o);
    std::fputs(summary(o, r).c_str(), stdout);
    return r.pass() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nvfp4_nccl_flow: %s\nFAIL\n", e.what());
    return 1;
  }
}
