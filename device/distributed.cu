// Multi-tensor kernels of the distributed 2D weight cast (NUMERICS.md §3.4, §3.14-§3.17). Each
// kernel walks a task table: CTA b finds its task by a binary search over the tasks' first CTAs,
// so one launch covers a whole parameter list. Every value comes from the shared formulas
// (reference/distributed_formulas.h, formulas.h, layout.h); only the walk is the kernels' own.
#include "device/distributed.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <stdexcept>
#include <string>

#include "device/check.h"
#include "device/device_buffer.h"
#include "device/e2m1_codes.cuh"
#include "device/element_io.cuh"
#include "device/kernels.h"
#include "reference/distributed_formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {

// Task tables and per-task plans: the types TaskList<Task>::Device holds (a named namespace); the
// functions that fill and read them are file-local.
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

constexpr int kTpTile = 256;         // transpose_packed: elements of M and of K per CTA
// transpose_scales_2d: 64 row groups x 16 block columns (256 output rows) per CTA; 64 block columns
// gave an 8192² tensor only 64 CTAs for 132 SMs (10 % of copy bandwidth).
constexpr int kTsI = 64, kTsJ = 16;

// What a kernel receives: a table uploaded by TaskList, or (tasks == nullptr) the single task
// `one`, passed by value so that the single-tensor launchers of kernels.h upload nothing.
template <class Task>
struct Table {
  const Task* tasks = nullptr;
  const Plan<Task>* plans = nullptr;
  const std::int64_t* first_cta = nullptr;  // [count], non-decreasing
  int count = 0;
  Task one{};
  Plan<Task> one_plan{};
};

}  // namespace tables

using namespace tables;

namespace {

// ---- host: plans and validation ---------------------------------------------------------------

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

[[noreturn]] void invalid(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

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

bool aligned(const void* p, std::uintptr_t n) { return reinterpret_cast<std::uintptr_t>(p) % n == 0; }

// The widest access (at most 16 bytes) that neither the pointer nor the row pitch misaligns.
int access_width(const void* p, std::int64_t pitch) {
  int w = 16;
  while (w > 1 && !(aligned(p, w) && pitch % w == 0)) w /= 2;
  return w;
}

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

}  // namespace

template <class Task>
struct TaskList<Task>::Device {
  DeviceBuffer storage;  // tasks, plans and first CTAs, each 16-byte aligned
  Table<Task> table;
  std::int64_t ctas = 0;
};

template <class Task>
TaskList<Task>::TaskList(std::vector<Task> tasks, std::optional<cudaStream_t> stream)
    : tasks_(std::move(tasks)), device_(std::make_unique<Device>()) {
  if constexpr (std::is_same_v<Task, PartialCastTask>) prepare_e2m1_codes();  // before any cast launch
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

namespace {

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
    if (__ldg(t.first_cta + mid) <= b) lo = mid;
    else hi = mid - 1;
  }
  return {t.tasks[lo], t.plans[lo], b - __ldg(t.first_cta + lo)};
}

// ---- unaligned loads and stores -----------------------------------------------------------------

// Word j of bytes [p, ...) from the aligned words x that cover them, p = 4Q + shift/8 bytes past x.
template <int Q, int W>
__device__ __forceinline__ void extract_words(const std::uint32_t (&x)[W + 4], unsigned shift, std::uint32_t (&w)[W]) {
#pragma unroll
  for (int j = 0; j < W; ++j) w[j] = __funnelshift_r(x[j + Q], x[j + Q + 1], shift);
}

// Bytes [p, p + 16N) at any alignment, read as the aligned 16-byte vectors that cover them (the
// caller checks with vectors_inside that those are readable). Adjacent threads share a vector;
// the second read of it hits L1.
template <int N>
__device__ __forceinline__ void load_unaligned(const std::uint8_t* p, std::uint32_t (&w)[4 * N]) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const auto* v = reinterpret_cast<const uint4*>(a & ~std::uintptr_t(15));
  std::uint32_t x[4 * N + 4];
#pragma unroll
  for (int i = 0; i <= N; ++i) {
    const uint4 q = i < N || a % 16 ? __ldg(v + i) : make_uint4(0, 0, 0, 0);
    x[4 * i] = q.x;
    x[4 * i + 1] = q.y;
    x[4 * i + 2] = q.z;
    x[4 * i + 3] = q.w;
  }
  const unsigned shift = 8 * unsigned(a % 4);
  switch (a / 4 % 4) {  // the same for every thread of a task: no divergence
    case 0: extract_words<0>(x, shift, w); break;
    case 1: extract_words<1>(x, shift, w); break;
    case 2: extract_words<2>(x, shift, w); break;
    default: extract_words<3>(x, shift, w); break;
  }
}

