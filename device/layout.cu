// Scale swizzle/unswizzle and the packed and 2D-scale transposes (NUMERICS.md §2.4.2, §3.14).
// Each stages a tile in shared memory so that both its reads and its writes are coalesced.
#include "device/check.h"
#include "device/element_io.cuh"
#include "device/kernels.h"
#include "reference/e2m1.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

// ---- swizzle: a CTA moves a 128-row x 32-column compact tile, which is 8 consecutive
// 512-byte swizzle blocks. Both sides move 16-byte vectors: a compact row half (16 columns), or
// 4 consecutive words of a swizzle block, which hold compact rows q, q+32, q+64, q+96.
constexpr int kSwRows = 128, kSwCols = 32, kSwThreads = 256;

template <bool kToSwizzled>
__global__ void swizzle_kernel(const std::uint8_t* __restrict__ in, std::int64_t rows, std::int64_t cols,
                               std::uint8_t* __restrict__ out) {
  __shared__ std::uint32_t tile[kSwRows][kSwCols / 4 + 1];  // compact words; +1 against bank conflicts
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kSwRows, c0 = std::int64_t(blockIdx.x) * kSwCols;
  const int groups = int((cols - c0 < kSwCols ? cols - c0 : kSwCols) / 4);  // 4-column groups in this tile
  // Compact side, one 4-column word per step (cols is only a multiple of 4).
  auto compact_word = [&](int r, int w) -> std::uint32_t* {
    return reinterpret_cast<std::uint32_t*>((kToSwizzled ? const_cast<std::uint8_t*>(in) : out) + (r0 + r) * cols + c0 + 4 * w);
  };
  // Swizzled side: 16-byte vector v of column group w holds words 4v..4v+3 of its block, i.e.
  // compact rows v, v+32, v+64, v+96 (word rw holds row (rw % 4) * 32 + rw / 4).
  auto swizzled_vector = [&](int w, int v) -> uint4* {
    return reinterpret_cast<uint4*>((kToSwizzled ? out : const_cast<std::uint8_t*>(in)) + swizzled_offset(r0 + v, c0 + 4 * w, cols));
  };
  const int n_words = kSwRows * groups, n_vectors = kSwRows / 4 * groups;
  if (kToSwizzled) {
    for (int i = threadIdx.x; i < n_words; i += kSwThreads) tile[i / groups][i % groups] = *compact_word(i / groups, i % groups);
    __syncthreads();
    for (int i = threadIdx.x; i < n_vectors; i += kSwThreads) {
      const int w = i / 32, v = i % 32;
      *swizzled_vector(w, v) = make_uint4(tile[v][w], tile[v + 32][w], tile[v + 64][w], tile[v + 96][w]);
    }
  } else {
    for (int i = threadIdx.x; i < n_vectors; i += kSwThreads) {
      const int w = i / 32, v = i % 32;
      const uint4 q = *swizzled_vector(w, v);
      tile[v][w] = q.x;
      tile[v + 32][w] = q.y;
      tile[v + 64][w] = q.z;
      tile[v + 96][w] = q.w;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n_words; i += kSwThreads) *compact_word(i / groups, i % groups) = tile[i / groups][i % groups];
  }
}

template <bool kToSwizzled>
void launch_swizzle(const std::uint8_t* in, std::int64_t rows, std::int64_t cols, std::uint8_t* out,
                    cudaStream_t stream) {
  if (rows % 128 || cols % 4)
    throw std::invalid_argument("swizzle: scale matrix is not padded to [multiple of 128, multiple of 4]");
  if (rows == 0 || cols == 0) return;
  const dim3 grid(grid_for(cols, kSwCols), unsigned(rows / kSwRows));
  swizzle_kernel<kToSwizzled><<<grid, kSwThreads, 0, stream>>>(in, rows, cols, out);
  NVFP4_CUDA_CHECK_LAUNCH();
}

// ---- packed transpose. Byte-granular fallback for any even M and K: a CTA moves a 64 x 64
// element tile through shared memory as nibbles.
constexpr int kTp = 64, kTpThreads = 256;

