// The NVFP4 GEMM in EXACT mode (NUMERICS.md §3.20.3) and in the MMA modes (§3.20.6), and the
// row-scaled post-scale (§3.20.4). Integer tensor cores give each block's P_j, two integer
// multiply-adds per output and block scale it exactly into a 64-bit integer sum; EXACT rounds the
// sum once (exact_round.cuh), the MMA modes round it toward zero after every 64-element chunk
// where no term is truncated and leave the other outputs to an exact per-output pass
// (mma_chain.cuh). Why each step is exact, the tiling and the register budget:
// docs/design/gemm-kernel.md.
#include <mutex>
#include <stdexcept>
#include <string>

#include "device/kernels/cp_async.cuh"
#include "device/kernels/element_io.cuh"
#include "device/kernels/exact_round.cuh"
#include "device/kernels/gemm_split.h"
#include "device/kernels/launch.h"
#include "device/kernels/mma_chain.cuh"
#include "device/runtime/check.h"
#include "reference/half_float.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

// ---- pre-pass: int8 operands and NaN rows ----------------------------------------------------

constexpr int kTileM = 128, kTileN = 128;  // CTA tile; operand rows are padded to 128
constexpr int kTileK = 64;                 // 4 blocks of 16 per pipeline stage
constexpr int kBlocksPerStage = kTileK / 16;

// Four E2M1 codes (the low 16 bits, first element in the lowest nibble) as int8 values 2·f4.
__device__ __forceinline__ std::uint32_t twice_values(std::uint32_t codes) {
  std::uint32_t r = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t code = (codes >> (4 * i)) & 0xFu;
    const int v = int(__byte_perm(0x03020100u, 0x0C080604u, code & 7u) & 0xFFu);  // 0 1 2 3 4 6 8 12
    r |= std::uint32_t(std::uint8_t(code & 8u ? -v : v)) << (8 * i);              // -0 -> 0
  }
  return r;
}

// packed [rows, K/2] -> int8 [padded_rows, padded_k], zero outside [rows, K]: one 16-byte chunk each.
__global__ void expand_kernel(const std::uint8_t* __restrict__ packed, std::int64_t rows, std::int64_t K,
                              std::int64_t padded_rows, std::int64_t padded_k, std::int8_t* __restrict__ out) {
  const std::int64_t chunks = padded_k / 16, i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= padded_rows * chunks) return;
  const std::int64_t r = i / chunks, c = i % chunks;
  uint4 v = make_uint4(0, 0, 0, 0);
  if (r < rows && 16 * c < K) {
    const uint2 p = *reinterpret_cast<const uint2*>(packed + r * (K / 2) + 8 * c);
    v = make_uint4(twice_values(p.x), twice_values(p.x >> 16), twice_values(p.y), twice_values(p.y >> 16));
  }
  *reinterpret_cast<uint4*>(out + r * padded_k + 16 * c) = v;
}

// nan[r] = any of the `blocks` real scale bytes of row r is NaN (0x7F / 0xFF); one warp per row.
__global__ void nan_rows_kernel(const std::uint8_t* __restrict__ scale, std::int64_t rows, std::int64_t blocks,
                                std::int64_t pitch, std::uint8_t* __restrict__ nan) {
  const std::int64_t r = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;  // uniform per warp
  bool any = false;
  for (std::int64_t j = lane; j < blocks; j += 32) any |= (scale[r * pitch + j] & 0x7Fu) == 0x7Fu;
  any = __any_sync(0xFFFFFFFFu, any);
  if (lane == 0) nan[r] = any;
}

// n = f8(b) · 2^9 (an integer, |n| < 2^18); NaN bytes give 0, the NaN rows carry them. The MMA
// modes read the byte as UE4M3: bit 7 cleared first.
__device__ __forceinline__ std::int32_t scale_n(std::uint32_t b) {
  const int e = (b >> 3) & 0xF, m = b & 7;
  const int n = e == 0xF && m == 7 ? 0 : e == 0 ? m : (8 | m) << (e - 1);
  return b & 0x80u ? -n : n;
}

// n[b][r] = scale_n of scale byte (r, b), for every row of [padded_rows] and block of
// [padded_k / 16]; padding bytes are 0x00 (n = 0).
__global__ void n_expand_kernel(const std::uint8_t* __restrict__ scale, std::int64_t padded_rows, std::int64_t blocks,
                                bool unsigned_scales, std::int32_t* __restrict__ n) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // = b * padded_rows + r
  if (i >= padded_rows * blocks) return;
  const std::int64_t b = i / padded_rows, r = i % padded_rows;
  const std::uint8_t byte = scale[r * blocks + b];
  n[i] = scale_n(unsigned_scales ? byte & 0x7Fu : byte);
}

