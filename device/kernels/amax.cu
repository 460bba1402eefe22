// Amax reductions (NUMERICS.md §3.1-§3.3). A max is exact and order-independent, so any
// reduction tree gives the reference's bits; the NaN rule is the shared amax_step.
#include <algorithm>

#include "device/kernels/amax_reduce.cuh"
#include "device/kernels/element_io.cuh"
#include "device/kernels/launch.h"
#include "device/runtime/check.h"
#include "reference/formulas.h"

namespace nvfp4::device {
namespace {

constexpr int kThreads = 256;

// Non-negative floats and the canonical NaN order like their bit patterns, so atomicMax on the
// bits is a float max that keeps a NaN (PROPAGATE); IGNORE never produces one.
template <class T>
__global__ void amax_global_kernel(const T* __restrict__ x, std::int64_t n, AmaxRule rule, unsigned* out) {
  constexpr int kVec = 16 / sizeof(T);
  float acc = 0.0f;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t vectors = n / kVec;
  // Four independent 16-byte loads in flight per thread, then the remainder one by one.
  constexpr int kUnroll = 4;
  std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  for (; v + (kUnroll - 1) * stride < vectors; v += kUnroll * stride) {
    alignas(16) T e[kUnroll][kVec];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      *reinterpret_cast<uint4*>(e[u]) = __ldcs(reinterpret_cast<const uint4*>(x + (v + u * stride) * kVec));
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int k = 0; k < kVec; ++k) acc = amax_step(rule, acc, to_float(e[u][k]));
  }
  for (; v < vectors; v += stride) {
    alignas(16) T e[kVec];
    *reinterpret_cast<uint4*>(e) = *reinterpret_cast<const uint4*>(x + v * kVec);
    for (int k = 0; k < kVec; ++k) acc = amax_step(rule, acc, to_float(e[k]));
  }
  for (std::int64_t i = vectors * kVec + blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    acc = amax_step(rule, acc, to_float(x[i]));
  acc = cta_amax<kThreads>(rule, acc);
  if (threadIdx.x == 0) atomicMax(out, bits_of(acc));
}

template <class T>
__global__ void amax_rows_kernel(const T* __restrict__ x, std::int64_t M, std::int64_t K, AmaxRule rule, float* out) {
  const std::int64_t r = blockIdx.x;
  float acc = 0.0f;
  for (std::int64_t c = threadIdx.x; c < K; c += blockDim.x) acc = amax_step(rule, acc, to_float(x[r * K + c]));
  acc = cta_amax<kThreads>(rule, acc);
  if (threadIdx.x == 0) out[r] = acc;
}

template <class T>
__global__ void amax_cols_kernel(const T* __restrict__ x, std::int64_t M, std::int64_t K, AmaxRule rule, float* out) {
  const std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (c >= K) return;
  float acc = 0.0f;
  for (std::int64_t r = 0; r < M; ++r) acc = amax_step(rule, acc, to_float(x[r * K + c]));
  out[c] = acc;
}

// One thread per block of bh x bw elements; out is [M/bh, K/bw].
template <class T>
__global__ void amax_blocks_kernel(const T* __restrict__ x, std::int64_t M, std::int64_t K, int bh, int bw, AmaxRule rule,
                                   float* out) {
  const std::int64_t cols = K / bw, n = (M / bh) * cols;
  const std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (e >= n) return;
  const std::int64_t r0 = e / cols * bh, c0 = e % cols * bw;
  float acc = 0.0f;
  for (int i = 0; i < bh; ++i)
    for (int k = 0; k < bw; ++k) acc = amax_step(rule, acc, to_float(x[(r0 + i) * K + c0 + k]));
  out[e] = acc;
}

}  // namespace

void launch_amax_global(const void* x, InputType type, std::int64_t M, std::int64_t K, AmaxRule rule, float* out,
                        cudaStream_t stream) {
  NVFP4_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), stream));  // +0: the amax of no element
  const std::int64_t n = M * K;
  if (n == 0) return;
  const unsigned grid = std::max(1u, std::min<unsigned>(grid_for(n / 8 + 1, kThreads), 8u * current_sm_count()));
  dispatch_input(type, [&](auto tag) {
    using T = decltype(tag);
    amax_global_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), n, rule, reinterpret_cast<unsigned*>(out));
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

void launch_amax_rows(const void* x, InputType type, std::int64_t M, std::int64_t K, AmaxRule rule, float* out,
                      cudaStream_t stream) {
  if (M == 0) return;
  dispatch_input(type, [&](auto tag) {
    using T = decltype(tag);
    amax_rows_kernel<T><<<unsigned(M), kThreads, 0, stream>>>(static_cast<const T*>(x), M, K, rule, out);
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

void launch_amax_cols(const void* x, InputType type, std::int64_t M, std::int64_t K, AmaxRule rule, float* out,
                      cudaStream_t stream) {
  if (K == 0) return;
  dispatch_input(type, [&](auto tag) {
    using T = decltype(tag);
    amax_cols_kernel<T><<<grid_for(K, kThreads), kThreads, 0, stream>>>(static_cast<const T*>(x), M, K, rule, out);
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

void launch_amax_blocks(const void* x, InputType type, std::int64_t M, std::int64_t K, AmaxBlock block, AmaxRule rule, float* out,
                        cudaStream_t stream) {
  const int bh = block == AmaxBlock::k1x16 ? 1 : 16, bw = block == AmaxBlock::k16x1 ? 1 : 16;
  const std::int64_t n = (M / bh) * (K / bw);
  if (n == 0) return;
  dispatch_input(type, [&](auto tag) {
    using T = decltype(tag);
    amax_blocks_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream>>>(static_cast<const T*>(x), M, K, bh, bw, rule, out);
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