// Whether the aligned 16-byte vectors covering [p, p + n) lie inside [base, base + size).
__device__ __forceinline__ bool vectors_inside(const std::uint8_t* p, std::int64_t n, const std::uint8_t* base,
                                               std::int64_t size) {
  const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(base);
  return (a & ~std::uintptr_t(15)) >= b && ((a + n + 15) & ~std::uintptr_t(15)) <= b + size;
}

// 4N words to p with the widest stores its alignment allows (the same for every thread of a
// task), as streaming global stores.
template <int N>
__device__ __forceinline__ void store_unaligned(std::uint8_t* p, const std::uint32_t (&w)[N]) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (N % 4 == 0 && a % 16 == 0) {
#pragma unroll
    for (int i = 0; i < N / 4; ++i) __stcs(reinterpret_cast<uint4*>(p) + i, make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]));
  } else if (N % 2 == 0 && a % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) __stcs(reinterpret_cast<uint2*>(p) + i, make_uint2(w[2 * i], w[2 * i + 1]));
  } else if (a % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i) __stcs(reinterpret_cast<unsigned*>(p) + i, w[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 4 * N; ++i) __stcs(p + i, std::uint8_t(w[i / 4] >> (8 * (i % 4))));
  }
}

// ---- segments of a shard -------------------------------------------------------------------------

// Where a band CTA lies: its tile row and first tile column (fewer than 2^31 CTAs: 32-bit division).
struct BandPos {
  std::int64_t tile_row, tile0;
};

__device__ __forceinline__ BandPos band_pos(const Bands& b, std::int64_t cta) {
  const unsigned c = unsigned(cta), n = unsigned(b.chunks);
  return {b.first + c / n, std::int64_t(c % n) * kBandTiles};
}

// Tile column and first flattened element of segment u of this thread in a band CTA.
struct Segment {
  std::int64_t tile, e0;
};

__device__ __forceinline__ Segment segment(const BandPos& pos, std::int64_t K, int u) {
  const std::int64_t tile = pos.tile0 + threadIdx.x % 16 + 16 * u;
  return {tile, (16 * pos.tile_row + threadIdx.x / 16) * K + 16 * tile};
}

// Segment [e0, e0 + 16) of a shard (xs[i] = W.flat[start + i]) as 8 words of two BF16 values,
// element e0 + 2j in the low half of word j. Elements outside the shard read as +0, which no amax
// and no stored nibble sees.
__device__ __forceinline__ void load_segment(const std::uint16_t* xs, std::int64_t start, std::int64_t length,
                                             std::int64_t e0, std::uint32_t (&w)[8]) {
  const std::int64_t i0 = e0 - start;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(xs);
  if (i0 >= 0 && i0 + 16 <= length && vectors_inside(bytes + 2 * i0, 32, bytes, 2 * length)) {
    load_unaligned<2>(bytes + 2 * i0, w);
    return;
  }
  // The shard's first and last segments: element by element.
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const std::int64_t i = i0 + 2 * j;
    const std::uint32_t lo = i >= 0 && i < length ? xs[i] : 0u, hi = i + 1 >= 0 && i + 1 < length ? xs[i + 1] : 0u;
    w[j] = lo | hi << 16;
  }
}

__device__ __forceinline__ float segment_value(const std::uint32_t (&w)[8], int i) {
  return bf16_to_float(std::uint16_t(w[i / 2] >> (16 * (i % 2))));
}

