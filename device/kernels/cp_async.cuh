// Asynchronous global-to-shared copies (sm_80+ cp.async): loads stay in flight while a CTA
// computes on the tile it loaded before. Shared by the GEMM and the quantize tile kernels.
#pragma once

#include <cstdint>

namespace nvfp4::device {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global `src` to shared `dst` (both 16-byte aligned).
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_address(dst)), "l"(src) : "memory");
}

// The same, or 16 zero bytes without reading `src` when `inside` is false (edges of a tensor).
__device__ __forceinline__ void cp_async16_or_zero(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(inside ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace nvfp4::device
