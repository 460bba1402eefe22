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
// 512-byte swizzle blocks.
constexpr int kSwRows = 128, kSwCols = 32, kSwThreads = 256;

template <bool kToSwizzled>
__global__ void swizzle_kernel(const std::uint8_t* __restrict__ in, std::int64_t rows, std::int64_t cols,
                               std::uint8_t* __restrict__ out) {
  __shared__ std::uint32_t tile[kSwRows][kSwCols / 4 + 1];  // compact words; +1 against bank conflicts
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kSwRows, c0 = std::int64_t(blockIdx.x) * kSwCols;
  const int words = int((cols - c0 < kSwCols ? cols - c0 : kSwCols) / 4);  // 4-column groups in this tile
  // Compact side: row r, word w (columns 4w..4w+3); consecutive threads walk a row.
  // Swizzled side: word rw of the 512-byte block of column group w holds compact row
  // (rw % 4) * 32 + rw / 4; consecutive threads walk consecutive words of the block.
  for (int i = threadIdx.x; i < kSwRows * words; i += kSwThreads) {
    if (kToSwizzled) {
      const int r = i / words, w = i % words;
      tile[r][w] = *reinterpret_cast<const std::uint32_t*>(in + (r0 + r) * cols + c0 + 4 * w);
    } else {
      const int w = i / kSwRows, rw = i % kSwRows;  // rw: word within the 512-byte block
      const int r = (rw % 4) * 32 + rw / 4;
      tile[r][w] = *reinterpret_cast<const std::uint32_t*>(in + swizzled_offset(r0 + r, c0 + 4 * w, cols));
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kSwRows * words; i += kSwThreads) {
    if (kToSwizzled) {
      const int w = i / kSwRows, rw = i % kSwRows;
      const int r = (rw % 4) * 32 + rw / 4;
      *reinterpret_cast<std::uint32_t*>(out + swizzled_offset(r0 + r, c0 + 4 * w, cols)) = tile[r][w];
    } else {
      const int r = i / words, w = i % words;
      *reinterpret_cast<std::uint32_t*>(out + (r0 + r) * cols + c0 + 4 * w) = tile[r][w];
    }
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

// ---- packed transpose: a CTA moves a 64 x 64 element tile as nibbles.
constexpr int kTp = 64, kTpThreads = 256;

template <class Word>
__global__ void transpose_packed_kernel(const std::uint8_t* __restrict__ in, std::int64_t M, std::int64_t K,
                                        std::uint8_t* __restrict__ out) {
  __shared__ std::uint8_t nib[kTp][kTp + 1];
  constexpr int kBytes = sizeof(Word), kWordsPerRow = kTp / 2 / kBytes;
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kTp, k0 = std::int64_t(blockIdx.x) * kTp;
  for (int i = threadIdx.x; i < kTp * kWordsPerRow; i += kTpThreads) {
    const int r = i / kWordsPerRow, b = (i % kWordsPerRow) * kBytes;  // byte within the tile row
    if (r0 + r < M && k0 / 2 + b < K / 2) {
      const Word w = *reinterpret_cast<const Word*>(in + (r0 + r) * (K / 2) + k0 / 2 + b);
      for (int k = 0; k < kBytes; ++k) {
        const std::uint8_t byte = std::uint8_t(w >> (8 * k));
        nib[r][2 * (b + k)] = nibble_at(byte, 0);
        nib[r][2 * (b + k) + 1] = nibble_at(byte, 1);
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kTp * kWordsPerRow; i += kTpThreads) {
    const int k = i / kWordsPerRow, b = (i % kWordsPerRow) * kBytes;  // output byte: rows 2(b..)
    if (k0 + k < K && r0 / 2 + b < M / 2) {
      Word w = 0;
      for (int j = 0; j < kBytes; ++j)
        w |= Word(pack_nibbles(nib[2 * (b + j)][k], nib[2 * (b + j) + 1][k])) << (8 * j);
      *reinterpret_cast<Word*>(out + (k0 + k) * (M / 2) + r0 / 2 + b) = w;
    }
  }
}

__global__ void transpose_scales_2d_kernel(const std::uint8_t* __restrict__ in, std::int64_t M, std::int64_t K,
                                           std::uint8_t* __restrict__ out) {
  const std::int64_t out_cols = scale_cols(M), n = scale_rows(K) * out_cols;
  const std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (e >= n) return;
  const std::int64_t k = e / out_cols, i = e % out_cols;
  out[e] = (k < K && i < M / 16) ? in[16 * i * scale_cols(K) + k / 16] : 0;
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
  const dim3 grid(grid_for(K, kTp), grid_for(M, kTp));
  // 4-byte words when no word can straddle a row end of either side, bytes otherwise.
  if ((K / 2) % 4 == 0 && (M / 2) % 4 == 0)
    transpose_packed_kernel<std::uint32_t><<<grid, kTpThreads, 0, stream>>>(in, M, K, out);
  else
    transpose_packed_kernel<std::uint8_t><<<grid, kTpThreads, 0, stream>>>(in, M, K, out);
  NVFP4_CUDA_CHECK_LAUNCH();
}

void transpose_scales_2d(const std::uint8_t* in, std::int64_t M, std::int64_t K, std::uint8_t* out,
                         cudaStream_t stream) {
  const std::int64_t n = scale_rows(K) * scale_cols(M);
  if (n == 0) return;
  transpose_scales_2d_kernel<<<grid_for(n, 256), 256, 0, stream>>>(in, M, K, out);
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