__device__ __forceinline__ bool overlaps(std::int64_t e0, std::int64_t start, std::int64_t end) {
  return e0 + 16 > start && e0 < end;
}

// ---- §3.4 partial amax -----------------------------------------------------------------------------

// The NaN rule is a template parameter, so that neither rule tests it per element.
template <AmaxRule kRule>
__global__ void __launch_bounds__(kThreads) amax_partial_kernel(Table<PartialAmaxTask> table) {
  const auto [t, p, cta] = locate(table);
  const std::int64_t tc = t.K / 16, band_ctas = p.bands.ctas();
  if (cta < p.head || cta >= p.head + band_ctas) {
    // Tile rows above or below the shard own nothing: +0.
    const bool above = cta < p.head;
    const std::int64_t first = above ? cta * kZeroTiles
                                     : (p.bands.first + p.bands.rows) * tc + (cta - p.head - band_ctas) * kZeroTiles;
    const std::int64_t end = above ? p.bands.first * tc : t.M / 16 * tc;
    for (std::int64_t i = first + threadIdx.x; i < first + kZeroTiles && i < end; i += kThreads) t.tile_amax[i] = 0.0f;
    return;
  }
  const BandPos pos = band_pos(p.bands, cta - p.head);
  const std::int64_t end = t.start + t.length;
  std::uint32_t w[kSegments][8];
  bool owns[kSegments];
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {  // both loads in flight before any use
    const Segment s = segment(pos, t.K, u);
    owns[u] = s.tile < tc && overlaps(s.e0, t.start, end);
    if (owns[u]) load_segment(t.xs, t.start, t.length, s.e0, w[u]);
  }
  float m[kSegments];
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {
    m[u] = 0.0f;
    if (owns[u])
#pragma unroll
      for (int i = 0; i < 16; ++i) m[u] = amax_step(kRule, m[u], segment_value(w[u], i));
  }
  // A tile's 16 rows: lanes l and l + 16 of each warp (rows 2 warp, 2 warp + 1), then the 8 warps.
  __shared__ float warp_tiles[kThreads / 32][kBandTiles];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {
    m[u] = amax_combine(kRule, m[u], __shfl_xor_sync(0xFFFFFFFFu, m[u], 16));
    if (lane < 16) warp_tiles[warp][lane + 16 * u] = m[u];
  }
  __syncthreads();
  if (warp != 0) return;
  float tile = warp_tiles[0][lane];
  for (int i = 1; i < kThreads / 32; ++i) tile = amax_combine(kRule, tile, warp_tiles[i][lane]);
  if (pos.tile0 + lane < tc) t.tile_amax[pos.tile_row * tc + pos.tile0 + lane] = tile;
  for (int o = 16; o > 0; o >>= 1) tile = amax_combine(kRule, tile, __shfl_xor_sync(0xFFFFFFFFu, tile, o));
  // Non-negative floats and the canonical NaN order like their bits (amax_step yields no other NaN).
  if (lane == 0) atomicMax(reinterpret_cast<unsigned*>(t.amax), bits_of(tile));
}

// ---- §3.15 fused scale -------------------------------------------------------------------------------

// A thread computes 4 tile columns of one tile row (P and their E4M3 bytes) and writes that word
// to the band's 16 scale rows; padding rows and columns get 0x00.
__global__ void __launch_bounds__(kThreads) fused_scale_kernel(Table<FusedScaleTask> table, GlobalScaleRule rule) {
  const auto [t, p, cta] = locate(table);
  const float S = distributed_encode_scale(rule, __ldg(t.amax));
  if (cta == 0 && threadIdx.x == 0) *t.encode_scale = S;
  const std::int64_t band = unsigned(cta) / unsigned(p.chunks);
  const std::int64_t word = std::int64_t(unsigned(cta) % unsigned(p.chunks)) * kThreads + threadIdx.x;
  if (band >= p.bands || word >= p.words) return;
  const std::int64_t tr = t.M / 16, tc = t.K / 16;
  const float mult = fused_scale_multiplier(S);
  std::uint32_t bytes = 0;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const std::int64_t j = 4 * word + c;
    if (band < tr && j < tc) {
      const float P = fused_tile_scale(__ldg(t.tile_amax + band * tc + j), mult);
      t.tile_scale[band * tc + j] = P;
      bytes |= std::uint32_t(e4m3sat(P)) << (8 * c);
    }
  }
  auto* rows = reinterpret_cast<std::uint32_t*>(t.scale) + 16 * band * p.words + word;
