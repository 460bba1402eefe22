// NVFP4 dequantization (NUMERICS.md §3.13): one or four threads per 16-element block, the values
// from the shared block_decoder and the code values by their bits.
#include <type_traits>

#include "device/kernels/element_io.cuh"
#include "device/kernels/launch.h"
#include "device/runtime/check.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

__device__ __forceinline__ std::uint32_t out_bits(float v, float*) { return bits_of(canonicalize_nan(v)); }
__device__ __forceinline__ std::uint32_t out_bits(float v, Bf16*) { return float_to_bf16(v); }
__device__ __forceinline__ std::uint32_t out_bits(float v, Half*) { return float_to_half(v); }

// A 16-element block is decoded by kThreadsPerBlock threads that compute the block's decoder
// alike, each writing its share with 16-byte stores: FP32 by four threads (one store each, so
// that a warp's stores are 512 contiguous bytes: 43 -> 59 % of copy on H200), BF16/FP16 by one
// (two stores; two threads, paying the decoder twice, went 60 -> 49 %). kTe: the profile's knobs
// are te's, compiled as constants (dispatch_knobs).
template <class Out>
constexpr int kThreadsPerBlock = sizeof(Out) == 4 ? 4 : 1;

template <class Out, bool kTe>
__global__ void dequantize_kernel(const std::uint8_t* __restrict__ data, const std::uint8_t* __restrict__ scale,
                                  const float* __restrict__ amax, std::int64_t amax_count, std::int64_t M, std::int64_t K,
                                  Profile runtime_profile, Out* __restrict__ out) {
  constexpr int kParts = kThreadsPerBlock<Out>, kPerThread = 16 / kParts;
  constexpr int kPerWord = 4 / sizeof(Out), kWords = kPerThread / kPerWord;  // outputs per 32-bit word
  const Profile p = kernel_knobs<kTe>(runtime_profile);
  // One global scale per tensor: computed once per CTA instead of once per block.
  __shared__ GlobalScale tensor_scale;
  if (amax_count == 1) {
    if (threadIdx.x == 0) tensor_scale = global_scale(p.gs, amax[0]);
    __syncthreads();
  }
  const std::int64_t blocks = K / 16, t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  const std::int64_t e = t / kParts, part = t % kParts;  // the block, and this thread's part of it
  if (e >= M * blocks) return;
  // The block's row and column, by a division only where the scale matrix has padded rows or
  // the amax is per row; otherwise the scale index is the block index.
  std::int64_t r = 0, scale_index = e;
  if (amax_count != 1 || blocks % 4 != 0) {
    r = e / blocks;
    scale_index = r * scale_cols(K) + (e - r * blocks);
  }
  const float g = amax_count == 1 ? amax[0] : amax[r];
  const BlockDecoder d = block_decoder(p, amax_count == 1 ? tensor_scale : global_scale(p.gs, g), g, scale[scale_index]);
  // This thread's kPerThread codes: 2 or 8 bytes of the block's 8.
  const std::uint8_t* src = data + 8 * e + part * (kPerThread / 2);
  std::uint32_t codes[2] = {};
  if constexpr (kPerThread == 16) {
    const uint2 c = *reinterpret_cast<const uint2*>(src);
    codes[0] = c.x;
    codes[1] = c.y;
  } else {
    codes[0] = *reinterpret_cast<const std::uint16_t*>(src);
  }
  std::uint32_t words[kWords] = {};
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const std::uint8_t code = (codes[i / 8] >> (4 * (i % 8))) & 0xF;
    const float v = decode_value(d, e2m1_decode_by_bits(code));  // decode_element, the value by its bits
    words[i / kPerWord] |= out_bits(v, static_cast<Out*>(nullptr)) << (32 / kPerWord * (i % kPerWord));
  }
  uint4* dst = reinterpret_cast<uint4*>(out + 16 * e + part * kPerThread);
#pragma unroll
  for (int v = 0; v < kWords / 4; ++v) dst[v] = make_uint4(words[4 * v], words[4 * v + 1], words[4 * v + 2], words[4 * v + 3]);
}

}  // namespace

void launch_dequantize(const std::uint8_t* data, const std::uint8_t* scale, const float* amax, std::int64_t amax_count,
                       std::int64_t M, std::int64_t K, const Profile& profile, OutputType type, void* out, cudaStream_t stream) {
  const std::int64_t n = M * (K / 16);
  if (n == 0) return;
  auto launch = [&](auto* typed_out) {
    using Out = std::remove_pointer_t<decltype(typed_out)>;
    const unsigned grid = grid_for(n * kThreadsPerBlock<Out>, 256);
    dispatch_knobs(profile, [&](auto te) {
      dequantize_kernel<Out, te()><<<grid, 256, 0, stream>>>(data, scale, amax, amax_count, M, K, profile, typed_out);
    });
  };
  switch (type) {
    case OutputType::F32:
      launch(static_cast<float*>(out));
      break;
    case OutputType::BF16:
      launch(static_cast<Bf16*>(out));
      break;
    case OutputType::F16:
      launch(static_cast<Half*>(out));
      break;
  }
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
