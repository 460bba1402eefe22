// Amax reductions across a warp and a CTA with the profile's NaN rule (amax_combine): a max is
// exact and order-independent, so any tree gives the reference's bits.
#pragma once

#include "reference/formulas.h"

namespace nvfp4::device {

__device__ __forceinline__ float warp_amax(AmaxRule rule, float v) {
  for (int o = 16; o > 0; o >>= 1) v = amax_combine(rule, v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}

// Amax of the whole CTA of kThreads threads; the result is valid in thread 0. Every thread calls it.
template <int kThreads>
__device__ __forceinline__ float cta_amax(AmaxRule rule, float v) {
  __shared__ float partial[kThreads / 32];
  v = warp_amax(rule, v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.0f;
  return threadIdx.x < 32 ? warp_amax(rule, v) : 0.0f;
}

}  // namespace nvfp4::device
