// One data-parallel rank's part of the master-weight cast (NUMERICS.md §3.17) on the device, for
// a parameter list: buffers and task tables are built once, and each step launches a fixed
// number of kernels, however many parameters there are. The collectives are the caller's (NCCL
// across GPUs, or a simulation on one GPU): between the phases it all-reduces (MAX) amax_arena()
// and all-gathers cast_buffer().
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "device/kernels/distributed.h"
#include "device/runtime/device_buffer.h"

namespace nvfp4::device {

struct WeightShape {
  std::int64_t M = 0, K = 0;
};

class RankFlow {
 public:
  // master: this rank's FP32 master values, flat elements [range.begin, range.end) of the
  // concatenation of the weights (device memory, not owned). chunk_pitch >= range.buffer_bytes()
  // is the size of each rank's chunk in the all-gather. Allocates every buffer, uploads the task
  // tables and poisons the outputs (0xA5), so that a byte no kernel writes shows up; throws
  // nvfp4::Error (E_DIM16_*, E_SHARD, E_UNSUPPORTED) for shapes, a range or a profile the flow
  // cannot take. With a stream, every buffer and table is ordered on it and the phases must run
  // on it (a campaign job's flow); without one they may run on any stream, and building and
  // freeing the flow synchronize the device.
  RankFlow(std::vector<WeightShape> shapes, const RankRange& range, const float* master, std::int64_t chunk_pitch,
           const Profile& profile, std::optional<cudaStream_t> stream = std::nullopt);

  // Steps 1-2: BF16 rounding and partial amaxes into amax_arena(): a memset of the arena,
  // launch_round_to_bf16, launch_amax_partial.
  void partial_amax(cudaStream_t stream);
  // Floats to all-reduce with MAX: every weight's tile amaxes, then one global amax per weight.
  // Tiles of weights this rank does not touch hold +0.
  float* amax_arena() const { return amax_.get<float>(); }
  std::int64_t amax_arena_floats() const { return amax_floats_; }

  // Steps 4-6 on the all-reduced arena: fused scales, and the cast of this rank's slice into
  // cast_buffer() (chunk_pitch bytes, zero beyond the rank's bytes): launch_fused_scale_2d, a
  // memset of the chunk, launch_partial_cast_2d.
  void scale_and_cast(cudaStream_t stream);
  std::uint8_t* cast_buffer() const { return chunk_.get<std::uint8_t>(); }
  std::int64_t chunk_pitch() const { return pitch_; }

  // Step 7-8: merges all ranks' chunks (ranks.size() chunks at chunk_pitch) into the rowwise data
  // of every weight, then transposes data and scales: launch_gather_nibbles,
  // launch_transpose_packed, launch_transpose_scales_2d. E_SHARD unless the ranks cover the weights and every rank's bytes fit in
  // a chunk.
  void gather_and_transpose(const std::uint8_t* chunks, const std::vector<RankRange>& ranks, cudaStream_t stream);

  // Outputs of weight i (device memory, layouts of quantize): data [M, K/2], scale compact
  // [roundup(M,128), roundup(K/16,4)], data_t [K, M/2], scale_t [roundup(K,128), roundup(M/16,4)],
  // amax [1] (the all-reduced global amax in the arena: valid until the next partial_amax).
  const std::uint8_t* data(std::size_t i) const;
  const std::uint8_t* scale(std::size_t i) const;
  const std::uint8_t* data_t(std::size_t i) const;
  const std::uint8_t* scale_t(std::size_t i) const;
  const float* amax(std::size_t i) const;
  const std::vector<WeightShape>& shapes() const { return shapes_; }

  // What the phases launch, for benchmarks that time each kernel on its own.
  const TaskList<PartialAmaxTask>& amax_tasks() const { return *amax_tasks_; }
  const TaskList<FusedScaleTask>& fused_scale_tasks() const { return *fused_scale_tasks_; }
  const TaskList<PartialCastTask>& cast_tasks() const { return *cast_tasks_; }
  const TaskList<TransposePackedTask>& transpose_packed_tasks() const { return *transpose_packed_tasks_; }
  const TaskList<TransposeScalesTask>& transpose_scales_tasks() const { return *transpose_scales_tasks_; }

 private:
  std::vector<WeightShape> shapes_;
  RankRange range_;
  const float* master_;
  std::int64_t pitch_;
  Profile profile_;
  std::int64_t total_ = 0;                                     // elements of all weights
  std::vector<std::int64_t> offsets_;                          // flat start of each weight (elements), total last
  std::vector<std::int64_t> tile_offsets_;                     // start of each weight's tiles in the arena (floats)
  std::vector<std::int64_t> scale_offsets_, scale_t_offsets_;  // bytes
  std::int64_t amax_floats_ = 0;
  DeviceBuffer bf16_, amax_, tile_scale_, encode_scale_, chunk_, data_, scale_, data_t_, scale_t_;
  // Built once in the constructor (TaskList has no empty state, hence optional).
  std::optional<TaskList<PartialAmaxTask>> amax_tasks_;
  std::optional<TaskList<FusedScaleTask>> fused_scale_tasks_;
  std::optional<TaskList<PartialCastTask>> cast_tasks_;
  std::optional<TaskList<TransposePackedTask>> transpose_packed_tasks_;
  std::optional<TaskList<TransposeScalesTask>> transpose_scales_tasks_;

  std::size_t weight(std::size_t i) const;  // i, or std::out_of_range
};

}  // namespace nvfp4::device
