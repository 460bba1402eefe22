// How the Hadamard kernels walk x: a thread per pair of adjacent columns, CTA rows over ranges of
// 16-row chunks, chunks fetched one ahead (ChunkStage, PairLoads), and outputs staged per warp
// (WarpRows); also the grid and mask dispatch their launchers share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "device/kernels/cp_async.cuh"
#include "device/kernels/element_io.cuh"
#include "device/kernels/hadamard16.cuh"
#include "reference/constants.h"

namespace nvfp4::device::hadamard {

constexpr int kThreads = 256;
constexpr int kCtasPerSm = 2;  // __launch_bounds__: at most 128 registers

// Thread p of the x dimension of the grid owns columns 2p and 2p + 1; the y dimension splits the
// chunks of a column into contiguous ranges, one per CTA row.
__device__ __forceinline__ std::int64_t grid_column() { return 2 * (std::int64_t(blockIdx.x) * kThreads + threadIdx.x); }
struct ChunkRange {
  std::int64_t first, last;
};
__device__ __forceinline__ ChunkRange chunk_range(std::int64_t chunks) {
  return {chunks * blockIdx.y / gridDim.y, chunks * (blockIdx.y + 1) / gridDim.y};
}

// A warp's 64 output rows (rows c and c + 1 of each lane) of 32 bytes each per step, staged in
// shared memory so that lanes 2i and 2i + 1 write the two halves of one row with the same
// instruction: whole sectors, where a thread's own stores of its rows cost L2 a write request per
// 16 bytes or fewer, and made the kernels L2-bound. Slot 4 * lane + 2 * h + q holds half q of the
// lane's row c + h, XOR-swizzled within each 128-byte line so that the staging and the stores'
// reads are free of bank conflicts. Every lane of the warp must call store(): the kernels give
// lanes past the last column the last pair to recompute (pair_columns).
constexpr int kWarps = kThreads / 32;
struct WarpRows {
  uint4* slots;  // this warp's 128
  int lane;
  __device__ __forceinline__ static int slot(int s) { return s ^ ((s >> 3) & 7); }
  // slot(4 * lane + 2 * h + q), whose swizzle (lane / 2) % 8 leaves 2 * h + q (bits 0-1) to one XOR.
  __device__ __forceinline__ uint4& half(int h, int q) const { return slots[slot(4 * lane) ^ (2 * h + q)]; }
  // dst(r, q, bytes) writes half q of the warp's row r (0..63), which lane r / 2 staged as its row c + r % 2.
  template <class Dst>
  __device__ __forceinline__ void store(Dst&& dst) const {
    __syncwarp();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int p = lane + 32 * j;
      dst(p / 2, p % 2, slots[slot(p)]);
    }
    __syncwarp();
  }
};

// This thread's column pair for the kernels that store through WarpRows: `own` (grid_column()),
// `c` the pair it computes (own, or the last pair for lanes past the end, which store nothing),
// and `warp_first` the first column of its warp (row r of the warp's WarpRows is column
// warp_first + r).
struct PairColumns {
  std::int64_t own, c, warp_first;
};
__device__ __forceinline__ PairColumns pair_columns(std::int64_t N, int lane) {
  const std::int64_t own = grid_column();
  return {own, min(own, N - 2), own - 2 * lane};
}

// A warp's chunk of x, 16 rows of its 64 columns (2 KB), copied to shared memory by cp.async: a
// lane issues four 16-byte copies a chunk, where 16 loads of its own 4-byte row pieces took 16
// addresses of two instructions each, and 16 registers for the chunk in flight. Lane l copies
// bytes [16 (l % 8), + 16) of rows 4 j + l / 8, j = 0..3: each copy instruction reads four whole
// rows (as many 128-byte lines as a 4-byte load of 32 lanes reads one), and its eight-lane phases
// write one row each, free of bank conflicts, as the 32 lanes' reads of a row are (lane l reads
// word l, its column pair). Segments at or past column N are zeros, written once: lanes past the
// end sum chunks of zeros and store nothing. Every lane of the warp calls fetch() and read() in
// turn, one chunk ahead, for consecutive chunks from the first.
constexpr int kStagedRowBytes = 128;  // a warp's 64 BF16 columns
struct ChunkStage {
  static constexpr int kSlots = 16 * kStagedRowBytes / int(sizeof(uint4));  // a warp's chunk in shared memory
  char* copy_base;                                                          // this lane's segment of row 0 in shared memory
  const char* read_base;                                                    // word `lane` of row 0
  const char* next;  // this lane's segment of row 0 of the next chunk to copy
  std::int64_t row_bytes;
  bool inside;  // this lane's segment lies below column N

  __device__ __forceinline__ ChunkStage(uint4* warp_slots, const std::uint16_t* x, std::int64_t N, std::int64_t warp_first,
                                        int lane, std::int64_t first_chunk)
      : copy_base(reinterpret_cast<char*>(warp_slots) + 16 * lane),
        read_base(reinterpret_cast<const char*>(warp_slots) + 4 * lane),
        next(reinterpret_cast<const char*>(x + (16 * first_chunk + lane / 8) * N + warp_first + 8 * (lane % 8))),
        row_bytes(2 * N),
        inside(warp_first + 8 * (lane % 8) < N) {
    if (!inside)
#pragma unroll
      for (int j = 0; j < 4; ++j) *reinterpret_cast<uint4*>(copy_base + 4 * j * kStagedRowBytes) = make_uint4(0, 0, 0, 0);
  }
  // Starts the copies of the next chunk (they come in order: the index that PairLoads takes is
  // implied), once every lane has read the one before.
  __device__ __forceinline__ void fetch(std::int64_t) {
    __syncwarp();
    if (inside)
#pragma unroll
      for (int j = 0; j < 4; ++j) cp_async16(copy_base + 4 * j * kStagedRowBytes, next + 4 * j * row_bytes);
    cp_async_commit();
    next += 16 * row_bytes;
  }
  // This lane's column pair of the chunk copied last.
  __device__ __forceinline__ ColumnPair read() const {
    cp_async_wait<0>();
    __syncwarp();
    ColumnPair v;
#pragma unroll
    for (int k = 0; k < 16; ++k) v.row[k] = *reinterpret_cast<const std::uint32_t*>(read_base + k * kStagedRowBytes);
    return v;
  }
};