// MMA modes: for each 64-element chunk and row, the least and the largest u (n = m·2^u) over the
// chunk's 4 blocks with n ≠ 0, packed as int16 pairs (low: least, 127 if none; high: largest,
// -128 if none), from n [blocks][padded_rows] into [blocks / 4][padded_rows].
__global__ void chunk_u_kernel(const std::int32_t* __restrict__ n, std::int64_t padded_rows, std::int64_t chunks,
                               std::int32_t* __restrict__ u) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // = c * padded_rows + r
  if (i >= padded_rows * chunks) return;
  const std::int64_t c = i / padded_rows, r = i % padded_rows;
  int lo = 127, hi = -128;
#pragma unroll
  for (int j = 0; j < kBlocksPerStage; ++j) {
    const std::int32_t v = n[(kBlocksPerStage * c + j) * padded_rows + r];
    if (v == 0) continue;
    lo = min(lo, mma::scale_u(v));
    hi = max(hi, mma::scale_u(v));
  }
  u[i] = int(std::uint32_t(std::uint16_t(std::int16_t(lo))) | (std::uint32_t(std::uint16_t(std::int16_t(hi))) << 16));
}

// ---- the main kernel ---------------------------------------------------------------------------

constexpr int kStages = 3;
constexpr int kThreads = 256;  // 8 warps, 2 (M) x 4 (N), each 64 x 32 outputs
constexpr int kWarpM = 64, kWarpN = 32;
constexpr int kFragsM = kWarpM / 16, kFragsN = kWarpN / 8;  // m16n8 fragments per warp
constexpr int kOutputs = kFragsM * kFragsN * 4;             // per thread
constexpr int kRasterGroup = 8;                             // CTAs walk 8 row tiles at a time, for L2 reuse

struct Stage {
  std::int8_t a[kTileM * kTileK];  // 16-byte chunks swizzled (chunk_offset)
  std::int8_t b[kTileN * kTileK];
  std::int32_t a_n[kBlocksPerStage][kTileM];  // the stage's decoded scales n = f8 · 2^9 (pre-pass)
  std::int32_t b_n[kBlocksPerStage][kTileN];
  std::int32_t a_u[kTileM];  // MMA modes: the chunk's u bounds per row (chunk_u_kernel)
  std::int32_t b_u[kTileN];
};

// The epilogue's per-row and per-column inputs, loaded when the CTA starts rather than from
// global memory for each output inside the epilogue's loop.
struct EdgeInputs {
  float bias[kTileN];
  std::uint8_t row_nan[kTileM];
  std::uint8_t col_nan[kTileN];
};

struct Shared {
  // The main loop's buffers, then (after a barrier) the epilogue's: each thread's sums T, which
  // the epilogue reads by a runtime index (registers cannot be indexed at run time).
  union {
    Stage stage[kStages];
    long long total[kOutputs][kThreads];
  };
  EdgeInputs edge;
};

struct Args {
  const std::int8_t* a;         // [roundup(M, 128), padded_k]
  const std::int8_t* b;         // [roundup(N, 128), padded_k]
  const std::int32_t* a_n;      // decoded scales [padded_k / 16][a_rows]: n_expand_kernel
  const std::int32_t* b_n;      // [padded_k / 16][b_rows]
  std::int64_t a_rows, b_rows;  // padded rows: roundup(M, 128), roundup(N, 128)
  const std::uint8_t* a_nan;    // [M]
  const std::uint8_t* b_nan;    // [N]
  std::int64_t M, N, padded_k;
  float alpha;
  bool has_c;  // beta given and nonzero
  float beta;
  const float* c;
  const float* bias;
  OutputType output;
  void* d;
  // The tail split (gemm_split.h): CTAs from whole_tiles on each compute one part of a tail tile's
  // stages and add its totals into part_sums [tail tile][kOutputs][kThreads], zeroed before launch.
  std::int64_t whole_tiles;
  int parts, stages;
  unsigned long long* part_sums;
  unsigned* part_arrivals;  // [tail tile], zeroed before launch
  // MMA modes (never split): the model's F and zero exponent, the chunks' u bounds, and one byte
  // per output, set where a chunk was not exact, for mma_fixup_kernel.
  int fraction_bits, zero_exponent;
  const std::int32_t* a_u;  // [padded_k / 64][a_rows]
  const std::int32_t* b_u;
  std::uint8_t* slow;  // [M, N], zeroed before launch
  std::int64_t K;
};

// Byte offset of 16-byte chunk `chunk` (= block) of tile row `row`: XOR-swizzled so that the 8
// rows of one ldmatrix hit 8 different bank groups.
__device__ __forceinline__ int chunk_offset(int row, int chunk) { return row * kTileK + ((chunk ^ ((row >> 1) & 3)) << 4); }

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(p)));
}

// One block's 16x8 integer products P_j (from zero) for rows g, g+8, columns 2t, 2t+1.
__device__ __forceinline__ void mma_block(std::uint32_t a0, std::uint32_t a1, std::uint32_t b, std::int32_t (&c)[4]) {
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %7, %7, %7};\n"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a0), "r"(a1), "r"(b), "r"(0));
}

