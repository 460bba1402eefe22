// The random Hadamard transform fused into TransformerEngine's wgrad columnwise quantization
// (docs/NUMERICS.md §3.19): two passes read x (the amax of rht(x), then the codes) and rht(x) is
// never stored. One thread transforms 16-row chunks of two adjacent columns (hadamard16.cuh,
// hadamard_chunks.cuh).
#include <cuda_bf16.h>

#include "device/kernels/amax_reduce.cuh"
#include "device/kernels/encode16.cuh"
#include "device/kernels/hadamard_chunks.cuh"
#include "device/kernels/launch.h"
#include "device/kernels/te_factor_table.cuh"
#include "device/runtime/check.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

using namespace hadamard;

// Pass 1 of the fused columnwise quantization: amax(rht(x)) with the profile's NaN rule; the
// transform's outputs are not stored. Where binary32 sums a column only max |RN32(T)| is kept:
// rounding is monotonic, so the largest output is RN_bf16(0.25 * max |RN32(T)|), and such outputs
// are never NaN (a chunk of zeros adds nothing). The grid and each CTA's range of chunks are pass
// 2's, visited backwards: the chunks this pass reads last, still in L2, are those pass 2 reads first.
template <bool kDefaultMask>
__global__ void __launch_bounds__(kThreads, kCtasPerSm)
    rht_amax_kernel(const std::uint16_t* __restrict__ x, std::int64_t M, std::int64_t N, std::uint16_t runtime_mask, RhtSum sum,
                    AmaxRule rule, unsigned* out) {
  const std::uint16_t mask = kDefaultMask ? constants::kRhtDefaultMask : runtime_mask;
  float acc = 0.0f, largest_sum = 0.0f;
  const std::int64_t c = grid_column();
  if (c < N)
    for_each_chunk<1, /*kReverse=*/true>(
        x, N, c, chunk_range(M / 16), PairLoads{x, N, c}, mask, sum,
        [&](std::int64_t, const ColumnPair& v, const PairSpans& spans) {
          for_each_half([&](auto half) {
            constexpr int h = decltype(half)::value;
            if (spans.path(h) == SumPath::kZeros) return;
            float t[16];
            binary32_sums<h>(v, spans, mask, t);
#pragma unroll
            for (int n = 0; n < 16; ++n) largest_sum = fmaxf(largest_sum, fabsf(t[n]));
          });
        },
        [&](std::int64_t, const PairOutputs& w) {
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int n = 0; n < 16; ++n) acc = amax_step(rule, acc, w.y[h].value(n));
        },
        NoGroupEnd{});
  acc = amax_combine(rule, acc, __bfloat162float(__float2bfloat16_rn(0.25f * largest_sum)));
  acc = cta_amax<kThreads>(rule, acc);
  if (threadIdx.x == 0) atomicMax(out, bits_of(acc));  // non-negative floats order like their bits
}

// Pass 2: row c of the columnwise copy y = rht(x) [N, M] is column c of x transformed chunk by
// chunk, and chunk b is y's 16-element block (c, b). The codes of kGroup consecutive chunks (32
// bytes of each data_t row) leave through WarpRows, and each thread writes 4 bytes of its scale_t
// rows: one 8-byte store per block and one byte per scale, the rows of adjacent threads apart, cost
// L2 a write request each and made this pass L2-bound.
constexpr int kGroup = 4;
static_assert(8 * kGroup == 32, "a group's codes fill a WarpRows row");

