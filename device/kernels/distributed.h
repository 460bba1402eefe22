// Host launchers of the distributed 2D weight cast (NUMERICS.md §3.4, §3.14-§3.17) as
// multi-tensor operations: one kernel launch processes the shards of a whole parameter list, as an
// optimizer step does. The per-tensor task tables are uploaded once (a parameter list does not
// change between steps), so a step launches a fixed number of kernels whatever the list's length.
// Plain C++ (no CUDA syntax). All pointers in tasks are device pointers. Launchers are named
// launch_<operation>, as in launch.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <cuda_runtime_api.h>

#include "reference/partition.h"
#include "reference/profile.h"

namespace nvfp4::device {

// A task table in device memory plus the per-task work split its kernel needs. The constructor
// checks every task (std::invalid_argument) and uploads the table once; launches on the list then
// neither allocate nor copy. An empty list launches nothing. Without a stream the table serves
// launches on any stream (the upload synchronizes the device); with one, it is allocated and
// uploaded on that stream, which is then the only one its launches may use (no device-wide
// synchronization: other streams' work goes on).
template <class Task>
class TaskList {
 public:
  explicit TaskList(std::vector<Task> tasks, std::optional<cudaStream_t> stream = std::nullopt);
  ~TaskList();
  TaskList(TaskList&&) noexcept;
  TaskList& operator=(TaskList&&) noexcept;

  const std::vector<Task>& tasks() const { return tasks_; }
  struct Device;  // defined by the kernels' translation unit
  const Device& device() const { return *device_; }

 private:
  std::vector<Task> tasks_;
  std::unique_ptr<Device> device_;
};

// ---- §3.4 partial amax ----------------------------------------------------------------------
struct PartialAmaxTask {
  const std::uint16_t* xs = nullptr;  // BF16 shard values, xs[i] = W.flat[start + i]
  std::int64_t M = 0, K = 0, start = 0, length = 0;
  float* tile_amax = nullptr;  // [M/16, K/16]: every tile written, +0 where the shard owns nothing
  float* amax = nullptr;       // [1]: must hold +0 before the launch; the shard amax is combined in
};
// Tasks may share `amax` (it receives the max of their shard amaxes), not `tile_amax`.
void launch_amax_partial(const TaskList<PartialAmaxTask>& list, AmaxRule rule, cudaStream_t stream);

// ---- §3.15 fused scale ------------------------------------------------------------------------
struct FusedScaleTask {
  const float* tile_amax = nullptr;  // [M/16, K/16], all-reduced
  const float* amax = nullptr;       // [1], all-reduced global amax g
  std::int64_t M = 0, K = 0;
  float* tile_scale = nullptr;    // P [M/16, K/16]
  std::uint8_t* scale = nullptr;  // compact rowwise [roundup(M,128), roundup(K/16,4)], padding 0x00; 4-byte aligned
  float* encode_scale = nullptr;  // [1]: S
};
void launch_fused_scale_2d(const TaskList<FusedScaleTask>& list, GlobalScaleRule rule, cudaStream_t stream);

// ---- §3.16 partial cast -----------------------------------------------------------------------
struct PartialCastTask {
  const std::uint16_t* xs = nullptr;  // BF16 shard values
  std::int64_t M = 0, K = 0, start = 0, length = 0;
  const float* tile_scale = nullptr;    // P
  const float* encode_scale = nullptr;  // S
  std::uint8_t* dst = nullptr;          // shard-local bytes [start/2, (start+length+1)/2), or the whole [M, K/2]
  bool whole_tensor = false;
};
// Writes exactly the nibbles of owned elements; the other nibble of a boundary byte is kept (a
// read-modify-write, so tasks of one list must not share a destination byte: shards of one tensor
// cast into one whole-tensor buffer go to separate launches when a shard boundary is odd).
void launch_partial_cast_2d(const TaskList<PartialCastTask>& list, cudaStream_t stream);

// ---- §3.14 transposes of many tensors --------------------------------------------------------
struct TransposePackedTask {
  const std::uint8_t* in = nullptr;  // [M, K/2]
  std::int64_t M = 0, K = 0;
  std::uint8_t* out = nullptr;  // [K, M/2]
};
void launch_transpose_packed(const TaskList<TransposePackedTask>& list, cudaStream_t stream);

struct TransposeScalesTask {
  const std::uint8_t* in = nullptr;  // 2D rowwise compact scales of an [M, K] tensor
  std::int64_t M = 0, K = 0;
  std::uint8_t* out = nullptr;  // columnwise compact scales, padding 0x00; 4-byte aligned
};
void launch_transpose_scales_2d(const TaskList<TransposeScalesTask>& list, cudaStream_t stream);

// ---- §3.17 steps 1 and 7 ----------------------------------------------------------------------
// out[i] = RNbf16(in[i]) for i < n.
void launch_round_to_bf16(const float* in, std::int64_t n, std::uint16_t* out, cudaStream_t stream);

// The nibble-aware all-gather's merge: rank ρ's buffer (ranks[ρ].buffer_bytes() bytes) sits at
// chunks + ρ * chunk_pitch (as ncclAllGather of equal-size chunks leaves it); byte B of out
// ((total + 1) / 2 bytes) takes its low nibble from the owner of element 2B and its high nibble
// from the owner of element 2B+1. `ranks` is host memory, consecutive ranges from element 0 (as
// rank_ranges makes them); R = ranks.size() <= kMaxRanks.
void launch_gather_nibbles(const std::uint8_t* chunks, std::int64_t chunk_pitch, const std::vector<RankRange>& ranks,
                           std::uint8_t* out, cudaStream_t stream);

}  // namespace nvfp4::device