template <bool kMma>
__device__ __forceinline__ void load_stage(Stage& st, const Args& p, std::int64_t m0, std::int64_t n0, int step, int tid) {
  const std::int64_t k0 = std::int64_t(step) * kTileK;
  static_assert(kTileM == kTileN && kTileM * 4 % kThreads == 0, "whole 16-byte chunks per thread");
#pragma unroll 1  // kept rolled: unrolled, ptxas hoists the addresses and spills (255 registers)
  for (int k = 0; k < kTileM * 4 / kThreads; ++k) {  // a fixed count, not a loop over tid
    const int i = tid + k * kThreads, row = i >> 2, chunk = i & 3;
    cp_async16(st.a + chunk_offset(row, chunk), p.a + (m0 + row) * p.padded_k + k0 + 16 * chunk);
    cp_async16(st.b + chunk_offset(row, chunk), p.b + (n0 + row) * p.padded_k + k0 + 16 * chunk);
  }
  // The stage's decoded scales: 4 blocks x 128 rows of int32 per operand, 16 bytes per thread.
  static_assert(kBlocksPerStage * kTileM / 4 == kThreads / 2, "one 16-byte chunk of n per thread");
  const int j = tid % (kThreads / 2), block = j / (kTileM / 4), row = 4 * (j % (kTileM / 4));
  const std::int64_t b = std::int64_t(step) * kBlocksPerStage + block;
  if (tid < kThreads / 2)
    cp_async16(&st.a_n[block][row], p.a_n + b * p.a_rows + m0 + row);
  else
    cp_async16(&st.b_n[block][row], p.b_n + b * p.b_rows + n0 + row);
  if constexpr (kMma) {  // 128 int32 per operand: 32 threads each
    const int r = 4 * (tid % 32);
    if (tid < 32)
      cp_async16(&st.a_u[r], p.a_u + std::int64_t(step) * p.a_rows + m0 + r);
    else if (tid < 64)
      cp_async16(&st.b_u[r], p.b_u + std::int64_t(step) * p.b_rows + n0 + r);
  }
}

// One group: the 4 MMAs of one A fragment (rows wm + 16·row .. +15) with the 4 B fragments.
__device__ __forceinline__ void mma_group(const std::uint32_t (&af)[4], int half, const std::uint32_t (&bf)[4],
                                          std::int32_t (&c)[kFragsN][4]) {
#pragma unroll
  for (int f = 0; f < kFragsN; ++f) mma_block(af[2 * half], af[2 * half + 1], bf[f], c[f]);
}

// acc += P_j · n_a · n_b for every output of the warp tile and every block of the stage: one
// 32-bit multiply (P_j · n_a, |.| < 2^29) and one 32 x 32 + 64-bit multiply-add per output and block.
// Software-pipelined over 16 groups (4 blocks x 4 A fragments): the fragments, scales and MMAs of
// group q + 1 are issued before the multiply-adds of group q, so the MMA latency overlaps them.
// Only the order of independent instructions changes, not the arithmetic (docs/design/gemm-kernel.md, "ILP").
// MMA modes: before the stage, which outputs' chunk is exact (mma::chunk_is_exact); after it,
// those are rounded toward zero and the others marked in `slow` for mma_fixup_kernel.
template <bool kMma>
__device__ __forceinline__ void compute_stage(const Stage& st, int wm, int wn, int lane, long long (&acc)[kOutputs],
                                              unsigned long long& slow, int fraction_bits) {
  const int g = lane >> 2, t = lane & 3, q8 = lane >> 3;
  unsigned long long exact = 0;
  if constexpr (kMma) {
    int pa[kFragsM][2], pb[kFragsN][2], hi_a = -128, hi_b = -128;  // the u bounds of this thread's rows, columns
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int i = 0; i < kFragsM; ++i) hi_a = max(hi_a, (pa[i][h] = st.a_u[wm + 16 * i + g + 8 * h]) >> 16);
#pragma unroll
      for (int f = 0; f < kFragsN; ++f) hi_b = max(hi_b, (pb[f][h] = st.b_u[wn + 8 * f + 2 * t + h]) >> 16);
    }
    // Every output at once when no term can be cut: the cut is at most one unit while the
    // alignment is at most top = F − 20, that is while every |acc| < 2^36 (the OR of the magnitudes
    // less one, below 2^35, ensures it) and every u_a + u_b − 12 ≤ top.
    unsigned long long magnitudes = 0;