__global__ void transpose_packed_bytes_kernel(const std::uint8_t* __restrict__ in, std::int64_t M, std::int64_t K,
                                              std::uint8_t* __restrict__ out) {
  __shared__ std::uint8_t nib[kTp][kTp + 1];
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kTp, k0 = std::int64_t(blockIdx.x) * kTp;
  for (int i = threadIdx.x; i < kTp * kTp / 2; i += kTpThreads) {
    const int r = i / (kTp / 2), b = i % (kTp / 2);  // byte b of tile row r
    if (r0 + r < M && k0 / 2 + b < K / 2) {
      const std::uint8_t byte = in[(r0 + r) * (K / 2) + k0 / 2 + b];
      nib[r][2 * b] = nibble_at(byte, 0);
      nib[r][2 * b + 1] = nibble_at(byte, 1);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kTp * kTp / 2; i += kTpThreads) {
    const int k = i / (kTp / 2), b = i % (kTp / 2);  // output byte b of tile row k: rows 2b, 2b+1
    if (k0 + k < K && r0 / 2 + b < M / 2)
      out[(k0 + k) * (M / 2) + r0 / 2 + b] = pack_nibbles(nib[2 * b][k], nib[2 * b + 1][k]);
  }
}

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

// Word-granular transpose for M and K multiples of 8: a CTA stages a 128 x 128 element tile
// (128 rows of 16 words) and each thread transposes one 8 x 8 nibble block in registers. The
// shared-memory column is XOR-swizzled by the row group so that a warp's reads of 8-row
// groups spread over the banks.
constexpr int kWt = 128, kWtWords = kWt / 8;

__global__ void transpose_packed_words_kernel(const std::uint8_t* __restrict__ in, std::int64_t M, std::int64_t K,
                                              std::uint8_t* __restrict__ out) {
  __shared__ std::uint32_t tile[kWt][kWtWords];
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kWt, k0 = std::int64_t(blockIdx.x) * kWt;
  const std::int64_t in_words = K / 8, out_words = M / 8;  // words per row of in and out
  const auto* src = reinterpret_cast<const std::uint32_t*>(in);
  auto* dst = reinterpret_cast<std::uint32_t*>(out);
  for (int i = threadIdx.x; i < kWt * kWtWords; i += kTpThreads) {
    const int r = i / kWtWords, w = i % kWtWords;
    const bool inside = r0 + r < M && k0 / 8 + w < in_words;
    tile[r][w ^ ((r / 8) % kWtWords)] = inside ? src[(r0 + r) * in_words + k0 / 8 + w] : 0u;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kWtWords * kWtWords; i += kTpThreads) {
    const int rg = i % kWtWords, w = i / kWtWords;  // adjacent threads: adjacent output words
    std::uint32_t block[8];
#pragma unroll
    for (int n = 0; n < 8; ++n) block[n] = tile[8 * rg + n][w ^ rg];
    transpose_8x8_nibbles(block);
    if (r0 / 8 + rg >= out_words) continue;
#pragma unroll
    for (int n = 0; n < 8; ++n)
      if (k0 + 8 * w + n < K) dst[(k0 + 8 * w + n) * out_words + r0 / 8 + rg] = block[n];
  }
}

// out[k][i] = in[16 i][k / 16]: a CTA gathers the first row of 64 row groups (64 i) for 64
// block columns (1024 k) into shared memory, then writes 1024 output rows of 64 bytes as words.
constexpr int kTsI = 64, kTsJ = 64, kTsThreads = 256;

__global__ void transpose_scales_2d_kernel(const std::uint8_t* __restrict__ in, std::int64_t M, std::int64_t K,
                                           std::uint8_t* __restrict__ out) {
  __shared__ std::uint8_t s[kTsJ][kTsI + 4];  // s[j][i] = in[16 i][j], 0 outside the tensor
  const std::int64_t in_cols = scale_cols(K), out_cols = scale_cols(M), out_rows = scale_rows(K);
  const std::int64_t i0 = std::int64_t(blockIdx.x) * kTsI, j0 = std::int64_t(blockIdx.y) * kTsJ;
  for (int e = threadIdx.x; e < kTsI * kTsJ; e += kTsThreads) {
    const int i = e / kTsJ, j = e % kTsJ;  // adjacent threads read adjacent bytes of one row
    s[j][i] = (i0 + i < M / 16 && j0 + j < K / 16) ? in[16 * (i0 + i) * in_cols + j0 + j] : 0;
  }
  __syncthreads();
  // Output words (4 columns i) of rows k in [16 j0, 16 j0 + 1024), padding rows included.
  const int words = int((out_cols - i0 < kTsI ? out_cols - i0 : kTsI) / 4);
  for (int e = threadIdx.x; e < 16 * kTsJ * words; e += kTsThreads) {
    const int kk = e / words, w = e % words;
    const std::int64_t k = 16 * j0 + kk;
    if (k >= out_rows) break;
    const int j = kk / 16;
    const std::uint32_t v = s[j][4 * w] | s[j][4 * w + 1] << 8 | s[j][4 * w + 2] << 16 | std::uint32_t(s[j][4 * w + 3]) << 24;
    *reinterpret_cast<std::uint32_t*>(out + k * out_cols + i0 + 4 * w) = v;
  }
}

}  // namespace

void swizzle_scales(const std::uint8_t* compact, std::int64_t rows, std::int64_t cols, std::uint8_t* swizzled,
                    cudaStream_t stream) {
  launch_swizzle<true>(compact, rows, cols, swizzled, stream);
}

void unswizzle_scales(const std::uint8_t* swizzled, std::int64_t rows, std::int64_t cols, std::uint8_t* compact,
                      cudaStream_t stream) {
  launch_swizzle<false>(swizzled, rows, cols, compact, stream);
}

void transpose_packed(const std::uint8_t* in, std::int64_t M, std::int64_t K, std::uint8_t* out, cudaStream_t stream) {
  if (M % 2 || K % 2) throw std::invalid_argument("transpose_packed: M and K must be even");
  if (M == 0 || K == 0) return;
  // 8 x 8 nibble blocks in registers when both sides have whole words, bytes otherwise.
  if (M % 8 == 0 && K % 8 == 0)
    transpose_packed_words_kernel<<<dim3(grid_for(K, kWt), grid_for(M, kWt)), kTpThreads, 0, stream>>>(in, M, K, out);
  else
    transpose_packed_bytes_kernel<<<dim3(grid_for(K, kTp), grid_for(M, kTp)), kTpThreads, 0, stream>>>(in, M, K, out);
  NVFP4_CUDA_CHECK_LAUNCH();
}

void transpose_scales_2d(const std::uint8_t* in, std::int64_t M, std::int64_t K, std::uint8_t* out,
                         cudaStream_t stream) {
  if (scale_rows(K) * scale_cols(M) == 0) return;
  const dim3 grid(grid_for(scale_cols(M), kTsI), grid_for(scale_rows(K), 16 * kTsJ));
  transpose_scales_2d_kernel<<<grid, kTsThreads, 0, stream>>>(in, M, K, out);
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
