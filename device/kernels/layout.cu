// Scale swizzle/unswizzle (NUMERICS.md §2.4.2, §3.21). A CTA stages a tile in shared memory so
// that both its reads and its writes are coalesced. The transposes (§3.14) are multi-tensor
// kernels in distributed_transpose.cu.
#include "device/kernels/element_io.cuh"
#include "device/kernels/launch.h"
#include "device/runtime/check.h"
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
    return reinterpret_cast<uint4*>((kToSwizzled ? out : const_cast<std::uint8_t*>(in)) +
                                    swizzled_offset(r0 + v, c0 + 4 * w, cols));
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
void launch_swizzle(const std::uint8_t* in, std::int64_t rows, std::int64_t cols, std::uint8_t* out, cudaStream_t stream) {
  if (rows % 128 || cols % 4)
    throw std::invalid_argument("swizzle: scale matrix is not padded to [multiple of 128, multiple of 4]");
  if (rows == 0 || cols == 0) return;
  const dim3 grid(grid_for(cols, kSwCols), unsigned(rows / kSwRows));
  swizzle_kernel<kToSwizzled><<<grid, kSwThreads, 0, stream>>>(in, rows, cols, out);
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_swizzle_scales(const std::uint8_t* compact, std::int64_t rows, std::int64_t cols, std::uint8_t* swizzled,
                           cudaStream_t stream) {
  launch_swizzle<true>(compact, rows, cols, swizzled, stream);
}

void launch_unswizzle_scales(const std::uint8_t* swizzled, std::int64_t rows, std::int64_t cols, std::uint8_t* compact,
                             cudaStream_t stream) {
  launch_swizzle<false>(swizzled, rows, cols, compact, stream);
}

}  // namespace nvfp4::device