#pragma unroll
  for (int r = 0; r < 16; ++r) rows[r * p.words] = bytes;
}

// ---- §3.16 partial cast ---------------------------------------------------------------------------

// The nibbles of the owned elements of a segment that straddles a shard end, byte by byte; a byte
// shared with the neighbouring shard keeps its other nibble.
__device__ void store_owned_nibbles(std::uint8_t* dst, std::int64_t byte0, const std::uint32_t (&codes)[2], std::int64_t e0,
                                    std::int64_t start, std::int64_t end) {
  for (int b = 0; b < 8; ++b) {
    const std::int64_t e = e0 + 2 * b;
    const bool lo = e >= start && e < end, hi = e + 1 >= start && e + 1 < end;
    if (!lo && !hi) continue;
    std::uint8_t& out = dst[byte0 + b];
    std::uint8_t v = lo && hi ? 0 : out;
    const std::uint32_t pair = codes[b / 4] >> (8 * (b % 4));
    if (lo) v = with_nibble(v, e, nibble_at(std::uint8_t(pair), 0));
    if (hi) v = with_nibble(v, e + 1, nibble_at(std::uint8_t(pair), 1));
    out = v;
  }
}

// The 16 codes of a segment, element i in nibble i % 8 of codes[i / 8], looked up in the E2M1
// table: the kernel was bound by the integer pipe, and the lookup needs fewer integer
// instructions than e2m1_hw (55 % -> 72 % of copy bandwidth on H100, docs/performance.md); the
// exhaustive test checks the table's codes on all 2^32 inputs.
__device__ __forceinline__ void encode_segment(const std::uint32_t (&w)[8], float enc, std::uint32_t (&codes)[2]) {
  codes[0] = codes[1] = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i)
    codes[i / 8] |= std::uint32_t(e2m1_hw_by_table(mul_rn(segment_value(w, i), enc))) << (4 * (i % 8));
}

__global__ void __launch_bounds__(kThreads) partial_cast_kernel(Table<PartialCastTask> table) {
  const auto [t, p, cta] = locate(table);
  const BandPos pos = band_pos(p.bands, cta);
  const std::int64_t tc = t.K / 16, end = t.start + t.length;
  // The first warp fetches the CTA's 32 tile scales alongside the data loads.
  const bool scale_thread = threadIdx.x < kBandTiles && pos.tile0 + threadIdx.x < tc;
  const float tile_scale = scale_thread ? __ldg(t.tile_scale + pos.tile_row * tc + pos.tile0 + threadIdx.x) : 0.0f;
  std::uint32_t w[kSegments][8];
  std::int64_t e0[kSegments];
  bool owns[kSegments];
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {
    const Segment s = segment(pos, t.K, u);
    e0[u] = s.e0;
    owns[u] = s.tile < tc && overlaps(s.e0, t.start, end);
    if (owns[u]) load_segment(t.xs, t.start, t.length, s.e0, w[u]);
  }
  // One encode factor per tile, shared by the 16 threads (rows) of its column.
  __shared__ float enc[kBandTiles];
  if (scale_thread) enc[threadIdx.x] = partial_cast_encode_factor(tile_scale, partial_cast_decode_scale(__ldg(t.encode_scale)));
  __syncthreads();
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {
    if (!owns[u]) continue;
    std::uint32_t codes[2];
    encode_segment(w[u], enc[threadIdx.x % 16 + 16 * u], codes);
    const std::int64_t byte0 = t.whole_tensor ? e0[u] >> 1 : shard_local_byte(e0[u], t.start);
    if (e0[u] >= t.start && e0[u] + 16 <= end) store_unaligned<2>(t.dst + byte0, codes);
    else store_owned_nibbles(t.dst, byte0, codes, e0[u], t.start, end);
  }
}