// kTe: the profile's knobs are te's, compiled as constants (dispatch_knobs). kSr: stochastic
// rounding, compiled apart so that the round-to-nearest loop holds none of its registers.
template <bool kTe, bool kDefaultMask, bool kSr>
__global__ void __launch_bounds__(kThreads, kCtasPerSm)
    rht_quantize_kernel(const std::uint16_t* __restrict__ x, std::int64_t M, std::int64_t N, std::uint16_t runtime_mask,
                        QuantizeParams q, std::uint8_t* __restrict__ data_t, std::uint8_t* __restrict__ scale_t) {
  const std::uint16_t mask = kDefaultMask ? constants::kRhtDefaultMask : runtime_mask;
  __shared__ float te_factor[256];
  __shared__ uint4 staged_codes[kWarps][128], chunks[kWarps][ChunkStage::kSlots];
  __shared__ std::uint32_t staged_scales[2][kThreads];  // byte j: chunk j of the group
  const Profile p = kernel_knobs<kTe>(q.profile);
  // Built here, not passed as the tile kernels' is: from a parameter, ptxas reloaded the round keys
  // in each group's loop (8 instructions more in it than with curand's additions, 39 fewer here).
  const SrStream sr = sr_stream(q);
  const float g = q.amax_t[0];
  const GlobalScale tensor_scale = global_scale(p.gs, g);  // once per thread, not per block
  if (kTe) {
    fill_te_factor_table(te_factor, tensor_scale, threadIdx.x, kThreads);
    __syncthreads();
  }
  const WarpRows rows{staged_codes[threadIdx.x / 32], int(threadIdx.x % 32)};
  const PairColumns pc = pair_columns(N, rows.lane);
  const std::int64_t c = pc.c, blocks = M / 16, pitch = scale_cols(M);
  const ChunkRange range = chunk_range(blocks);
  // Block b of the group in this thread's row c + h, staged: 8 bytes of half (b % kGroup) / 2, and
  // its scale byte, byte b % kGroup of the thread's word.
  auto staged = [&](int h, std::int64_t b) -> uint2& {
    const unsigned j = unsigned(b) % kGroup;  // b >= 0
    return reinterpret_cast<uint2*>(&rows.half(h, int(j / 2)))[j % 2];
  };
  auto staged_scale = [&](int h, std::int64_t b) -> std::uint8_t& {
    return reinterpret_cast<std::uint8_t*>(&staged_scales[h][threadIdx.x])[unsigned(b) % kGroup];
  };
  // The scale byte and the codes of block (c + h, b) of y from its outputs and their amax A.
  auto quantize_block = [&](int h, std::int64_t b, const Bf16x16& y, float A, auto&& store) {
    auto value = [&](int n) { return y.value(n); };
    auto sr_codes = [&](const ElementEncoder& e) {
      return encode16_sr<kTe>(p, e, value, sr, SrDirection::kColumnwise, (c + h) * blocks + b);
    };
    if (!kTe && p.cand != CandidateRule::NONE) {  // [knob CAND]: 1D blocks, each chooses alone
      const Candidates cd = encode_candidates(p, tensor_scale, g, A, value);
      const bool m4 = prefer_map4(cd.error4, cd.error6);
      const BlockEncoding& kept = m4 ? cd.map4 : cd.map6;
      store(kept.scale_byte, kSr ? sr_codes(kept.encoder) : (m4 ? cd.codes4 : cd.codes6));
      return;
    }
    const BlockEncoding enc = kTe ? te_block_encoding(te_factor, tensor_scale, A) : encode_block(p, tensor_scale, g, A);
    store(enc.scale_byte, kSr ? sr_codes(enc.encoder) : encode16<kTe>(p, enc.encoder, value));
  };
  for_each_chunk<kGroup>(
      x, N, c, range, ChunkStage(chunks[threadIdx.x / 32], x, N, pc.warp_first, rows.lane, range.first), mask, p.rht,
      [&](std::int64_t b, const ColumnPair& v, const PairSpans& spans) {
        for_each_half([&](auto half) {  // finite outputs: every NaN rule takes the plain maximum
          constexpr int h = decltype(half)::value;
          const Bf16x16 y = binary32_outputs<h>(v, spans, mask);
          quantize_block(h, b, y, finite_amax(y), [&](std::uint8_t scale, uint2 codes) {
            staged_scale(h, b) = scale;
            staged(h, b) = codes;
          });
        });
      },
      [&](std::int64_t b, const PairOutputs& w) {  // after the loop's last __syncwarp: straight to global memory
        for (int h = 0; pc.own < N && h < 2; ++h) {
          float A = 0.0f;
#pragma unroll
          for (int n = 0; n < 16; ++n) A = amax_step(p.amax, A, w.y[h].value(n));
          quantize_block(h, b, w.y[h], A, [&](std::uint8_t scale, uint2 codes) {
            scale_t[(c + h) * pitch + b] = scale;
            *reinterpret_cast<uint2*>(data_t + (c + h) * (M / 2) + 8 * b) = codes;
          });
        }
      },
      [&](std::int64_t first, std::int64_t last) {    // a wide chunk's slot is written here, and again after
        if (last - first == kGroup && M % 32 == 0) {  // 16-byte aligned; pitch and first: multiples of 4
          rows.store([&](int r, int q, const uint4& bytes) {
            if (pc.warp_first + r < N)
              *(reinterpret_cast<uint4*>(data_t + (pc.warp_first + r) * (M / 2) + 8 * first) + q) = bytes;
          });
          for (int h = 0; pc.own < N && h < 2; ++h)
            *reinterpret_cast<std::uint32_t*>(scale_t + (c + h) * pitch + first) = staged_scales[h][threadIdx.x];
          return;
        }
        for (int h = 0; pc.own < N && h < 2; ++h)
          for (std::int64_t b = first; b < last; ++b) {
            *reinterpret_cast<uint2*>(data_t + (c + h) * (M / 2) + 8 * b) = staged(h, b);
            scale_t[(c + h) * pitch + b] = staged_scale(h, b);
          }
      });
}

}  // namespace

void launch_rht_amax(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask, RhtSum sum, AmaxRule rule,
                     float* out, cudaStream_t stream) {
  NVFP4_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), stream));  // +0: the amax of no element
  if (N == 0 || M < 16) return;
  const dim3 grid = column_pair_grid(x, M, N);
  dispatch_mask(mask, [&](auto d) {
    rht_amax_kernel<d()><<<grid, kThreads, 0, stream>>>(x, M, N, mask, sum, rule, reinterpret_cast<unsigned*>(out));
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

void launch_rht_quantize_columnwise(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask,
                                    const QuantizeParams& params, std::uint8_t* data_t, std::uint8_t* scale_t,
                                    cudaStream_t stream) {
  // Padding of the compact scale_t [roundup(N, 128), roundup(M/16, 4)]: 0x00, and only padding.
  const std::int64_t pitch = scale_cols(M), blocks = M / 16, rows = scale_rows(N);
  if (pitch > blocks && N > 0)
    NVFP4_CUDA_CHECK(
        cudaMemset2DAsync(scale_t + blocks, std::size_t(pitch), 0, std::size_t(pitch - blocks), std::size_t(N), stream));
  if (rows > N) NVFP4_CUDA_CHECK(cudaMemsetAsync(scale_t + N * pitch, 0, std::size_t((rows - N) * pitch), stream));
  if (N == 0 || blocks == 0) return;
  const dim3 grid = column_pair_grid(x, M, N);
  dispatch_knobs(params.profile, [&](auto te) {
    dispatch_mask(mask, [&](auto d) {
      if (params.stochastic)
        rht_quantize_kernel<te(), d(), true><<<grid, kThreads, 0, stream>>>(x, M, N, mask, params, data_t, scale_t);
      else
        rht_quantize_kernel<te(), d(), false><<<grid, kThreads, 0, stream>>>(x, M, N, mask, params, data_t, scale_t);
    });
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
