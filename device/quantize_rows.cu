// Rowwise-only quantization under profile te's knobs (device/quantize_te.h), the most frequent
// launch (activations and weights in the forward pass): no shared-memory staging as in quantize.cu. A
// thread holds one 1x16 block in registers, read with 16-byte loads; the block's encode factor
// comes from a per-CTA table over the 256 scale bytes (one division per byte and CTA instead of
// one per block), and the codes from binary32 arithmetic and the hardware E4M3 conversion
// (device/e2m1_arith.cuh), or with stochastic rounding from the shared SR element function.
// Every value is the shared formulas' (reference/formulas.h).
#include "device/check.h"
#include "device/e2m1_arith.cuh"
#include "device/encode16.cuh"
#include "device/element_io.cuh"
#include "device/quantize_te.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

constexpr int kThreads = 256;
constexpr int kCtasPerSm = 8;  // 2,048 threads: every SM full, each thread looping over blocks

// te's element path: y = RN(x * factor) (no y clamp), the hardware encoder; its factor depends on
// the scale byte and the global scale only (EncodeRule::TE).
static_assert(te_knobs().enc == EncodeRule::TE && te_knobs().yclamp == YClamp::NONE &&
                  te_knobs().e2m1 == E2M1Encoder::HW && te_knobs().zg == ZeroGlobalRule::NONE,
              "the te rowwise kernel assumes te's element path");

struct RowsArgs {
  std::uint32_t blocks;          // M * K / 16
  std::uint32_t blocks_per_row;  // K / 16
  std::int64_t scale_pitch;      // scale_cols(K)
  const float* amax;             // [1], or [M] when row-scaled
  std::uint8_t* data;
  std::uint8_t* scale;
  QuantizeParams sr;             // seed, offset and data_dir of stochastic rounding
};

// kSr: stochastic rounding (§3.18), one Philox draw per block at its stored index (encode16.cuh).
template <class T, bool kRowScaled, bool kSr>
__global__ void __launch_bounds__(kThreads) quantize_rows_te_kernel(const T* __restrict__ x, RowsArgs a) {
  const Profile te = te_knobs();  // constants: every knob switch of the formulas folds away
  __shared__ float factor_of_byte[256];
  GlobalScale tensor_scale{};
  if (!kRowScaled) {
    tensor_scale = global_scale(te.gs, a.amax[0]);
    factor_of_byte[threadIdx.x] = element_encoder(te, tensor_scale, 0.0f, std::uint8_t(threadIdx.x)).factor;
    __syncthreads();
  }
  constexpr int kVec = 16 / sizeof(T), kLoads = 16 / kVec;  // 16-byte vectors per block
  const bool scale_rows_padded = a.blocks_per_row % 4 != 0;  // else scale index = block index
  for (std::uint32_t block = blockIdx.x * kThreads + threadIdx.x; block < a.blocks; block += gridDim.x * kThreads) {
    alignas(16) T e[16];
#pragma unroll
    for (int l = 0; l < kLoads; ++l)
      *reinterpret_cast<uint4*>(e + kVec * l) = __ldcs(reinterpret_cast<const uint4*>(x + 16 * std::int64_t(block)) + l);
    float v[16];
    float A = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      v[i] = to_float(e[i]);
      A = amax_step(te.amax, A, v[i]);
    }
    std::uint32_t row = 0, col = block;
    if (kRowScaled || scale_rows_padded) {
      row = block / a.blocks_per_row;
      col = block - row * a.blocks_per_row;
    }
    const GlobalScale gs = kRowScaled ? global_scale(te.gs, a.amax[row]) : tensor_scale;
    const std::uint8_t sb = block_scale_byte(te, block_scale_precast(te, gs, A));
    const float factor = kRowScaled ? element_encoder(te, gs, A, sb).factor : factor_of_byte[sb];
    a.scale[row * a.scale_pitch + col] = sb;
    uint2 codes;
    if (kSr) {  // te's SR element path: y = RN(x * factor), then sr_e2m1 by arithmetic
      const uint4 draw = philox_draw(a.sr, a.sr.data_dir, block);
      codes = make_uint2(e2m1x8_sr([&](int i) { return mul_rn(v[i], factor); }, draw.x, draw.y),
                         e2m1x8_sr([&](int i) { return mul_rn(v[8 + i], factor); }, draw.z, draw.w));
    } else {
      codes = make_uint2(e2m1x8_hw([&](int i) { return mul_rn(v[i], factor); }),
                         e2m1x8_hw([&](int i) { return mul_rn(v[8 + i], factor); }));
    }
    __stcs(reinterpret_cast<uint2*>(a.data) + block, codes);
  }
}

}  // namespace

bool quantize_te_rows_applies(std::int64_t M, std::int64_t K, const QuantizeParams& params, const QuantizeOutputs& out) {
  return same_knobs(params.profile, te_knobs()) && !params.tiles_2d && out.data && out.scale && !out.data_t &&
         !out.scale_t && M * (K / 16) < (std::int64_t(1) << 32);
}

void quantize_te_rows(const void* x, InputType type, std::int64_t M, std::int64_t K, const QuantizeParams& params,
                      const QuantizeOutputs& out, cudaStream_t stream) {
  const RowsArgs a{std::uint32_t(M * (K / 16)), std::uint32_t(K / 16), scale_cols(K), params.amax, out.data, out.scale,
                   params};
  if (a.blocks == 0) return;
  const unsigned grid = std::min(grid_for(a.blocks, kThreads), kCtasPerSm * current_sm_count());
  dispatch_input(type, [&](auto tag) {
    using T = decltype(tag);
    auto* kernel = params.row_scaled ? (params.stochastic ? quantize_rows_te_kernel<T, true, true>
                                                          : quantize_rows_te_kernel<T, true, false>)
                                     : (params.stochastic ? quantize_rows_te_kernel<T, false, true>
                                                          : quantize_rows_te_kernel<T, false, false>);
    kernel<<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), a);
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