#pragma unroll
    for (int q = 0; q < kOutputs; ++q) magnitudes |= static_cast<unsigned long long>(acc[q] ^ (acc[q] >> 63));
    const int top = fraction_bits + mma::kUnitExponent;  // the largest alignment with a cut of one unit
    if (hi_a + hi_b - 12 <= top && magnitudes < (1ull << (top - mma::kUnitExponent))) {
      exact = ~0ull;
    } else {
#pragma unroll
      for (int q = 0; q < kOutputs; ++q) {
        const int r = q % 4, f = q / 4 % kFragsN, i = q / 4 / kFragsN;
        const int a = pa[i][r >> 1], b = pb[f][r & 1];
        const int u_min = int(std::int16_t(a & 0xFFFF)) + int(std::int16_t(b & 0xFFFF)), u_max = (a >> 16) + (b >> 16);
        if (mma::chunk_is_exact(acc[q], u_min, u_max, fraction_bits)) exact |= 1ull << q;
      }
    }
  }
  constexpr int kGroups = kBlocksPerStage * kFragsM;
  std::uint32_t bf[2][4], af[2][4];  // by block parity; by A fragment pair parity
  int2 nb[2][kFragsN];               // by block parity
  std::int32_t na[2][2];             // by group parity
  std::int32_t c[2][kFragsN][4];     // by group parity
  // Issue everything group q needs except its multiply-adds.
  auto issue = [&](int grp) {
    const int block = grp / kFragsM, row = grp % kFragsM;
    if (row == 0) ldmatrix_x4(bf[block & 1], st.b + chunk_offset(wn + 8 * (lane >> 3) + (lane & 7), block));
    if (row % 2 == 0)
      ldmatrix_x4(af[(row / 2) & 1], st.a + chunk_offset(wm + 16 * (row + (q8 >> 1)) + 8 * (q8 & 1) + (lane & 7), block));
    mma_group(af[(row / 2) & 1], row & 1, bf[block & 1], c[grp & 1]);
    na[grp & 1][0] = st.a_n[block][wm + 16 * row + g];
    na[grp & 1][1] = st.a_n[block][wm + 16 * row + g + 8];
    if (row == 0) {
#pragma unroll
      for (int f = 0; f < kFragsN; ++f) nb[block & 1][f] = *reinterpret_cast<const int2*>(&st.b_n[block][wn + 8 * f + 2 * t]);
    }
  };
  issue(0);
#pragma unroll
  for (int grp = 0; grp < kGroups; ++grp) {
    if (grp + 1 < kGroups) issue(grp + 1);
    const int block = grp / kFragsM, row = grp % kFragsM;
#pragma unroll
    for (int f = 0; f < kFragsN; ++f) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const std::int32_t u = c[grp & 1][f][r] * na[grp & 1][r >> 1];  // P_j · n_a, exact in 32 bits
        acc[(row * kFragsN + f) * 4 + r] += static_cast<long long>(u) * (r & 1 ? nb[block & 1][f].y : nb[block & 1][f].x);
      }
    }
  }
  if constexpr (kMma) {
#pragma unroll
    for (int q = 0; q < kOutputs; ++q) acc[q] = mma::keep_24_bits(acc[q]);
    slow |= ~exact;
  }
}

__device__ __forceinline__ void store_output(const Args& p, std::int64_t i, float v) {
  switch (p.output) {
    case OutputType::F32:
      static_cast<float*>(p.d)[i] = v;
      break;
    case OutputType::BF16:
      static_cast<std::uint16_t*>(p.d)[i] = float_to_bf16(v);
      break;
    case OutputType::F16:
      static_cast<std::uint16_t*>(p.d)[i] = float_to_half(v);
      break;
  }
}

// Adds one part's totals (in `total`) into its tail tile's sums; true for the part that arrives
// last, whose `total` then holds the tile's whole T. Two's-complement addition is exact: each
// part's T and the tile's are below 2^63 in magnitude, so the sum modulo 2^64 is the exact T in
// any order. Rolled loops over shared memory, so that the main loop's registers are not touched.
__device__ __forceinline__ bool add_part(const Args& p, std::int64_t tail_tile, long long (&total)[kOutputs][kThreads], int tid) {
  unsigned long long* sums = p.part_sums + tail_tile * kOutputs * kThreads;
#pragma unroll 1
  for (int q = 0; q < kOutputs; ++q) atomicAdd(&sums[q * kThreads + tid], static_cast<unsigned long long>(total[q][tid]));
  __threadfence();  // this thread's additions are visible before the CTA's arrival is counted
  __syncthreads();
  // No static shared variable: it would shift the dynamic buffers off their 128-byte alignment.
  if (!__syncthreads_or(tid == 0 && atomicAdd(&p.part_arrivals[tail_tile], 1u) == unsigned(p.parts - 1))) return false;
  __threadfence();
#pragma unroll 1
  for (int q = 0; q < kOutputs; ++q) total[q][tid] = static_cast<long long>(__ldcg(&sums[q * kThreads + tid]));
  return true;
}

