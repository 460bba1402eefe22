// The master-weight cast (NUMERICS.md §3.17) across real GPUs: one process, one thread and one
// NCCL communicator per GPU, one rank per GPU. Each rank runs RankFlow with ncclAllReduce (MAX)
// of its amax arena and ncclAllGather of its chunk; then every rank's outputs (data, scale,
// data_t, scale_t, amax of every weight) are compared bitwise with (a) device::launch_quantize of
// each whole weight on GPU 0 (2D tiles, te, amax = launch_amax_global of the BF16-rounded weight)
// and (b) the CPU reference cast_master_weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/flow/rank_flow.h"

namespace nvfp4::device {

enum class WeightList {
  kSmall,          // edge_weights(): odd shapes, a few million elements
  kTransformer1B,  // transformer_weights(16): 112 weights, 0.82 B elements
};
enum class CutRule {
  kOdd,    // odd_cuts(): every boundary shares a byte between two ranks
  kEqual,  // equal_cuts()
};

struct NcclFlowOptions {
  WeightList weights = WeightList::kSmall;
  std::uint64_t seed = 1;
  CutRule cut_rule = CutRule::kOdd;
  std::vector<std::int64_t> cuts;  // when not empty: these cut points instead of cut_rule's
  int gpus = 0;                    // 0: every visible GPU
  int steps = 2;                   // steps run back to back; the outputs of the last are checked
  int timeout_s = 300;             // a rank that waits longer on its stream aborts the run
};

struct NcclFlowResult {
  int nccl_version = 0;
  std::vector<std::string> gpus;  // device names, one per rank
  std::vector<WeightShape> shapes;
  std::vector<std::int64_t> cuts;
  std::vector<RankRange> ranks;
  std::int64_t chunk_pitch = 0;
  double last_step_ms = 0;  // slowest rank's last step, collectives included
  // Bytes compared, over all ranks, with each of the two references.
  std::uint64_t bytes_vs_quantize = 0, bytes_vs_reference = 0;
  std::uint64_t mismatched_fields = 0;
  std::vector<std::string> mismatches;  // the first few, one line each
  bool pass() const { return mismatched_fields == 0 && bytes_vs_quantize > 0 && bytes_vs_reference > 0; }
};

// Sets NCCL_NVLS_ENABLE=0 unless it is set. Throws on any CUDA or NCCL error (the message names
// the rank, the call and NCCL's last error), on a timeout, and when fewer than options.gpus (or
// no) CUDA devices are present.
NcclFlowResult run_nccl_flow(const NcclFlowOptions& options);

// The human-readable report, ending with PASS or FAIL.
std::string summary(const NcclFlowOptions& options, const NcclFlowResult& result);

}  // namespace nvfp4::device
