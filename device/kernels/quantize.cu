// One-pass NVFP4 quantization of both directions, 16x16 tiles and row-scaled tensors, by
// persistent CTAs over 64x64 tiles of x. Tiles arrive in shared memory by cp.async, one or two
// ahead of the one the CTA encodes (device/kernels/cp_async.cuh); each thread then encodes one 1x16 rowwise
// block and one 16x1 columnwise block with the reference's per-block formulas
// (reference/formulas.h). The columnwise codes and scales are staged in shared memory, so that
// each column's 32 bytes of data_t leave in 16-byte stores. Only the parallel structure is the
// kernel's own. Rowwise-only launches under te's knobs take device/kernels/quantize_te.h's path instead.
#include "device/kernels/cp_async.cuh"
#include "device/kernels/element_io.cuh"
#include "device/kernels/encode16.cuh"
#include "device/kernels/launch.h"
#include "device/kernels/quantize_te.h"
#include "device/kernels/te_factor_table.cuh"
#include "device/kernels/tile_cursor.cuh"
#include "device/runtime/check.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

constexpr int kTile = 64;                         // rows and columns of a tile
constexpr int kBlocksPerTile = kTile / 16;        // 1x16 blocks per tile row, 16x1 per tile column
constexpr int kThreads = kTile * kBlocksPerTile;  // one rowwise and one columnwise block each
constexpr int kCtasPerSm = 4;                     // __launch_bounds__: at most 64 registers

// A staged tile of T: 64 rows of 16-byte chunks, each row padded by one chunk, so that the 8
// threads of a quarter warp reading row blocks of two adjacent rows hit different banks, while a
// warp reading one element of 32 adjacent columns reads contiguous words. kStages tiles are in
// flight or being encoded per CTA: three of 2-byte types (the bytes in flight per SM must cover
// the memory latency), two of FP32 (twice the bytes per tile; and the 48 KB of static shared memory).
template <class T>
struct TileLayout {
  static constexpr int kPerChunk = 16 / int(sizeof(T));
  static constexpr int kChunksPerRow = kTile / kPerChunk;
  static constexpr int kPitch = kChunksPerRow + 1;  // chunks per staged row
  static constexpr int kStageChunks = kTile * kPitch;
  static constexpr int kStages = sizeof(T) == 4 ? 2 : 3;
  static __device__ __forceinline__ int slot(int r, int c) { return r * kPitch + c; }
};

template <class T>
struct alignas(16) TileSmem {
  uint4 stage[TileLayout<T>::kStages][TileLayout<T>::kStageChunks];
  uint2 codes_t[kBlocksPerTile][kTile];  // columnwise codes, [row block][tile column]
  std::uint8_t scale_t[kTile][kBlocksPerTile];
  float block_amax[kTile][kBlocksPerTile];  // 1x16 amaxes of the tile's rows, for 16x16 tiles
  float error[2][kTile][kBlocksPerTile];    // [knob CAND] 16x16 tiles: map-to-4, map-to-6 errors of the row blocks
  float error_t[2][kBlocksPerTile][kTile];  // and of the column blocks
  float te_factor[2][256];                  // rowwise, columnwise (te, not row-scaled)
};

struct TileArgs {
  std::int64_t M, K;
  int tiles_x, tiles_y;
  bool data_t_16;  // data_t rows start 16-byte aligned (M % 32 == 0, aligned base)
  bool scale_t_4;  // scale_t rows start 4-byte aligned
  QuantizeParams params;
  QuantizeOutputs out;
};