template <bool kMma>
__global__ void __launch_bounds__(kThreads, 1) gemm_kernel(const Args p) {
  extern __shared__ __align__(16) unsigned char smem[];
  Shared& shared = *reinterpret_cast<Shared*>(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp / 4) * kWarpM, wn = (warp % 4) * kWarpN;

  // This CTA's tile and its stages [first_stage, first_stage + steps): all of them, or one part.
  const bool part_of_tile = blockIdx.x >= p.whole_tiles;
  const std::int64_t past_whole = blockIdx.x - p.whole_tiles;
  const std::int64_t pid = part_of_tile ? p.whole_tiles + past_whole / p.parts : std::int64_t(blockIdx.x);
  const int part = part_of_tile ? int(past_whole % p.parts) : 0, parts = part_of_tile ? p.parts : 1;
  const int first_stage = int(std::int64_t(p.stages) * part / parts);
  const int steps = int(std::int64_t(p.stages) * (part + 1) / parts) - first_stage;

  // Grouped raster: consecutive CTAs share a band of kRasterGroup row tiles.
  const std::int64_t tiles_m = (p.M + kTileM - 1) / kTileM, tiles_n = (p.N + kTileN - 1) / kTileN;
  const std::int64_t per_group = kRasterGroup * tiles_n;
  const std::int64_t first = pid / per_group * kRasterGroup;
  const std::int64_t height = min(tiles_m - first, std::int64_t(kRasterGroup));
  const std::int64_t m0 = (first + pid % per_group % height) * kTileM, n0 = pid % per_group / height * kTileN;

  if (tid < kTileM) {
    shared.edge.row_nan[tid] = m0 + tid < p.M ? p.a_nan[m0 + tid] : 0;
  } else {
    const int j = tid - kTileM;
    shared.edge.col_nan[j] = n0 + j < p.N ? p.b_nan[n0 + j] : 0;
    shared.edge.bias[j] = p.bias && n0 + j < p.N ? p.bias[n0 + j] : 0.0f;
  }

  long long acc[kOutputs];  // T so far: |T| < 76,087 · 2^47 < 2^63 (kGemmMaxBlocks); MMA: the accumulator
#pragma unroll
  for (int q = 0; q < kOutputs; ++q) acc[q] = 0;
  unsigned long long slow = 0;  // MMA modes: bit q, output q left to mma_fixup_kernel

#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < steps) load_stage<kMma>(shared.stage[i], p, m0, n0, first_stage + i, tid);
    cp_async_commit();
  }
  // One barrier per stage; the scales arrive decoded with their stage.
  for (int step = 0; step < steps; ++step) {
    cp_async_wait<kStages - 2>();  // stage step has landed (this thread's copies)
    __syncthreads();               // ... everyone's; every warp is done with stage step - 1
    const int next = step + kStages - 1;
    if (next < steps) load_stage<kMma>(shared.stage[next % kStages], p, m0, n0, first_stage + next, tid);
    cp_async_commit();
    compute_stage<kMma>(shared.stage[step % kStages], wm, wn, lane, acc, slow, p.fraction_bits);
  }
  __syncthreads();  // every warp is done with the pipeline's buffers, which the totals overwrite
#pragma unroll
  for (int q = 0; q < kOutputs; ++q) shared.total[q][tid] = acc[q];
  // The tail tile's index is recomputed here rather than kept live across the loop.
  if (blockIdx.x >= p.whole_tiles && !add_part(p, (blockIdx.x - p.whole_tiles) / p.parts, shared.total, tid)) return;

  const int g = lane >> 2, t = lane & 3;
  // Outputs q and q + 1 are columns 2t and 2t + 1 of one row: one 8-byte store where both exist
  // and the output is FP32 with an even row pitch.
  const bool pairs = p.output == OutputType::F32 && p.N % 2 == 0;
#pragma unroll 2
  for (int q = 0; q < kOutputs; q += 2) {
    const int r = q % 4, f = q / 4 % kFragsN, i = q / 4 / kFragsN;
    const int tile_row = wm + 16 * i + g + 8 * (r >> 1), tile_col = wn + 8 * f + 2 * t;
    const std::int64_t row = m0 + tile_row, col = n0 + tile_col;
    if (row >= p.M || col >= p.N) continue;
    const std::int64_t o = row * p.N + col;
    float v[2];
    bool left[2] = {false, false};  // MMA modes: computed again by mma_fixup_kernel
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (h == 1 && col + 1 >= p.N) break;
      const bool nan = shared.edge.row_nan[tile_row] | shared.edge.col_nan[tile_col + h];
      const float c = p.has_c ? p.c[o + h] : 0.0f;
      if constexpr (kMma) {
        left[h] = (slow >> (q + h)) & 1;
        // The accumulator has at most 24 significant bits: both steps are exact.
        const float acc = __fmul_rn(__ll2float_rn(shared.total[q + h][tid]), 0x1p-20f);
        v[h] = mma::epilogue(nan, acc, p.alpha, p.has_c, p.beta, c);
      } else {
        v[h] = exact::gemm_value(nan, shared.total[q + h][tid], p.alpha, p.has_c, p.beta, c);
      }
      if (p.bias) v[h] = add_rn(v[h], shared.edge.bias[tile_col + h]);
    }
    if (pairs && col + 1 < p.N && !left[0] && !left[1]) {
      *reinterpret_cast<float2*>(static_cast<float*>(p.d) + o) = make_float2(v[0], v[1]);
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (h == 1 && col + 1 >= p.N) break;
        if (left[h])
          p.slow[o + h] = 1;
        else
          store_output(p, o + h, v[h]);
      }
    }
  }
}