// ---- §3.14 packed transpose ------------------------------------------------------------------------

// Transposes an 8 x 8 matrix of nibbles held as 8 words (word i = row i, nibble n = column n)
// in three block swaps: 4x4 blocks, then 2x2, then single nibbles.
__device__ __forceinline__ void transpose_8x8_nibbles(std::uint32_t (&w)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t a = w[i], b = w[i + 4];
    w[i] = (a & 0x0000FFFFu) | (b << 16);
    w[i + 4] = (a >> 16) | (b & 0xFFFF0000u);
  }
#pragma unroll
  for (int i : {0, 1, 4, 5}) {
    const std::uint32_t a = w[i], b = w[i + 2];
    w[i] = (a & 0x00FF00FFu) | ((b << 8) & 0xFF00FF00u);
    w[i + 2] = ((a >> 8) & 0x00FF00FFu) | (b & 0xFF00FF00u);
  }
#pragma unroll
  for (int i : {0, 2, 4, 6}) {
    const std::uint32_t a = w[i], b = w[i + 1];
    w[i] = (a & 0x0F0F0F0Fu) | ((b << 4) & 0xF0F0F0F0u);
    w[i + 1] = ((a >> 4) & 0x0F0F0F0Fu) | (b & 0xF0F0F0F0u);
  }
}

// A CTA moves a 256 x 256 element tile: 256 input rows of 128 bytes into shared memory, each
// thread transposes 32 rows x 8 columns (four 8x8 nibble blocks) in registers into 16 bytes of 8
// output rows, and 256 output rows of 128 bytes go out. Global rows move in accesses of the
// widest width (16 bytes for pitches and pointers that allow it) with consecutive threads on
// consecutive bytes of a row. The tile's 16-byte chunks are XOR-swizzled with (row / 8) % 8, so
// that the 32 output rows a warp writes at once spread over the banks. Outside the tensor the
// tile reads zeros and writes nothing.
constexpr int kTpRowBytes = kTpTile / 2;

__device__ __forceinline__ int tile_offset(int row, int byte) {
  return row * kTpRowBytes + 16 * ((byte / 16) ^ (row / 8 % 8)) + byte % 16;
}

template <int W>
struct Access;  // the type of a W-byte access
template <> struct Access<16> { using type = uint4; };
template <> struct Access<8> { using type = uint2; };
template <> struct Access<4> { using type = std::uint32_t; };
template <> struct Access<2> { using type = std::uint16_t; };
template <> struct Access<1> { using type = std::uint8_t; };

// Rows [0, 256) x bytes [0, 128) of the tile <-> global rows `pitch` bytes apart, of which `rows`
// x `row_bytes` exist (W divides pitch, row_bytes and the pointer: accesses never straddle).
template <int W, bool kIn>
__device__ __forceinline__ void move_rows(std::uint8_t* tile, std::uint8_t* global, std::int64_t pitch,
                                          std::int64_t rows, std::int64_t row_bytes) {
  using V = typename Access<W>::type;
  constexpr int kPerRow = kTpRowBytes / W, kRowsPerPass = kThreads / kPerRow, kPasses = kTpTile / kRowsPerPass;
  const int c = threadIdx.x % kPerRow * W;
#pragma unroll(W >= 8 ? kPasses : 4)  // 16-byte accesses: all 8 loads in flight
  for (int n = 0; n < kPasses; ++n) {
    const int r = threadIdx.x / kPerRow + n * kRowsPerPass;
    V& s = *reinterpret_cast<V*>(tile + tile_offset(r, c));
    V* g = reinterpret_cast<V*>(global + r * pitch + c);
    const bool inside = r < rows && c < row_bytes;
    if (kIn) s = inside ? __ldcs(g) : V{};
    else if (inside) __stcs(g, s);
  }
}

