// The master-weight cast across two GPUs with NCCL (device/nccl/nccl_flow.h): every rank's
// outputs equal single-GPU quantization and the CPU reference bit for bit. Skips, saying why,
// where fewer than two CUDA devices are present.
#include <optional>
#include <string>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "device/flow/flow_workloads.h"
#include "device/nccl/nccl_flow.h"

namespace nvfp4::device {
namespace {

std::optional<std::string> fewer_than_two_gpus() {
  int n = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess)
    return fmt::format("no CUDA device: cudaGetDeviceCount: {} ({}); the NCCL flow test needs 2 GPUs", cudaGetErrorName(e),
                       cudaGetErrorString(e));
  if (n < 2) return fmt::format("{} CUDA device(s); the NCCL flow test needs 2 GPUs", n);
  return std::nullopt;
}

void expect_pass(const NcclFlowOptions& o) {
  const NcclFlowResult r = run_nccl_flow(o);
  EXPECT_TRUE(r.pass()) << summary(o, r);
  EXPECT_EQ(r.gpus.size(), 2u);
}

class NcclFlow : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto reason = fewer_than_two_gpus()) GTEST_SKIP() << "NCCL test skipped: " << *reason;
  }
  NcclFlowOptions two_gpus() const {
    NcclFlowOptions o;
    o.gpus = 2;
    return o;
  }
};

TEST_F(NcclFlow, OddCutSharingAByteEqualsQuantizeAndReference) {
  for (const std::uint64_t seed : {1, 2, 3}) {
    NcclFlowOptions o = two_gpus();
    o.seed = seed;
    expect_pass(o);
  }
}

TEST_F(NcclFlow, EqualCutEqualsQuantizeAndReference) {
  NcclFlowOptions o = two_gpus();
  o.cut_rule = CutRule::kEqual;
  expect_pass(o);
}

TEST_F(NcclFlow, CutInsideTheFirstTileRowAndAtAWeightBoundary) {
  const std::int64_t first = edge_weights()[0].M * edge_weights()[0].K;
  for (const std::int64_t cut : {std::int64_t(3), first}) {
    NcclFlowOptions o = two_gpus();
    o.cuts = {cut};
    expect_pass(o);
  }
}

TEST_F(NcclFlow, EmptyRankContributesNothing) {
  const std::int64_t total = total_elements(edge_weights());
  for (const std::int64_t cut : {std::int64_t(0), total}) {
    NcclFlowOptions o = two_gpus();
    o.cuts = {cut};
    expect_pass(o);
  }
}

}  // namespace
}  // namespace nvfp4::device