// MMA modes: the outputs the main kernel left (a chunk where a term may be truncated), each
// chained instruction by instruction from +0 with the model itself (mma::fused_dot_add), from the
// pre-pass's int8 values and decoded scales. One thread per output of [M, N], most of which return.
__global__ void mma_fixup_kernel(const Args p) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < p.M * p.N;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (!p.slow[i]) continue;
    const std::int64_t m = i / p.N, n = i % p.N, blocks = p.K / 16;
    float acc = 0.0f;
    for (std::int64_t j0 = 0; j0 < blocks; j0 += kBlocksPerStage) {
      long long t[kBlocksPerStage];
      int e[kBlocksPerStage];
      const int groups = int(min(std::int64_t(kBlocksPerStage), blocks - j0));
      for (int g = 0; g < groups; ++g) {
        const std::int64_t j = j0 + g;
        const std::int8_t* qa = p.a + m * p.padded_k + 16 * j;
        const std::int8_t* qb = p.b + n * p.padded_k + 16 * j;
        int sum = 0;
        bool any = false;
        for (int k = 0; k < 16; ++k) {
          const int product = int(qa[k]) * int(qb[k]);
          sum += product;
          any |= product != 0;
        }
        const std::int32_t na = p.a_n[j * p.a_rows + m], nb = p.b_n[j * p.b_rows + n];
        t[g] = static_cast<long long>(sum * na) * nb;
        e[g] = any && na && nb ? mma::scale_u(na) + mma::scale_u(nb) - 12 : p.zero_exponent;
      }
      acc = mma::fused_dot_add(acc, t, e, groups, p.fraction_bits, p.zero_exponent);
    }
    float v = mma::epilogue(p.a_nan[m] | p.b_nan[n], acc, p.alpha, p.has_c, p.beta, p.has_c ? p.c[i] : 0.0f);
    if (p.bias) v = add_rn(v, p.bias[n]);
    store_output(p, i, v);
  }
}

// ---- the row-scaled post-scale (§3.20.4) -------------------------------------------------------

__device__ __forceinline__ float narrow(float v, OutputType t) {  // RNout, held as binary32
  switch (t) {
    case OutputType::F32:
      return v;
    case OutputType::BF16:
      return bf16_to_float(float_to_bf16(v));
    case OutputType::F16:
      return half_to_float(float_to_half(v));
  }
  return v;
}

__device__ __forceinline__ float load_output(const void* x, std::int64_t i, OutputType t) {
  switch (t) {
    case OutputType::F32:
      return static_cast<const float*>(x)[i];
    case OutputType::BF16:
      return bf16_to_float(static_cast<const std::uint16_t*>(x)[i]);
    case OutputType::F16:
      return half_to_float(static_cast<const std::uint16_t*>(x)[i]);
  }
  return 0.0f;
}

__global__ void post_scale_kernel(const float* __restrict__ d0, std::int64_t M, std::int64_t N, const GemmPostScale p,
                                  void* __restrict__ d) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  const std::int64_t m = i / N, n = i % N;
  const bool row_scalar = p.a_count == 1, col_scalar = p.b_count == 1;
  const float row = p.a_amax[row_scalar ? 0 : m], col = p.b_amax[col_scalar ? 0 : n];
  float v;
  if (col_scalar)
    v = mul_rn(d0[i], mul_rn(row, col));  // folded product
  else if (row_scalar)
    v = mul_rn(d0[i], mul_rn(col, row));  // folded product
  else
    v = mul_rn(mul_rn(d0[i], row), col);  // bilateral: two steps
  if (p.bias) v = add_rn(v, p.bias[n]);
  v = narrow(v, p.output);
  if (p.accumulate) v = narrow(add_rn(load_output(p.accumulate, i, p.output), v), p.output);
  switch (p.output) {
    case OutputType::F32:
      static_cast<float*>(d)[i] = v;
      break;
    case OutputType::BF16:
      static_cast<std::uint16_t*>(d)[i] = float_to_bf16(v);
      break;
    case OutputType::F16:
      static_cast<std::uint16_t*>(d)[i] = float_to_half(v);
      break;
  }
}

// ---- launchers -------------------------------------------------------------------------------

std::int64_t padded_k(std::int64_t K) { return round_up(K, kTileK); }

// The workspace, cut into 256-byte aligned pieces in a fixed order.
class Carver {
 public:
  explicit Carver(void* base) : base_(reinterpret_cast<std::uintptr_t>(base)) {}
  template <class T>
  T* take(std::int64_t bytes) {
    T* r = reinterpret_cast<T*>(base_ + std::uintptr_t(used_));
    used_ += round_up(bytes, 256);
    return r;
  }
  std::int64_t used() const { return used_; }

 private:
  std::uintptr_t base_;
  std::int64_t used_ = 0;
};

