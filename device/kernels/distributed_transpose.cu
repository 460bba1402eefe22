// The transposes of the distributed 2D weight cast (NUMERICS.md §3.14) over task lists, and the
// single-tensor launchers of launch.h on a one-task table: packed data and 2D scales.
#include "device/kernels/distributed_tables.cuh"
#include "device/kernels/launch.h"
#include "reference/layout.h"

namespace nvfp4::device {

using namespace tables;

namespace {

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
template <>
struct Access<16> {
  using type = uint4;
};
template <>
struct Access<8> {
  using type = uint2;
};
template <>
struct Access<4> {
  using type = std::uint32_t;
};
template <>
struct Access<2> {
  using type = std::uint16_t;
};
template <>
struct Access<1> {
  using type = std::uint8_t;
};

// Rows [0, 256) x bytes [0, 128) of the tile <-> global rows `pitch` bytes apart, of which `rows`
// x `row_bytes` exist (W divides pitch, row_bytes and the pointer: accesses never straddle).
template <int W, bool kIn>
__device__ __forceinline__ void move_rows(std::uint8_t* tile, std::uint8_t* global, std::int64_t pitch, std::int64_t rows,
                                          std::int64_t row_bytes) {
  using V = typename Access<W>::type;
  constexpr int kPerRow = kTpRowBytes / W, kRowsPerPass = kThreads / kPerRow, kPasses = kTpTile / kRowsPerPass;
  const int c = threadIdx.x % kPerRow * W;
#pragma unroll(W >= 8 ? kPasses : 4)  // 16-byte accesses: all 8 loads in flight
  for (int n = 0; n < kPasses; ++n) {
    const int r = threadIdx.x / kPerRow + n * kRowsPerPass;
    V& s = *reinterpret_cast<V*>(tile + tile_offset(r, c));
    V* g = reinterpret_cast<V*>(global + r * pitch + c);
    const bool inside = r < rows && c < row_bytes;
    if (kIn)
      s = inside ? __ldcs(g) : V{};
    else if (inside)
      __stcs(g, s);
  }
}

template <bool kIn>
__device__ void move_tile(int width, std::uint8_t* tile, std::uint8_t* global, std::int64_t pitch, std::int64_t rows,
                          std::int64_t row_bytes) {
  switch (width) {  // the same for every thread of a task
    case 16:
      return move_rows<16, kIn>(tile, global, pitch, rows, row_bytes);
    case 8:
      return move_rows<8, kIn>(tile, global, pitch, rows, row_bytes);
    case 4:
      return move_rows<4, kIn>(tile, global, pitch, rows, row_bytes);
    case 2:
      return move_rows<2, kIn>(tile, global, pitch, rows, row_bytes);
    default:
      return move_rows<1, kIn>(tile, global, pitch, rows, row_bytes);
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
    for (int n = 0; n < 8; ++n)
      block[q][n] = *reinterpret_cast<const std::uint32_t*>(tile + tile_offset(32 * g + 8 * q + n, 4 * w));
    transpose_8x8_nibbles(block[q]);
  }
  __syncthreads();
  // Output row 8w + n, bytes 16g..16g+15 (input rows 32g..32g+31).
#pragma unroll
  for (int n = 0; n < 8; ++n)
    *reinterpret_cast<uint4*>(tile + tile_offset(8 * w + n, 16 * g)) =
        make_uint4(block[0][n], block[1][n], block[2][n], block[3][n]);
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

}  // namespace

void launch_transpose_packed(const TaskList<TransposePackedTask>& list, cudaStream_t stream) {
  launch_list(list, transpose_packed_kernel, stream);
}

void launch_transpose_scales_2d(const TaskList<TransposeScalesTask>& list, cudaStream_t stream) {
  launch_list(list, transpose_scales_kernel, stream);
}

void launch_transpose_packed(const std::uint8_t* in, std::int64_t M, std::int64_t K, std::uint8_t* out, cudaStream_t stream) {
  launch_one(TransposePackedTask{in, M, K, out}, transpose_packed_kernel, stream);
}

void launch_transpose_scales_2d(const std::uint8_t* in, std::int64_t M, std::int64_t K, std::uint8_t* out, cudaStream_t stream) {
  launch_one(TransposeScalesTask{in, M, K, out}, transpose_scales_kernel, stream);
}

}  // namespace nvfp4::device
