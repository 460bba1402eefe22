// What the multi-tensor kernels of the distributed 2D weight cast (distributed.h) share: each
// kernel walks a task table, and CTA b finds its task by a binary search over the tasks' first
// CTAs, so one launch covers a whole parameter list. The tables and per-task plans are filled by
// distributed_tasks.cu; the kernels live in distributed_shards.cu, distributed_transpose.cu and
// distributed_gather.cu. Every value comes from the shared formulas (reference/distributed_formulas.h,
// formulas.h, layout.h); only the walk is the kernels' own.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "device/kernels/distributed.h"
#include "device/runtime/check.h"
#include "device/runtime/device_buffer.h"

namespace nvfp4::device {

// Task tables and per-task plans: the types TaskList<Task>::Device holds, the functions that fill
// and read them, and the launches over them.
namespace tables {

constexpr int kThreads = 256;  // every kernel here runs CTAs of 256 threads

// ---- shards walked by tile rows (partial amax, partial cast) ----------------------------------
// A band CTA covers 16 rows (one tile row) x kBandTiles tile columns of the weight. Thread t
// takes row t / 16 of the band and the 16-element segments t % 16 and t % 16 + 16 of that row: a
// segment lies in one tile (one encode factor), a half warp reads 512 contiguous bytes, and no
// thread divides by K.
constexpr int kBandTiles = 32;
constexpr int kSegments = kBandTiles * 16 / kThreads;  // segments per thread

struct Bands {
  std::int64_t first = 0;   // first tile row holding an owned element
  std::int64_t rows = 0;    // tile rows holding owned elements (0 for an empty shard)
  std::int64_t chunks = 0;  // band CTAs per tile row
  __host__ __device__ std::int64_t ctas() const { return rows * chunks; }
};

constexpr int kZeroTiles = 4 * kThreads;  // tile amaxes one zero-fill CTA writes

template <class Task>
struct Plan;

template <>
struct Plan<PartialAmaxTask> {
  Bands bands;
  std::int64_t head = 0;  // zero-fill CTAs for the tiles above the bands; those below come last
  std::int64_t ctas = 0;
};

template <>
struct Plan<FusedScaleTask> {
  std::int64_t bands = 0;   // 16-row bands of the padded scale matrix
  std::int64_t words = 0;   // 4-byte words per scale row
  std::int64_t chunks = 0;  // CTAs per band (a thread per word)
  std::int64_t ctas = 0;
};

template <>
struct Plan<PartialCastTask> {
  Bands bands;
  std::int64_t ctas = 0;
};

template <>
struct Plan<TransposePackedTask> {
  std::int64_t tiles_k = 0;         // 256 x 256 tiles along K
  int in_width = 1, out_width = 1;  // bytes per global access: 16, 8, 4, 2 or 1
  std::int64_t ctas = 0;
};

template <>
struct Plan<TransposeScalesTask> {
  std::int64_t tiles_i = 0;  // tiles along the output columns
  std::int64_t ctas = 0;
};

constexpr int kTpTile = 256;  // transpose_packed: elements of M and of K per CTA
// transpose_scales_2d: 64 row groups x 16 block columns (256 output rows) per CTA; 64 block columns
// gave an 8192² tensor only 64 CTAs for 132 SMs (10 % of copy bandwidth).
constexpr int kTsI = 64, kTsJ = 16;

// What a kernel receives: a table uploaded by TaskList, or (tasks == nullptr) the single task
// `one`, passed by value so that the single-tensor launchers of launch.h upload nothing.
template <class Task>
struct Table {
  const Task* tasks = nullptr;
  const Plan<Task>* plans = nullptr;
  const std::int64_t* first_cta = nullptr;  // [count], non-decreasing
  int count = 0;
  Task one{};
  Plan<Task> one_plan{};
};

// ---- host: plans and validation ---------------------------------------------------------------

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

[[noreturn]] inline void invalid(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

inline bool aligned(const void* p, std::uintptr_t n) { return reinterpret_cast<std::uintptr_t>(p) % n == 0; }

// A task's plan (distributed_tasks.cu); std::invalid_argument for a task the kernels cannot take.
Plan<PartialAmaxTask> plan(const PartialAmaxTask& t);
Plan<FusedScaleTask> plan(const FusedScaleTask& t);
Plan<PartialCastTask> plan(const PartialCastTask& t);
Plan<TransposePackedTask> plan(const TransposePackedTask& t);
Plan<TransposeScalesTask> plan(const TransposeScalesTask& t);

// Fills, once per device, the E2M1 table that the partial-cast kernel reads (e2m1_codes.cuh): the
// table of its own translation unit, distributed_shards.cu, as each has its own copy.
void prepare_partial_cast();

}  // namespace tables

template <class Task>
struct TaskList<Task>::Device {
  DeviceBuffer storage;  // tasks, plans and first CTAs, each 16-byte aligned
  tables::Table<Task> table;
  std::int64_t ctas = 0;
};

namespace tables {

template <class Task>
struct Slot {
  Task task;
  Plan<Task> plan;
  std::int64_t cta;  // this CTA's index among its task's CTAs
};

template <class Task>
__device__ Slot<Task> locate(const Table<Task>& t) {
  const std::int64_t b = blockIdx.x;
  if (!t.tasks) return {t.one, t.one_plan, b};
  // The last task whose first CTA is <= b: a task without CTAs shares its successor's first CTA.
  int lo = 0, hi = t.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (__ldg(t.first_cta + mid) <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  return {t.tasks[lo], t.plans[lo], b - __ldg(t.first_cta + lo)};
}

// One launch of `kernel` over a whole list.
template <class Task, class... Args>
void launch_list(const TaskList<Task>& list, void (*kernel)(Table<Task>, Args...), cudaStream_t stream, Args... args) {
  const auto& d = list.device();
  if (d.ctas == 0) return;
  kernel<<<unsigned(d.ctas), kThreads, 0, stream>>>(d.table, args...);
  NVFP4_CUDA_CHECK_LAUNCH();
}

// One task as a table passed by value: the single-tensor launchers of launch.h.
template <class Task>
void launch_one(const Task& task, void (*kernel)(Table<Task>), cudaStream_t stream) {
  Table<Task> table;
  table.count = 1;
  table.one = task;
  table.one_plan = plan(task);
  if (table.one_plan.ctas == 0) return;
  kernel<<<unsigned(table.one_plan.ctas), kThreads, 0, stream>>>(table);
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace tables
}  // namespace nvfp4::device