// An operand ready for the main kernel.
struct Prepared {
  const std::int8_t* values;
  const std::int32_t* n;  // decoded scales [padded_k / 16][padded rows]
  const std::uint8_t* nan;
  const std::int32_t* u;  // MMA modes: the chunks' u bounds [padded_k / 64][padded rows]
};

Prepared prepare(const GemmOperandView& x, std::int64_t rows, std::int64_t K, bool mma, Carver& ws, cudaStream_t s) {
  const std::int64_t sr = scale_rows(rows), sc = scale_cols(K), pk = padded_k(K);
  std::int8_t* values = ws.take<std::int8_t>(sr * pk);
  std::uint8_t* compact = ws.take<std::uint8_t>(sr * sc);
  std::uint8_t* nan = ws.take<std::uint8_t>(rows);
  std::int32_t* n = ws.take<std::int32_t>(sr * sc * 4);
  std::int32_t* u = ws.take<std::int32_t>(sr * (pk / kTileK) * 4);
  if (x.swizzled) launch_unswizzle_scales(x.scale, sr, sc, compact, s);
  const std::uint8_t* scale = x.swizzled ? compact : x.scale;
  constexpr unsigned kBlock = 256;
  expand_kernel<<<grid_for(sr * (pk / 16), kBlock), kBlock, 0, s>>>(x.data, rows, K, sr, pk, values);
  NVFP4_CUDA_CHECK_LAUNCH();
  nan_rows_kernel<<<grid_for(rows * 32, kBlock), kBlock, 0, s>>>(scale, rows, K / 16, sc, nan);
  NVFP4_CUDA_CHECK_LAUNCH();
  n_expand_kernel<<<grid_for(sr * sc, kBlock), kBlock, 0, s>>>(scale, sr, sc, mma, n);
  NVFP4_CUDA_CHECK_LAUNCH();
  if (mma) {
    chunk_u_kernel<<<grid_for(sr * (pk / kTileK), kBlock), kBlock, 0, s>>>(n, sr, pk / kTileK, u);
    NVFP4_CUDA_CHECK_LAUNCH();
  }
  return {values, n, nan, u};
}

void check_shape(std::int64_t M, std::int64_t N, std::int64_t K) {
  if (M < 1 || N < 1 || K < 16 || K % 16 || K / 16 > kGemmMaxBlocks)
    throw std::invalid_argument("gemm: M=" + std::to_string(M) + ", N=" + std::to_string(N) + ", K=" + std::to_string(K) +
                                ": needs M, N >= 1 and K a multiple of 16 in [16, " + std::to_string(16 * kGemmMaxBlocks) + "]");
}

std::int64_t output_tiles(std::int64_t M, std::int64_t N) { return ((M + kTileM - 1) / kTileM) * ((N + kTileN - 1) / kTileN); }

// CTAs of gemm_kernel resident at once on the current device (SMs times CTAs per SM), found once
// per device; it also grants the kernel its shared memory there.
std::int64_t gemm_wave() {
  constexpr int kMaxDevices = 64;
  static std::once_flag once[kMaxDevices];
  static std::int64_t wave[kMaxDevices];
  int device = 0;
  NVFP4_CUDA_CHECK(cudaGetDevice(&device));
  if (device >= kMaxDevices) throw std::invalid_argument("gemm: device ordinal past 63");
  std::call_once(once[device], [device] {
    int sms = 0, per_sm = 0;
    NVFP4_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    for (const auto kernel : {gemm_kernel<false>, gemm_kernel<true>})
      NVFP4_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(Shared))));
    NVFP4_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemm_kernel<false>, kThreads, sizeof(Shared)));
    if (per_sm < 1) throw std::runtime_error("gemm: the kernel does not fit on an SM of this device");
    wave[device] = std::int64_t(sms) * per_sm;
  });
  return wave[device];
}

// The MMA modes chain along K from the first chunk: their tiles are never split.
GemmSplit split_for(std::int64_t M, std::int64_t N, std::int64_t K, bool mma) {
  const std::int64_t wave = gemm_wave();  // also grants both kernels their shared memory on this device
  if (mma) return {output_tiles(M, N), 1};
  return gemm_split(output_tiles(M, N), padded_k(K) / kTileK, wave);
}

// The tail tiles' sums and arrival counters, in one piece so that one memset zeroes both.
std::int64_t part_bytes(std::int64_t tail_tiles) {
  return tail_tiles * (kOutputs * kThreads * std::int64_t(sizeof(unsigned long long)) + std::int64_t(sizeof(unsigned)));
}

// The workspace in the order launch_gemm() carves it: A's and B's prepared operands, then the parts.
void carve_operands(Carver& c, std::int64_t M, std::int64_t N, std::int64_t K) {
  for (const std::int64_t rows : {M, N}) {
    c.take<std::int8_t>(scale_rows(rows) * padded_k(K));
    c.take<std::uint8_t>(scale_rows(rows) * scale_cols(K));
    c.take<std::uint8_t>(rows);
    c.take<std::int32_t>(scale_rows(rows) * scale_cols(K) * 4);
    c.take<std::int32_t>(scale_rows(rows) * (padded_k(K) / kTileK) * 4);
  }
}

}  // namespace

