// Rowwise-only quantization under profile te's knobs (device/kernels/quantize_te.h), the most frequent
// launch (activations and weights in the forward pass): no shared-memory staging as in quantize.cu. A
// thread holds one 1x16 block in registers, read with 16-byte loads; the block's encode factor
// comes from a per-CTA table over the 256 scale bytes (device/kernels/te_factor_table.cuh), and the codes
// from encode16.cuh's te path (binary32 arithmetic and the hardware E4M3 conversion), round to
// nearest or stochastic. Every value is the shared formulas' (reference/formulas.h).
#include "device/kernels/element_io.cuh"
#include "device/kernels/encode16.cuh"
#include "device/kernels/quantize_te.h"
#include "device/kernels/te_factor_table.cuh"
#include "device/runtime/check.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

constexpr int kThreads = 256;
// 2,048 threads: every SM full, each thread looping over blocks. Also in __launch_bounds__, which
// holds every variant to 32 registers: at 40 (stochastic rounding's Philox draw) only 6 CTAs fit,
// and the grid's last quarter ran as a second wave.
constexpr int kCtasPerSm = 8;

struct RowsArgs {
  std::uint32_t blocks;          // M * K / 16
  std::uint32_t blocks_per_row;  // K / 16
  std::int64_t scale_pitch;      // scale_cols(K)
  const float* amax;             // [1], or [M] when row-scaled
  std::uint8_t* data;
  std::uint8_t* scale;
  SrStream sr;           // stochastic rounding's round keys and offset
  SrDirection data_dir;  // and the random-bit stream of `data`
};

// The 16 elements of a block as binary32, read with streaming 16-byte loads.
template <class T>
__device__ __forceinline__ void load_block(const T* __restrict__ x, std::uint32_t block, float (&v)[16]) {
  const uint4* src = reinterpret_cast<const uint4*>(x + 16 * std::int64_t(block));
#pragma unroll
  for (int l = 0; l < int(sizeof(T)); ++l) chunk_to_float<T>(__ldcs(src + l), v + 16 / sizeof(T) * l);
}

// The grid-stride loop over blocks. kRowCol: the scale index needs the block's row and column
// (row-scaled, or scale rows padded past K/16); else it is the block index, and the loop has no
// division.
template <class T, bool kRowScaled, bool kSr, bool kRowCol>
__device__ __forceinline__ void quantize_blocks(const T* __restrict__ x, const RowsArgs& a, const float* factor_of_byte,
                                                const GlobalScale& tensor_scale) {
  const Profile te = te_knobs();  // constants: every knob switch of the formulas folds away
  for (std::uint32_t block = blockIdx.x * kThreads + threadIdx.x; block < a.blocks; block += gridDim.x * kThreads) {
    float v[16];
    load_block(x, block, v);
    float A = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i) A = amax_step(te.amax, A, v[i]);
    std::uint32_t row = 0, col = block;
    if (kRowCol) {
      row = block / a.blocks_per_row;
      col = block - row * a.blocks_per_row;
    }
    const GlobalScale gs = kRowScaled ? global_scale(te.gs, a.amax[row]) : tensor_scale;
    const BlockEncoding enc = kRowScaled ? encode_block(te, gs, a.amax[row], A) : te_block_encoding(factor_of_byte, gs, A);
    a.scale[row * a.scale_pitch + col] = enc.scale_byte;
    auto value = [&](int i) { return v[i]; };
    const uint2 codes =
        kSr ? encode16_sr<true>(te, enc.encoder, value, a.sr, a.data_dir, block) : encode16<true>(te, enc.encoder, value);
    __stcs(reinterpret_cast<uint2*>(a.data) + block, codes);
  }
}

// kSr: stochastic rounding (§3.18), one Philox draw per block at its stored index (encode16.cuh).
template <class T, bool kRowScaled, bool kSr>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) quantize_rows_te_kernel(const T* __restrict__ x, RowsArgs a) {
  __shared__ float factor_of_byte[256];
  GlobalScale tensor_scale{};
  if (!kRowScaled) {
    tensor_scale = global_scale(te_knobs().gs, a.amax[0]);
    fill_te_factor_table(factor_of_byte, tensor_scale, threadIdx.x, kThreads);
    __syncthreads();
  }
  if (kRowScaled || a.blocks_per_row % 4 != 0)
    quantize_blocks<T, kRowScaled, kSr, true>(x, a, factor_of_byte, tensor_scale);
  else
    quantize_blocks<T, kRowScaled, kSr, false>(x, a, factor_of_byte, tensor_scale);
}

}  // namespace

bool quantize_te_rows_applies(std::int64_t M, std::int64_t K, const QuantizeParams& params, const QuantizeOutputs& out) {
  return same_knobs(params.profile, te_knobs()) && !params.tiles_2d && out.data && out.scale && !out.data_t && !out.scale_t &&
         M * (K / 16) < (std::int64_t(1) << 32);
}

void launch_quantize_te_rows(const void* x, InputType type, std::int64_t M, std::int64_t K, const QuantizeParams& params,
                             const QuantizeOutputs& out, cudaStream_t stream) {
  const RowsArgs a{std::uint32_t(M * (K / 16)), std::uint32_t(K / 16), scale_cols(K), params.amax, out.data, out.scale,
                   sr_stream(params),           params.data_dir};
  if (a.blocks == 0) return;
  const unsigned grid = std::min(grid_for(a.blocks, kThreads), kCtasPerSm * current_sm_count());
  dispatch_input(type, [&](auto tag) {
    using T = decltype(tag);
    auto* kernel = params.row_scaled
                       ? (params.stochastic ? quantize_rows_te_kernel<T, true, true> : quantize_rows_te_kernel<T, true, false>)
                       : (params.stochastic ? quantize_rows_te_kernel<T, false, true> : quantize_rows_te_kernel<T, false, false>);
    kernel<<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), a);
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