template <bool kIn>
__device__ void move_tile(int width, std::uint8_t* tile, std::uint8_t* global, std::int64_t pitch, std::int64_t rows,
                          std::int64_t row_bytes) {
  switch (width) {  // the same for every thread of a task
    case 16: return move_rows<16, kIn>(tile, global, pitch, rows, row_bytes);
    case 8: return move_rows<8, kIn>(tile, global, pitch, rows, row_bytes);
    case 4: return move_rows<4, kIn>(tile, global, pitch, rows, row_bytes);
    case 2: return move_rows<2, kIn>(tile, global, pitch, rows, row_bytes);
    default: return move_rows<1, kIn>(tile, global, pitch, rows, row_bytes);
  }
}

__global__ void __launch_bounds__(kThreads) transpose_packed_kernel(Table<TransposePackedTask> table) {
  __shared__ uint4 tile_vectors[kTpTile * kTpRowBytes / 16];  // input rows, then output rows
  auto* tile = reinterpret_cast<std::uint8_t*>(tile_vectors);
  const auto [t, p, cta] = locate(table);
  const std::int64_t r0 = std::int64_t(unsigned(cta) / unsigned(p.tiles_k)) * kTpTile;
  const std::int64_t k0 = std::int64_t(unsigned(cta) % unsigned(p.tiles_k)) * kTpTile;
  const std::int64_t in_pitch = t.K / 2, out_pitch = t.M / 2;
  move_tile<true>(p.in_width, tile, const_cast<std::uint8_t*>(t.in) + r0 * in_pitch + k0 / 2, in_pitch, t.M - r0,
                  in_pitch - k0 / 2);
  __syncthreads();
  // Warp g takes rows 32g..32g+31, lane w their word w (columns 8w..8w+7): the 32 lanes read one
  // row's 32 words, a permutation of the banks.
  const int w = threadIdx.x % 32, g = threadIdx.x / 32;
  std::uint32_t block[4][8];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
#pragma unroll
    for (int n = 0; n < 8; ++n) block[q][n] = *reinterpret_cast<const std::uint32_t*>(tile + tile_offset(32 * g + 8 * q + n, 4 * w));
    transpose_8x8_nibbles(block[q]);
  }
  __syncthreads();
  // Output row 8w + n, bytes 16g..16g+15 (input rows 32g..32g+31).
#pragma unroll
  for (int n = 0; n < 8; ++n)
    *reinterpret_cast<uint4*>(tile + tile_offset(8 * w + n, 16 * g)) = make_uint4(block[0][n], block[1][n], block[2][n], block[3][n]);
  __syncthreads();
  move_tile<false>(p.out_width, tile, t.out + k0 * out_pitch + r0 / 2, out_pitch, t.K - k0, out_pitch - r0 / 2);
}

// ---- §3.14 2D scale transpose ------------------------------------------------------------------------

// out[k][i] = in[16 i][k / 16]: a CTA gathers the first row of 64 row groups (64 i) for 16 block
// columns (256 k) into shared memory, then writes 256 output rows of 64 bytes as words.
__global__ void __launch_bounds__(kThreads) transpose_scales_kernel(Table<TransposeScalesTask> table) {
  __shared__ std::uint8_t s[kTsJ][kTsI + 4];  // s[j][i] = in[16 i][j], 0 outside the tensor
  const auto [t, p, cta] = locate(table);
  const std::int64_t in_cols = scale_cols(t.K), out_cols = scale_cols(t.M), out_rows = scale_rows(t.K);
  const std::int64_t i0 = std::int64_t(unsigned(cta) % unsigned(p.tiles_i)) * kTsI;
  const std::int64_t j0 = std::int64_t(unsigned(cta) / unsigned(p.tiles_i)) * kTsJ;
  for (int e = threadIdx.x; e < kTsI * kTsJ; e += kThreads) {
    const int i = e / kTsJ, j = e % kTsJ;  // adjacent threads read adjacent bytes of one row
    s[j][i] = (i0 + i < t.M / 16 && j0 + j < t.K / 16) ? t.in[16 * (i0 + i) * in_cols + j0 + j] : 0;
  }
  __syncthreads();
  // Output words (4 columns i) of rows k in [16 j0, 16 j0 + 1024), padding rows included.
  const int words = int((out_cols - i0 < kTsI ? out_cols - i0 : kTsI) / 4);
  for (int e = threadIdx.x; e < 16 * kTsJ * words; e += kThreads) {
    const int kk = e / words, w = e % words;
    const std::int64_t k = 16 * j0 + kk;
    if (k >= out_rows) break;
    const int j = kk / 16;
    const std::uint32_t v = s[j][4 * w] | s[j][4 * w + 1] << 8 | s[j][4 * w + 2] << 16 | std::uint32_t(s[j][4 * w + 3]) << 24;
    *reinterpret_cast<std::uint32_t*>(t.out + k * out_cols + i0 + 4 * w) = v;
  }
}