std::size_t gemm_workspace_bytes(std::int64_t M, std::int64_t N, std::int64_t K, bool row_scaled, GemmAccumulation accumulation) {
  const bool mma = accumulation != GemmAccumulation::EXACT;
  Carver c(nullptr);
  carve_operands(c, M, N, K);
  c.take<unsigned char>(part_bytes(split_for(M, N, K, mma).tail_tiles(output_tiles(M, N))));
  if (mma) c.take<std::uint8_t>(M * N);
  if (row_scaled) c.take<float>(M * N * 4);
  return std::size_t(c.used());
}

void launch_gemm(const GemmOperandView& a, const GemmOperandView& b, std::int64_t M, std::int64_t N, std::int64_t K,
                 const GemmEpilogue& e, void* d, void* workspace, cudaStream_t stream) {
  check_shape(M, N, K);
  const bool mma = e.accumulation != GemmAccumulation::EXACT;
  Carver ws(workspace);
  const Prepared pa = prepare(a, M, K, mma, ws, stream), pb = prepare(b, N, K, mma, ws, stream);
  Args p{};
  p.a = pa.values;
  p.b = pb.values;
  p.a_n = pa.n;
  p.b_n = pb.n;
  p.a_rows = scale_rows(M);
  p.b_rows = scale_rows(N);
  p.a_nan = pa.nan;
  p.b_nan = pb.nan;
  p.M = M;
  p.N = N;
  p.padded_k = padded_k(K);
  p.alpha = e.alpha;
  p.has_c = e.beta && *e.beta != 0.0f;
  p.beta = e.beta.value_or(0.0f);
  p.c = e.c;
  p.bias = e.bias;
  p.output = e.output;
  p.d = d;
  if (p.has_c && !p.c) throw std::invalid_argument("gemm: beta is nonzero but there is no C");
  const std::int64_t tiles = output_tiles(M, N);
  const GemmSplit split = split_for(M, N, K, mma);
  const std::int64_t tail = split.tail_tiles(tiles);
  unsigned char* parts = ws.take<unsigned char>(part_bytes(tail));
  p.K = K;
  if (mma) {
    const MmaModel& model = mma_model(e.accumulation);
    p.fraction_bits = model.fraction_bits;
    p.zero_exponent = model.zero_exponent;
    p.a_u = pa.u;
    p.b_u = pb.u;
    p.slow = ws.take<std::uint8_t>(M * N);
    NVFP4_CUDA_CHECK(cudaMemsetAsync(p.slow, 0, std::size_t(M * N), stream));
  }
  p.whole_tiles = split.whole_tiles;
  p.parts = int(split.parts);
  p.stages = int(p.padded_k / kTileK);
  p.part_sums = reinterpret_cast<unsigned long long*>(parts);
  p.part_arrivals = reinterpret_cast<unsigned*>(parts + tail * kOutputs * kThreads * sizeof(unsigned long long));
  if (tail > 0) NVFP4_CUDA_CHECK(cudaMemsetAsync(parts, 0, std::size_t(part_bytes(tail)), stream));
  if (!mma) {
    gemm_kernel<false><<<unsigned(split.ctas(tiles)), kThreads, sizeof(Shared), stream>>>(p);
    NVFP4_CUDA_CHECK_LAUNCH();
    return;
  }
  gemm_kernel<true><<<unsigned(split.ctas(tiles)), kThreads, sizeof(Shared), stream>>>(p);
  NVFP4_CUDA_CHECK_LAUNCH();
  constexpr unsigned kBlock = 256;
  mma_fixup_kernel<<<unsigned(std::min<std::int64_t>(grid_for(M * N, kBlock), 4096)), kBlock, 0, stream>>>(p);
  NVFP4_CUDA_CHECK_LAUNCH();
}

void launch_gemm_row_scaled(const GemmOperandView& a, const GemmOperandView& b, std::int64_t M, std::int64_t N, std::int64_t K,
                            float alpha, GemmAccumulation accumulation, const GemmPostScale& post, void* d, void* workspace,
                            cudaStream_t stream) {
  check_shape(M, N, K);
  if ((post.a_count != 1 && post.a_count != M) || (post.b_count != 1 && post.b_count != N))
    throw std::invalid_argument("gemm_row_scaled: an amax has neither 1 value nor one per row");
  // The product goes to the end of the workspace, after what launch_gemm() carves for itself.
  const std::size_t product_offset = gemm_workspace_bytes(M, N, K, false, accumulation);
  float* d0 = reinterpret_cast<float*>(static_cast<unsigned char*>(workspace) + product_offset);
  GemmEpilogue e;
  e.alpha = alpha;
  e.accumulation = accumulation;
  launch_gemm(a, b, M, N, K, e, d0, workspace, stream);
  constexpr unsigned kBlock = 256;
  post_scale_kernel<<<grid_for(M * N, kBlock), kBlock, 0, stream>>>(d0, M, N, post, d);
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