// The same chunks by the lane's own 4-byte loads of its column pair, the next chunk's 16 in
// registers: the amax pass, which encodes nothing and waits on memory more than on its
// instructions, runs faster so (the 16 loads land one by one, where a copied chunk is read only
// once all of it has landed).
struct PairLoads {
  const std::uint16_t* __restrict__ x;
  std::int64_t N, c;
  ColumnPair next;
  __device__ __forceinline__ void fetch(std::int64_t chunk) { next = load_pair(x, N, c, chunk); }
  __device__ __forceinline__ ColumnPair read() const { return next; }
};

// Calls f(std::integral_constant<int, 0>{}) and then f(std::integral_constant<int, 1>{}): the two
// columns of a pair.
template <class F>
__device__ __forceinline__ void for_each_half(F&& f) {
  f(std::integral_constant<int, 0>{});
  f(std::integral_constant<int, 1>{});
}

// Visits this thread's chunks of its column pair, which `chunks` (ChunkStage or PairLoads) fetches
// one ahead: fast(chunk, pair, spans) where binary32 sums both columns exactly, and
// group_end(first, last) after the last chunk of each group of kGroup (counted from chunk 0; first
// and last cut to the range). The chunks that binary32 may not sum, rare in real tensors, are left
// for after the loop: wide(chunk, outputs), the first one remembered, a rescan from it if there are
// more. The loop thus holds no call, whose calling convention would cost the loop its registers.
// With `sum` MMA_SM90 every chunk is left for after the loop (rht_pair_wide).
// kReverse visits the range from its last chunk down (PairLoads only: ChunkStage copies forward;
// groups of one only).
template <int kGroup, bool kReverse = false, class Chunks, class Fast, class Wide, class GroupEnd>
__device__ __forceinline__ void for_each_chunk(const std::uint16_t* __restrict__ x, std::int64_t N, std::int64_t c, ChunkRange r,
                                               Chunks chunks, std::uint16_t mask, RhtSum sum, Fast&& fast, Wide&& wide,
                                               GroupEnd&& group_end) {
  static_assert(!kReverse || kGroup == 1, "groups are counted from the range's first chunk up");
  const std::int64_t step = kReverse ? -1 : 1, end = kReverse ? r.first - 1 : r.last;
  const bool all_wide = sum != RhtSum::EXACT;
  std::int64_t first_wide = -1;
  bool more_wide = false;
  if (r.first < r.last) chunks.fetch(kReverse ? r.last - 1 : r.first);
  for (std::int64_t chunk = kReverse ? r.last - 1 : r.first; chunk != end; chunk += step) {
    const ColumnPair v = chunks.read();
    if (chunk + step != end) chunks.fetch(chunk + step);  // the next chunk flies while this one is summed and encoded
    const PairSpans spans = pair_spans(v);
    if (!all_wide && spans.binary32())
      fast(chunk, v, spans);
    else if (first_wide < 0)
      first_wide = chunk;
    else
      more_wide = true;
    if ((chunk + 1) % kGroup == 0 || chunk + 1 == r.last) group_end(max(chunk - chunk % kGroup, r.first), chunk + 1);
  }
  if (first_wide < 0) return;
  // The other wide chunks lie past the first one in the order of the visit.
  const ChunkRange rescan = !more_wide ? ChunkRange{first_wide, first_wide + 1}
                            : kReverse ? ChunkRange{r.first, first_wide + 1}
                                       : ChunkRange{first_wide, r.last};
  for (std::int64_t chunk = rescan.first; chunk < rescan.last; ++chunk) {
    const ColumnPair v = load_pair(x, N, c, chunk);
    if (all_wide || !pair_spans(v).binary32()) wide(chunk, rht_pair_wide(v, mask, sum));
  }
}

struct NoGroupEnd {
  __device__ void operator()(std::int64_t, std::int64_t) const {}
};

// Grid of the Hadamard kernels: one thread per column pair, and along y as many CTA rows as fill the
// GPU once (each takes a contiguous range of chunks), at most one per chunk. Checks what the
// kernels' 16-byte copies of rows (ChunkStage) and 32-bit loads of column pairs assume.
inline dim3 column_pair_grid(const std::uint16_t* x, std::int64_t M, std::int64_t N) {
  if (M % 16 != 0 || N % 16 != 0) throw std::invalid_argument("rht: M and N must be multiples of 16");
  if (reinterpret_cast<std::uintptr_t>(x) % 16 != 0) throw std::invalid_argument("rht: x must be 16-byte aligned");
  const unsigned columns = grid_for(N / 2, kThreads), fill = kCtasPerSm * current_sm_count() / columns;
  return dim3(columns, unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>(M / 16, fill))));
}

// Calls f(std::true_type{}) for the default mask and f(std::false_type{}) for any other.
template <class F>
void dispatch_mask(std::uint16_t mask, F&& f) {
  if (mask == constants::kRhtDefaultMask) return f(std::true_type{});
  return f(std::false_type{});
}

}  // namespace nvfp4::device::hadamard