// Issues the copies of the tile at `at` into `stage` (none past the last tile row); rows and
// columns outside x read as zeros. The caller commits the group.
template <class T>
__device__ __forceinline__ void load_tile(uint4* stage, const T* __restrict__ x, const TileArgs& a, const TileCursor& at) {
  using L = TileLayout<T>;
  constexpr int kLoads = kTile * L::kChunksPerRow / kThreads;  // 16-byte copies per thread
  static_assert(kLoads * kThreads == kTile * L::kChunksPerRow, "whole copies per thread");
  if (at.ty >= a.tiles_y) return;
  const std::int64_t row0 = std::int64_t(at.ty) * kTile, col0 = std::int64_t(at.tx) * kTile;
  const T* tile = x + row0 * a.K + col0;
#pragma unroll
  for (int k = 0; k < kLoads; ++k) {
    const int s = int(threadIdx.x) + k * kThreads, r = s / L::kChunksPerRow, c = s % L::kChunksPerRow;
    const bool inside = row0 + r < a.M && col0 + c * L::kPerChunk < a.K;  // K % 16 == 0: a chunk is all in or out
    cp_async16_or_zero(&stage[L::slot(r, c)], inside ? tile + r * a.K + c * L::kPerChunk : x, inside);
  }
}

// Element (r, c) of a staged tile as binary32.
template <class T>
__device__ __forceinline__ float tile_element(const uint4* stage, int r, int c) {
  using L = TileLayout<T>;
  return to_float(reinterpret_cast<const T*>(&stage[L::slot(r, c / L::kPerChunk)])[c % L::kPerChunk]);
}

// The 1x16 block b of staged row r as binary32 in v, and its amax.
template <class T>
__device__ __forceinline__ float row_block(const uint4* stage, int r, int b, AmaxRule rule, float (&v)[16]) {
  using L = TileLayout<T>;
#pragma unroll
  for (int l = 0; l < 16 / L::kPerChunk; ++l)
    chunk_to_float<T>(stage[L::slot(r, b * (16 / L::kPerChunk) + l)], v + L::kPerChunk * l);
  float amax = 0.0f;
#pragma unroll
  for (int k = 0; k < 16; ++k) amax = amax_step(rule, amax, v[k]);
  return amax;
}

// The amax of the 16x16 tile (tr, tc) of a 64x64 tile, from the 1x16 amaxes of its rows.
__device__ __forceinline__ float tile_amax(AmaxRule rule, const float (&block_amax)[kTile][kBlocksPerTile], int tr, int tc) {
  float m = 0.0f;
#pragma unroll
  for (int k = 0; k < 16; ++k) m = amax_combine(rule, m, block_amax[16 * tr + k][tc]);
  return m;
}

// Stores the staged columnwise codes and scales of the tile at (row0, col0). Threads 0-127: the
// codes of column c for row blocks 2h, 2h+1, 16 contiguous bytes of data_t when both exist;
// threads 128-191: column c's 4 scale bytes.
template <class T>
__device__ __forceinline__ void store_columnwise(const TileSmem<T>& sm, const TileArgs& a, int t, std::int64_t row0,
                                                 std::int64_t col0) {
  if (t < 2 * kTile) {
    const int c = t % kTile, h = t / kTile;
    const std::int64_t C = col0 + c, ig = row0 / 16 + 2 * h;
    std::uint8_t* dst = a.out.data_t + C * (a.M / 2) + 8 * ig;
    const uint2 lo = sm.codes_t[2 * h][c], hi = sm.codes_t[2 * h + 1][c];
    if (C < a.K && 16 * (ig + 2) <= a.M && a.data_t_16) {
      __stcs(reinterpret_cast<uint4*>(dst), make_uint4(lo.x, lo.y, hi.x, hi.y));
    } else if (C < a.K && 16 * ig < a.M) {
      __stcs(reinterpret_cast<uint2*>(dst), lo);
      if (16 * (ig + 1) < a.M) __stcs(reinterpret_cast<uint2*>(dst) + 1, hi);
    }
  } else if (t < 3 * kTile) {
    const int c = t - 2 * kTile;
    const std::int64_t C = col0 + c, ig = row0 / 16;
    std::uint8_t* dst = a.out.scale_t + C * scale_cols(a.M) + ig;
    if (C < a.K && 16 * (ig + kBlocksPerTile) <= a.M && a.scale_t_4) {
      *reinterpret_cast<std::uint32_t*>(dst) = *reinterpret_cast<const std::uint32_t*>(sm.scale_t[c]);
    } else if (C < a.K) {
      for (int n = 0; n < kBlocksPerTile && 16 * (ig + n) < a.M; ++n) dst[n] = sm.scale_t[c][n];
    }
  }
}

