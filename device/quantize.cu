// One-pass NVFP4 quantization. A CTA stages a 64x64 chunk of the input in shared memory as
// binary32, then each thread quantizes one 1x16 rowwise block and/or one 16x1 columnwise block
// with the reference's per-block formulas (reference/formulas.h). Only the parallel structure
// is the kernel's own; every value comes from the shared formulas. Rowwise-only launches under
// te's knobs take device/quantize_te.h's path instead.
#include "device/check.h"
#include "device/element_io.cuh"
#include "device/encode16.cuh"
#include "device/kernels.h"
#include "device/quantize_te.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

constexpr int kChunk = 64;                     // rows and columns of a CTA's chunk
constexpr int kBlocksPerChunk = kChunk / 16;   // 1x16 blocks per chunk row
constexpr int kThreads = kChunk * kBlocksPerChunk;  // one rowwise and one columnwise block each

struct ChunkArgs {
  std::int64_t M, K;
  QuantizeParams params;
  QuantizeOutputs out;
};

// kTe: the profile's knobs are te's, compiled as constants (dispatch_knobs).
template <class T, bool kTe>
__global__ void __launch_bounds__(kThreads) quantize_kernel(const T* __restrict__ x, ChunkArgs a) {
  __shared__ float tile[kChunk][kChunk + 1];               // +1: column reads avoid bank conflicts
  __shared__ float block_amax[kChunk][kBlocksPerChunk];    // 1x16 amaxes, for 16x16 tiles
  __shared__ GlobalScale tensor_scale[2];                  // rowwise, columnwise (not row-scaled)
  const Profile p = kernel_knobs<kTe>(a.params.profile);
  const std::int64_t row0 = std::int64_t(blockIdx.y) * kChunk, col0 = std::int64_t(blockIdx.x) * kChunk;
  const int t = threadIdx.x;
  // One global scale per tensor: computed once per CTA instead of once per block.
  if (!a.params.row_scaled && t == 0) {
    tensor_scale[0] = global_scale(p.gs, a.params.amax[0]);
    tensor_scale[1] = global_scale(p.gs, a.params.amax_t[0]);
  }

  // Stage the chunk with 16-byte loads: consecutive threads read consecutive vectors of a row.
  // K is a multiple of 16, so a vector never straddles the end of a row.
  constexpr int kVec = 16 / sizeof(T), kVecsPerRow = kChunk / kVec;
#pragma unroll
  for (int v = t; v < kChunk * kVecsPerRow; v += kThreads) {
    const int r = v / kVecsPerRow, c = (v % kVecsPerRow) * kVec;
    alignas(16) T e[kVec];
    const bool inside = row0 + r < a.M && col0 + c < a.K;
    if (inside) *reinterpret_cast<uint4*>(e) = __ldcs(reinterpret_cast<const uint4*>(x + (row0 + r) * a.K + col0 + c));
#pragma unroll
    for (int k = 0; k < kVec; ++k) tile[r][c + k] = inside ? to_float(e[k]) : 0.0f;
  }
  __syncthreads();

  // Rowwise block of this thread: row r, block b; adjacent threads share a row. Its values are
  // read from shared memory twice (amax, then encoding) rather than held in registers.
  const int r = t / kBlocksPerChunk, b = t % kBlocksPerChunk;
  auto row_value = [&](int i) { return tile[r][16 * b + i]; };
  float row_amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) row_amax = amax_step(p.amax, row_amax, row_value(i));
  if (a.params.tiles_2d) {
    block_amax[r][b] = row_amax;
    __syncthreads();
  }
  // The amax of the 16x16 tile (tr, tc) of the chunk.
  auto tile_amax = [&](int tr, int tc) {
    float m = 0.0f;
    for (int i = 0; i < 16; ++i) m = amax_combine(p.amax, m, block_amax[16 * tr + i][tc]);
    return m;
  };

  const std::int64_t R = row0 + r, j = col0 / 16 + b;
  if (a.out.data && R < a.M && col0 + 16 * b < a.K) {
    const float A = a.params.tiles_2d ? tile_amax(r / 16, b) : row_amax;
    const float g = a.params.row_scaled ? a.params.amax[R] : a.params.amax[0];
    const BlockEncoding enc = encode_block(p, a.params.row_scaled ? global_scale(p.gs, g) : tensor_scale[0], g, A);
    a.out.scale[R * scale_cols(a.K) + j] = enc.scale_byte;
    const uint2 codes = a.params.stochastic
                            ? encode16_sr(p, enc.encoder, row_value, a.params, a.params.data_dir, R * (a.K / 16) + j)
                            : encode16(p, enc.encoder, row_value);
    __stcs(reinterpret_cast<uint2*>(a.out.data + R * (a.K / 2) + 8 * j), codes);
  }

  // Columnwise block of this thread: column c, row block ib; adjacent threads share a column,
  // so each column's 4 blocks (32 bytes of data_t) are written together.
  const int c = t / kBlocksPerChunk, ib = t % kBlocksPerChunk;
  const std::int64_t C = col0 + c, i = row0 / 16 + ib;
  if (a.out.data_t && C < a.K && row0 + 16 * ib < a.M) {
    auto col_value = [&](int k) { return tile[16 * ib + k][c]; };
    float col_amax = 0.0f;
#pragma unroll
    for (int k = 0; k < 16; ++k) col_amax = amax_step(p.amax, col_amax, col_value(k));
    const float A = a.params.tiles_2d ? tile_amax(ib, c / 16) : col_amax;
    const float g = a.params.row_scaled ? a.params.amax_t[C] : a.params.amax_t[0];
    const BlockEncoding enc = encode_block(p, a.params.row_scaled ? global_scale(p.gs, g) : tensor_scale[1], g, A);
    a.out.scale_t[C * scale_cols(a.M) + i] = enc.scale_byte;
    const uint2 codes = a.params.stochastic
                            ? encode16_sr(p, enc.encoder, col_value, a.params, SrDirection::kColumnwise, C * (a.M / 16) + i)
                            : encode16(p, enc.encoder, col_value);
    __stcs(reinterpret_cast<uint2*>(a.out.data_t + C * (a.M / 2) + 8 * i), codes);
  }
}

// Writes 0x00 into the padding entries (r >= rows or j >= blocks) of a compact scale matrix,
// and nothing else, so that unwritten real entries still show the caller's poison.
__global__ void zero_scale_padding(std::uint8_t* scale, std::int64_t rows, std::int64_t blocks,
                                   std::int64_t padded_rows, std::int64_t padded_cols) {
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

void quantize(const void* x, InputType type, std::int64_t M, std::int64_t K, const QuantizeParams& params,
              const QuantizeOutputs& out, cudaStream_t stream) {
  if (out.scale) zero_padding(out.scale, M, K, stream);
  if (out.scale_t) zero_padding(out.scale_t, K, M, stream);
  if (M == 0 || K == 0) return;
  if (quantize_te_rows_applies(M, K, params, out)) return quantize_te_rows(x, type, M, K, params, out, stream);
  const dim3 grid(grid_for(K, kChunk), grid_for(M, kChunk));
  const ChunkArgs args{M, K, params, out};
  dispatch_input(type, [&](auto tag) {
    using T = decltype(tag);
    dispatch_knobs(params.profile, [&](auto te) {
      quantize_kernel<T, te()><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), args);
    });
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
