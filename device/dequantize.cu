// NVFP4 dequantization (NUMERICS.md §3.13): one thread per 16-element block, the values from
// the shared dequantize_element.
#include <type_traits>

#include "device/check.h"
#include "device/element_io.cuh"
#include "device/kernels.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

__device__ __forceinline__ std::uint32_t out_bits(float v, float*) { return bits_of(canonicalize_nan(v)); }
__device__ __forceinline__ std::uint32_t out_bits(float v, Bf16*) { return float_to_bf16(v); }
__device__ __forceinline__ std::uint32_t out_bits(float v, Half*) { return float_to_half(v); }

// One thread per 16-element block: 8 code bytes and a scale byte in, 16 values out with
// 16-byte stores. kTe: the profile's knobs are te's, compiled as constants (dispatch_knobs).
template <class Out, bool kTe>
__global__ void dequantize_kernel(const std::uint8_t* __restrict__ data, const std::uint8_t* __restrict__ scale,
                                  const float* __restrict__ amax, std::int64_t amax_count, std::int64_t M,
                                  std::int64_t K, Profile runtime_profile, Out* __restrict__ out) {
  constexpr int kPerWord = 4 / sizeof(Out);  // outputs per 32-bit word
  const Profile p = kernel_knobs<kTe>(runtime_profile);
  // One global scale per tensor: computed once per CTA instead of once per block.
  __shared__ GlobalScale tensor_scale;
  if (amax_count == 1) {
    if (threadIdx.x == 0) tensor_scale = global_scale(p.gs, amax[0]);
    __syncthreads();
  }
  const std::int64_t blocks = K / 16;
  const std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (e >= M * blocks) return;
  const std::int64_t r = e / blocks, j = e % blocks;
  const float g = amax_count == 1 ? amax[0] : amax[r];
  const BlockDecoder d = block_decoder(p, amax_count == 1 ? tensor_scale : global_scale(p.gs, g), g, scale[r * scale_cols(K) + j]);
  const uint2 packed = *reinterpret_cast<const uint2*>(data + r * (K / 2) + 8 * j);
  std::uint32_t words[16 / kPerWord] = {};
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const std::uint8_t code = ((i < 8 ? packed.x : packed.y) >> (4 * (i % 8))) & 0xF;
    words[i / kPerWord] |= out_bits(decode_element(d, code), static_cast<Out*>(nullptr)) << (32 / kPerWord * (i % kPerWord));
  }
  uint4* dst = reinterpret_cast<uint4*>(out + r * K + 16 * j);
#pragma unroll
  for (int v = 0; v < 16 / kPerWord / 4; ++v) dst[v] = make_uint4(words[4 * v], words[4 * v + 1], words[4 * v + 2], words[4 * v + 3]);
}

}  // namespace

void dequantize(const std::uint8_t* data, const std::uint8_t* scale, const float* amax, std::int64_t amax_count,
                std::int64_t M, std::int64_t K, const Profile& profile, OutputType type, void* out,
                cudaStream_t stream) {
  const std::int64_t n = M * (K / 16);
  if (n == 0) return;
  const unsigned grid = grid_for(n, 256);
  auto launch = [&](auto* typed_out) {
    using Out = std::remove_pointer_t<decltype(typed_out)>;
    dispatch_knobs(profile, [&](auto te) {
      dequantize_kernel<Out, te()><<<grid, 256, 0, stream>>>(data, scale, amax, amax_count, M, K, profile, typed_out);
    });
  };
  switch (type) {
    case OutputType::F32: launch(static_cast<float*>(out)); break;
    case OutputType::BF16: launch(static_cast<Bf16*>(out)); break;
    case OutputType::F16: launch(static_cast<Half*>(out)); break;
  }
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