// A 16x16 tile's error from its 16 blocks' errors part(k), in tile_error's order.
template <class Part>
__device__ __forceinline__ float tile_error_of(Part part) {
  float e[16];
#pragma unroll
  for (int k = 0; k < 16; ++k) e[k] = part(k);
  return tile_error(e);
}

// kTe: the profile's knobs are te's, compiled as constants (dispatch_knobs). sr: stochastic
// rounding's round keys, read from the parameter bank. One kernel for both roundings: compiled apart
// (a kSr parameter), the round-to-nearest kernel ran 5-9 % slower on an H100 at boost clocks.
template <class T, bool kTe>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) quantize_kernel(const T* __restrict__ x, TileArgs a, SrStream sr) {
  using L = TileLayout<T>;
  __shared__ TileSmem<T> sm;
  const Profile p = kernel_knobs<kTe>(a.params.profile);
  const QuantizeParams& q = a.params;
  const int t = threadIdx.x;
  // One global scale per tensor and direction (not row-scaled), and under te a factor table each.
  const GlobalScale row_scale = q.row_scaled ? GlobalScale{} : global_scale(p.gs, q.amax[0]);
  const GlobalScale col_scale = q.row_scaled ? GlobalScale{} : global_scale(p.gs, q.amax_t[0]);
  const bool te_tables = kTe && !q.row_scaled;
  for (int d = 0; te_tables && d < 2; ++d) fill_te_factor_table(sm.te_factor[d], d ? col_scale : row_scale, t, kThreads);
  // The block encoding of a direction (its tensor scale, te table and global amaxes) for the
  // block of row or column `index` (row-scaled: that row's or column's amax).
  auto encode = [&](const GlobalScale& tensor_scale, const float* te_factor, const float* amax, std::int64_t index, float A) {
    if (te_tables) return te_block_encoding(te_factor, tensor_scale, A);
    const float g = q.row_scaled ? amax[index] : amax[0];
    return encode_block(p, q.row_scaled ? global_scale(p.gs, g) : tensor_scale, g, A);
  };

  // Tile i of this CTA is tile blockIdx.x + i * gridDim.x, staged in stage i % kStages; a group
  // of copies is committed per tile, empty past the end, so that the wait below counts tiles.
  constexpr int kAhead = L::kStages - 1;
  TileCursor at(blockIdx.x, a.tiles_x), ahead = at;
#pragma unroll
  for (int i = 0; i < kAhead; ++i, ahead.next(a.tiles_x)) {
    load_tile(sm.stage[i], x, a, ahead);
    cp_async_commit();
  }
  for (int i = 0; at.ty < a.tiles_y; ++i, at.next(a.tiles_x), ahead.next(a.tiles_x)) {
    cp_async_wait<kAhead - 1>();
    __syncthreads();  // tile i has landed; tile i - 1 is encoded and its staged outputs stored
    load_tile(sm.stage[(i + kAhead) % L::kStages], x, a, ahead);
    cp_async_commit();
    const uint4* stage = sm.stage[i % L::kStages];
    const std::int64_t row0 = std::int64_t(at.ty) * kTile, col0 = std::int64_t(at.tx) * kTile;

    // Rowwise block of this thread: row r, block b, held in registers (its amax also feeds the
    // 16x16 tiles; a columnwise-only 1D launch skips it).
    const int r = t / kBlocksPerTile, b = t % kBlocksPerTile;
    float v[16];
    const float row_amax = a.out.data || q.tiles_2d ? row_block<T>(stage, r, b, p.amax, v) : 0.0f;
    if (q.tiles_2d) {
      sm.block_amax[r][b] = row_amax;
      __syncthreads();
    }
    const std::int64_t R = row0 + r, j = col0 / 16 + b;
    const bool choose = !kTe && p.cand != CandidateRule::NONE;  // uniform: the 2D exchange below synchronizes
    if (a.out.data && choose) {
      const float g = q.amax[q.row_scaled && R < a.M ? R : 0];
      const float A = q.tiles_2d ? tile_amax(p.amax, sm.block_amax, r / 16, b) : row_amax;
      const Candidates c =
          encode_candidates(p, q.row_scaled ? global_scale(p.gs, g) : row_scale, g, A, [&](int k) { return v[k]; });
      float e4 = c.error4, e6 = c.error6;
      if (q.tiles_2d) {
        sm.error[0][r][b] = e4;
        sm.error[1][r][b] = e6;
        __syncthreads();
        e4 = tile_error_of([&](int k) { return sm.error[0][r / 16 * 16 + k][b]; });
        e6 = tile_error_of([&](int k) { return sm.error[1][r / 16 * 16 + k][b]; });
      }
      if (R < a.M && 16 * j < a.K) {
        const bool m4 = prefer_map4(e4, e6);
        const BlockEncoding& kept = m4 ? c.map4 : c.map6;
        a.out.scale[R * scale_cols(a.K) + j] = kept.scale_byte;
        const uint2 codes = q.stochastic ? encode16_sr<false>(
                                               p, kept.encoder, [&](int k) { return v[k]; }, sr, q.data_dir, R * (a.K / 16) + j)
                                         : (m4 ? c.codes4 : c.codes6);
        __stcs(reinterpret_cast<uint2*>(a.out.data + R * (a.K / 2) + 8 * j), codes);
      }
    } else if (a.out.data && R < a.M && 16 * j < a.K) {
      const BlockEncoding enc =
          encode(row_scale, sm.te_factor[0], q.amax, R, q.tiles_2d ? tile_amax(p.amax, sm.block_amax, r / 16, b) : row_amax);
      a.out.scale[R * scale_cols(a.K) + j] = enc.scale_byte;
      auto value = [&](int k) { return v[k]; };
      const uint2 codes = q.stochastic ? encode16_sr<kTe>(p, enc.encoder, value, sr, q.data_dir, R * (a.K / 16) + j)
                                       : encode16<kTe>(p, enc.encoder, value);
      __stcs(reinterpret_cast<uint2*>(a.out.data + R * (a.K / 2) + 8 * j), codes);
    }

    // Columnwise block of this thread: column c, row block ib; a warp reads 32 adjacent columns.
    if (a.out.data_t) {
      const int c = (t / 32 % 2) * 32 + t % 32, ib = t / 64;
      const std::int64_t C = col0 + c, ig = row0 / 16 + ib;
      const bool inside = C < a.K && 16 * ig < a.M;
      if (choose) {  // outside x the staged elements are zeros: their errors are never kept
#pragma unroll
        for (int k = 0; k < 16; ++k) v[k] = tile_element<T>(stage, 16 * ib + k, c);
        float col_amax = 0.0f;
#pragma unroll
        for (int k = 0; k < 16; ++k) col_amax = amax_step(p.amax, col_amax, v[k]);
        const float g = q.amax_t[q.row_scaled && inside ? C : 0];
        const float A = q.tiles_2d ? tile_amax(p.amax, sm.block_amax, ib, c / 16) : col_amax;
        const Candidates cd =
            encode_candidates(p, q.row_scaled ? global_scale(p.gs, g) : col_scale, g, A, [&](int k) { return v[k]; });
        float e4 = cd.error4, e6 = cd.error6;
        if (q.tiles_2d) {
          sm.error_t[0][ib][c] = e4;
          sm.error_t[1][ib][c] = e6;
          __syncthreads();
          e4 = tile_error_of([&](int k) { return sm.error_t[0][ib][c / 16 * 16 + k]; });
          e6 = tile_error_of([&](int k) { return sm.error_t[1][ib][c / 16 * 16 + k]; });
        }
        if (inside) {
          const bool m4 = prefer_map4(e4, e6);
          const BlockEncoding& kept = m4 ? cd.map4 : cd.map6;
          sm.scale_t[c][ib] = kept.scale_byte;
          sm.codes_t[ib][c] =
              q.stochastic ? encode16_sr<false>(
                                 p, kept.encoder, [&](int k) { return v[k]; }, sr, SrDirection::kColumnwise, C * (a.M / 16) + ig)
                           : (m4 ? cd.codes4 : cd.codes6);
        }
      } else if (inside) {
#pragma unroll
        for (int k = 0; k < 16; ++k) v[k] = tile_element<T>(stage, 16 * ib + k, c);
        float col_amax = 0.0f;
#pragma unroll
        for (int k = 0; k < 16; ++k) col_amax = amax_step(p.amax, col_amax, v[k]);
        const BlockEncoding enc =
            encode(col_scale, sm.te_factor[1], q.amax_t, C, q.tiles_2d ? tile_amax(p.amax, sm.block_amax, ib, c / 16) : col_amax);
        sm.scale_t[c][ib] = enc.scale_byte;
        auto value = [&](int k) { return v[k]; };
        sm.codes_t[ib][c] = q.stochastic
                                ? encode16_sr<kTe>(p, enc.encoder, value, sr, SrDirection::kColumnwise, C * (a.M / 16) + ig)
                                : encode16<kTe>(p, enc.encoder, value);
      }
      __syncthreads();
      store_columnwise(sm, a, t, row0, col0);
    }
  }
}

