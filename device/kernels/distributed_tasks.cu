// The task tables of the distributed kernels (distributed_tables.cuh): each task checked and
// planned on the host, then the list uploaded once.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "device/kernels/distributed_tables.cuh"
#include "reference/layout.h"

namespace nvfp4::device {

using namespace tables;

namespace {

void require_tiles(const char* op, std::int64_t M, std::int64_t K) {
  if (M < 0 || K < 0 || M % 16 || K % 16) invalid(op, "M and K must be non-negative multiples of 16");
}

Bands shard_bands(const char* op, std::int64_t M, std::int64_t K, std::int64_t start, std::int64_t length) {
  require_tiles(op, M, K);
  if (start < 0 || length < 0 || start + length > M * K) invalid(op, "the shard reaches outside the tensor");
  Bands b;
  b.chunks = ceil_div(K / 16, kBandTiles);
  if (length > 0) {
    b.first = start / K / 16;
    b.rows = (start + length - 1) / K / 16 - b.first + 1;
  }
  return b;
}

// The widest access (at most 16 bytes) that neither the pointer nor the row pitch misaligns.
int access_width(const void* p, std::int64_t pitch) {
  int w = 16;
  while (w > 1 && !(aligned(p, w) && pitch % w == 0)) w /= 2;
  return w;
}

}  // namespace

namespace tables {

Plan<PartialAmaxTask> plan(const PartialAmaxTask& t) {
  Plan<PartialAmaxTask> p;
  p.bands = shard_bands("amax_partial", t.M, t.K, t.start, t.length);
  const std::int64_t tc = t.K / 16, tiles = t.M / 16 * tc;
  p.head = ceil_div(p.bands.first * tc, kZeroTiles);
  p.ctas = p.head + p.bands.ctas() + ceil_div(tiles - (p.bands.first + p.bands.rows) * tc, kZeroTiles);
  return p;
}

Plan<FusedScaleTask> plan(const FusedScaleTask& t) {
  require_tiles("fused_scale_2d", t.M, t.K);
  if (!aligned(t.scale, 4)) invalid("fused_scale_2d", "the scale matrix must be 4-byte aligned");
  Plan<FusedScaleTask> p;
  p.bands = scale_rows(t.M) / 16;
  p.words = scale_cols(t.K) / 4;
  p.chunks = std::max<std::int64_t>(1, ceil_div(p.words, kThreads));
  p.ctas = std::max<std::int64_t>(1, p.bands * p.chunks);  // at least one, which writes S
  return p;
}

Plan<PartialCastTask> plan(const PartialCastTask& t) {
  Plan<PartialCastTask> p;
  p.bands = shard_bands("partial_cast_2d", t.M, t.K, t.start, t.length);
  p.ctas = p.bands.ctas();
  return p;
}

Plan<TransposePackedTask> plan(const TransposePackedTask& t) {
  if (t.M < 0 || t.K < 0 || t.M % 2 || t.K % 2) invalid("transpose_packed", "M and K must be even");
  Plan<TransposePackedTask> p;
  p.tiles_k = ceil_div(t.K, kTpTile);
  p.in_width = access_width(t.in, t.K / 2);
  p.out_width = access_width(t.out, t.M / 2);
  p.ctas = p.tiles_k * ceil_div(t.M, kTpTile);
  return p;
}

Plan<TransposeScalesTask> plan(const TransposeScalesTask& t) {
  if (t.M < 0 || t.K < 0) invalid("transpose_scales_2d", "negative shape");
  if (!aligned(t.out, 4)) invalid("transpose_scales_2d", "the output must be 4-byte aligned");
  Plan<TransposeScalesTask> p;
  p.tiles_i = ceil_div(scale_cols(t.M), kTsI);
  p.ctas = p.tiles_i * ceil_div(scale_rows(t.K), 16 * kTsJ);
  return p;
}

}  // namespace tables

template <class Task>
TaskList<Task>::TaskList(std::vector<Task> tasks, std::optional<cudaStream_t> stream)
    : tasks_(std::move(tasks)), device_(std::make_unique<Device>()) {
  if constexpr (std::is_same_v<Task, PartialCastTask>) prepare_partial_cast();  // before any cast launch
  using TaskPlan = Plan<Task>;
  const std::size_t n = tasks_.size();
  std::vector<TaskPlan> plans;
  std::vector<std::int64_t> first;
  for (const Task& t : tasks_) {
    plans.push_back(plan(t));
    first.push_back(device_->ctas);
    device_->ctas += plans.back().ctas;
  }
  if (device_->ctas > std::numeric_limits<int>::max()) invalid("TaskList", "more than 2^31 - 1 CTAs");
  if (n == 0) return;
  auto padded = [](std::size_t bytes) { return (bytes + 15) / 16 * 16; };
  const std::size_t plans_at = padded(n * sizeof(Task)), first_at = plans_at + padded(n * sizeof(TaskPlan));
  std::vector<std::uint8_t> host(first_at + n * sizeof(std::int64_t));
  std::memcpy(host.data(), tasks_.data(), n * sizeof(Task));
  std::memcpy(host.data() + plans_at, plans.data(), n * sizeof(TaskPlan));
  std::memcpy(host.data() + first_at, first.data(), n * sizeof(std::int64_t));
  device_->storage = allocate(host.size(), stream);
  if (stream) {
    NVFP4_CUDA_CHECK(cudaMemcpyAsync(device_->storage.get(), host.data(), host.size(), cudaMemcpyHostToDevice, *stream));
    NVFP4_CUDA_CHECK(cudaStreamSynchronize(*stream));  // `host` dies here
  } else {
    NVFP4_CUDA_CHECK(cudaMemcpy(device_->storage.get(), host.data(), host.size(), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before the copy lands; launches on any stream
    // must see the table. Once per list, not per launch.
    NVFP4_CUDA_CHECK(cudaDeviceSynchronize());
  }
  auto* base = device_->storage.template get<std::uint8_t>();
  Table<Task>& table = device_->table;
  table.tasks = reinterpret_cast<const Task*>(base);
  table.plans = reinterpret_cast<const TaskPlan*>(base + plans_at);
  table.first_cta = reinterpret_cast<const std::int64_t*>(base + first_at);
  table.count = int(n);
}

template <class Task>
TaskList<Task>::~TaskList() = default;
template <class Task>
TaskList<Task>::TaskList(TaskList&&) noexcept = default;
template <class Task>
TaskList<Task>& TaskList<Task>::operator=(TaskList&&) noexcept = default;

template class TaskList<PartialAmaxTask>;
template class TaskList<FusedScaleTask>;
template class TaskList<PartialCastTask>;
template class TaskList<TransposePackedTask>;
template class TaskList<TransposeScalesTask>;

}  // namespace nvfp4::device