// ---- §3.17 step 1: RNbf16 ------------------------------------------------------------------------------

constexpr int kRoundElems = 8;  // per thread: two 16-byte loads, one 16-byte store

__global__ void __launch_bounds__(kThreads) round_to_bf16_kernel(const float* __restrict__ in, std::int64_t n,
                                                                 std::uint16_t* __restrict__ out, bool vectors) {
  const std::int64_t i = (std::int64_t(blockIdx.x) * kThreads + threadIdx.x) * kRoundElems;
  if (vectors && i + kRoundElems <= n) {
    const float4 a = __ldcs(reinterpret_cast<const float4*>(in + i)), b = __ldcs(reinterpret_cast<const float4*>(in + i + 4));
    auto pair = [](float lo, float hi) { return std::uint32_t(float_to_bf16(lo)) | std::uint32_t(float_to_bf16(hi)) << 16; };
    __stcs(reinterpret_cast<uint4*>(out + i), make_uint4(pair(a.x, a.y), pair(a.z, a.w), pair(b.x, b.y), pair(b.z, b.w)));
    return;
  }
  for (std::int64_t e = i; e < i + kRoundElems && e < n; ++e) out[e] = float_to_bf16(in[e]);
}

// ---- §3.17 step 7: nibble-aware gather -------------------------------------------------------------

struct GatherArgs {
  const std::uint8_t* chunks;
  std::int64_t pitch;
  std::uint8_t* out;
  int ranks;
  std::int64_t bound[kMaxRanks + 1];  // rank ρ owns elements [bound[ρ], bound[ρ + 1]); bound[0] = 0
};

// A thread writes 16 output bytes (32 elements): one 16-byte copy when one rank owns all of them,
// else nibble by nibble from their owners.
__global__ void __launch_bounds__(kThreads) gather_nibbles_kernel(GatherArgs a) {
  __shared__ std::int64_t bound[kMaxRanks + 1];
  for (int i = threadIdx.x; i <= a.ranks; i += kThreads) bound[i] = a.bound[i];
  __syncthreads();
  const std::int64_t total = bound[a.ranks], bytes = (total + 1) / 2;
  const std::int64_t b0 = (std::int64_t(blockIdx.x) * kThreads + threadIdx.x) * 16;
  if (b0 >= bytes) return;
  // The owner of element e < total: the last rank starting at or before e (empty ranks precede it).
  auto owner = [&](std::int64_t e) {
    int lo = 0, hi = a.ranks - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (bound[mid] <= e) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const int rho = owner(2 * b0);
  const std::uint8_t* src = a.chunks + rho * a.pitch + (b0 - (bound[rho] >> 1));
  if (2 * b0 + 32 <= bound[rho + 1] && vectors_inside(src, 16, a.chunks, a.ranks * a.pitch)) {
    std::uint32_t w[4];
    load_unaligned<1>(src, w);
    store_unaligned<4>(a.out + b0, w);
    return;
  }
  for (std::int64_t B = b0; B < b0 + 16 && B < bytes; ++B) {
    std::uint8_t v = 0;  // element `total` (odd total) has no owner: 0, as in the reference
    for (std::int64_t e = 2 * B; e < 2 * B + 2 && e < total; ++e) {
      const int r = owner(e);
      v = with_nibble(v, e, nibble_at(a.chunks[r * a.pitch + shard_local_byte(e, bound[r])], int(e & 1)));
    }
    a.out[B] = v;
  }
}

template <class Task, class... Args>
void launch(const TaskList<Task>& list, void (*kernel)(Table<Task>, Args...), cudaStream_t stream, Args... args) {
  const auto& d = list.device();
  if (d.ctas == 0) return;
  kernel<<<unsigned(d.ctas), kThreads, 0, stream>>>(d.table, args...);
  NVFP4_CUDA_CHECK_LAUNCH();
}

// One task as a table passed by value: the single-tensor launchers of kernels.h.
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

}  // namespace