// Writes 0x00 into the padding entries (r >= rows or j >= blocks) of a compact scale matrix,
// and nothing else, so that unwritten real entries still show the caller's poison.
__global__ void zero_scale_padding(std::uint8_t* scale, std::int64_t rows, std::int64_t blocks, std::int64_t padded_rows,
                                   std::int64_t padded_cols) {
  const std::int64_t n = padded_rows * padded_cols;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < n; e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = e / padded_cols, j = e % padded_cols;
    if (r >= rows || j >= blocks) scale[e] = 0;
  }
}

void zero_padding(std::uint8_t* scale, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  const std::int64_t pr = scale_rows(rows), pc = scale_cols(cols), n = pr * pc;
  if (n == 0 || (pr == rows && pc == cols / 16)) return;  // no padding: no launch
  const unsigned grid = std::min<unsigned>(grid_for(n, 256), 4096);
  zero_scale_padding<<<grid, 256, 0, stream>>>(scale, rows, cols / 16, pr, pc);
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_quantize(const void* x, InputType type, std::int64_t M, std::int64_t K, const QuantizeParams& params,
                     const QuantizeOutputs& out, cudaStream_t stream) {
  if (out.scale) zero_padding(out.scale, M, K, stream);
  if (out.scale_t) zero_padding(out.scale_t, K, M, stream);
  if (M == 0 || K == 0) return;
  if (quantize_te_rows_applies(M, K, params, out)) return launch_quantize_te_rows(x, type, M, K, params, out, stream);
  const auto aligned = [](const void* p, std::uintptr_t n) { return reinterpret_cast<std::uintptr_t>(p) % n == 0; };
  const int tiles_x = int(grid_for(K, kTile)), tiles_y = int(grid_for(M, kTile));
  const TileArgs args{M, K, tiles_x, tiles_y, M % 32 == 0 && aligned(out.data_t, 16), aligned(out.scale_t, 4), params, out};
  const unsigned grid = std::min<unsigned>(unsigned(tiles_x) * unsigned(tiles_y), kCtasPerSm * current_sm_count());
  dispatch_input(type, [&](auto tag) {
    using T = decltype(tag);
    dispatch_knobs(params.profile, [&](auto te) {
      quantize_kernel<T, te()><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), args, sr_stream(params));
    });
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
