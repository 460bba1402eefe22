// Unaligned vector loads and stores of global memory for the distributed kernels: whole 16-byte
// vectors read and funnel-shifted into words, and the widest stores an address allows.
#pragma once

#include <cstdint>

namespace nvfp4::device {

// Word j of bytes [p, ...) from the aligned words x that cover them, p = 4Q + shift/8 bytes past x.
template <int Q, int W>
__device__ __forceinline__ void extract_words(const std::uint32_t (&x)[W + 4], unsigned shift, std::uint32_t (&w)[W]) {
#pragma unroll
  for (int j = 0; j < W; ++j) w[j] = __funnelshift_r(x[j + Q], x[j + Q + 1], shift);
}

// Bytes [p, p + 16N) at any alignment, read as the aligned 16-byte vectors that cover them (the
// caller checks with vectors_inside that those are readable). Adjacent threads share a vector;
// the second read of it hits L1.
template <int N>
__device__ __forceinline__ void load_unaligned(const std::uint8_t* p, std::uint32_t (&w)[4 * N]) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const auto* v = reinterpret_cast<const uint4*>(a & ~std::uintptr_t(15));
  std::uint32_t x[4 * N + 4];
#pragma unroll
  for (int i = 0; i <= N; ++i) {
    const uint4 q = i < N || a % 16 ? __ldg(v + i) : make_uint4(0, 0, 0, 0);
    x[4 * i] = q.x;
    x[4 * i + 1] = q.y;
    x[4 * i + 2] = q.z;
    x[4 * i + 3] = q.w;
  }
  const unsigned shift = 8 * unsigned(a % 4);
  switch (a / 4 % 4) {  // the same for every thread of a task: no divergence
    case 0:
      extract_words<0>(x, shift, w);
      break;
    case 1:
      extract_words<1>(x, shift, w);
      break;
    case 2:
      extract_words<2>(x, shift, w);
      break;
    default:
      extract_words<3>(x, shift, w);
      break;
  }
}

// Whether the aligned 16-byte vectors covering [p, p + n) lie inside [base, base + size).
__device__ __forceinline__ bool vectors_inside(const std::uint8_t* p, std::int64_t n, const std::uint8_t* base,
                                               std::int64_t size) {
  const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(base);
  return (a & ~std::uintptr_t(15)) >= b && ((a + n + 15) & ~std::uintptr_t(15)) <= b + size;
}

// 4N words to p with the widest stores its alignment allows (the same for every thread of a
// task), as streaming global stores.
template <int N>
__device__ __forceinline__ void store_unaligned(std::uint8_t* p, const std::uint32_t (&w)[N]) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (N % 4 == 0 && a % 16 == 0) {
#pragma unroll
    for (int i = 0; i < N / 4; ++i)
      __stcs(reinterpret_cast<uint4*>(p) + i, make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]));
  } else if (N % 2 == 0 && a % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) __stcs(reinterpret_cast<uint2*>(p) + i, make_uint2(w[2 * i], w[2 * i + 1]));
  } else if (a % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i) __stcs(reinterpret_cast<unsigned*>(p) + i, w[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 4 * N; ++i) __stcs(p + i, std::uint8_t(w[i / 4] >> (8 * (i % 4))));
  }
}

}  // namespace nvfp4::device