void amax_partial(const TaskList<PartialAmaxTask>& list, AmaxRule rule, cudaStream_t stream) {
  launch(list, rule == AmaxRule::IGNORE ? amax_partial_kernel<AmaxRule::IGNORE> : amax_partial_kernel<AmaxRule::PROPAGATE>,
         stream);
}

void fused_scale_2d(const TaskList<FusedScaleTask>& list, GlobalScaleRule rule, cudaStream_t stream) {
  if (rule != GlobalScaleRule::TE && rule != GlobalScaleRule::TE_HELPER)
    invalid("fused_scale_2d", "the global scale rule must be TE or TE_HELPER (NUMERICS.md §3.15)");
  launch(list, fused_scale_kernel, stream, rule);
}

void partial_cast_2d(const TaskList<PartialCastTask>& list, cudaStream_t stream) {
  launch(list, partial_cast_kernel, stream);
}

void transpose_packed(const TaskList<TransposePackedTask>& list, cudaStream_t stream) {
  launch(list, transpose_packed_kernel, stream);
}

void transpose_scales_2d(const TaskList<TransposeScalesTask>& list, cudaStream_t stream) {
  launch(list, transpose_scales_kernel, stream);
}

void transpose_packed(const std::uint8_t* in, std::int64_t M, std::int64_t K, std::uint8_t* out, cudaStream_t stream) {
  launch_one(TransposePackedTask{in, M, K, out}, transpose_packed_kernel, stream);
}

void transpose_scales_2d(const std::uint8_t* in, std::int64_t M, std::int64_t K, std::uint8_t* out,
                         cudaStream_t stream) {
  launch_one(TransposeScalesTask{in, M, K, out}, transpose_scales_kernel, stream);
}

void round_to_bf16(const float* in, std::int64_t n, std::uint16_t* out, cudaStream_t stream) {
  if (n < 0) invalid("round_to_bf16", "negative length");
  if (n == 0) return;
  const bool vectors = aligned(in, 16) && aligned(out, 16);
  round_to_bf16_kernel<<<grid_for(ceil_div(n, kRoundElems), kThreads), kThreads, 0, stream>>>(in, n, out, vectors);
  NVFP4_CUDA_CHECK_LAUNCH();
}

void gather_nibbles(const std::uint8_t* chunks, std::int64_t chunk_pitch, const std::vector<RankRange>& ranks,
                    std::uint8_t* out, cudaStream_t stream) {
  constexpr const char* op = "gather_nibbles";
  if (ranks.size() > std::size_t(kMaxRanks)) invalid(op, "more than kMaxRanks ranks");
  GatherArgs a{chunks, chunk_pitch, out, int(ranks.size()), {}};
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].begin != (r ? ranks[r - 1].end : 0) || ranks[r].end < ranks[r].begin)
      invalid(op, "the ranks must cut [0, total) into consecutive ranges");
    if (ranks[r].buffer_bytes() > chunk_pitch) invalid(op, "a rank's buffer is longer than the chunk pitch");
    a.bound[r] = ranks[r].begin;
    a.bound[r + 1] = ranks[r].end;
  }
  const std::int64_t bytes = ranks.empty() ? 0 : (ranks.back().end + 1) / 2;
  if (bytes == 0) return;
  gather_nibbles_kernel<<<grid_for(ceil_div(bytes, 16), kThreads), kThreads, 0, stream>>>(a);
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
