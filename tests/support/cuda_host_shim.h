// Host stand-ins for the few CUDA qualifiers and intrinsics that device/kernels/exact_round.cuh and
// mma_chain.cuh use, so that the GEMM epilogue's rounding and the MMA modes' arithmetic also run in
// CPU tests against the reference. Each has the
// intrinsic's documented semantics (IEEE round-to-nearest-even; the project builds without FMA
// contraction or fast-math, so the host operations are the correctly rounded ones).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))

inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline int max(int a, int b) { return a > b ? a : b; }
inline double __ll2double_rn(long long x) { return static_cast<double>(x); }
// x rounded toward zero to binary32: exact in long double (64-bit significand), then its 24
// leading bits kept.
inline float __ll2float_rz(long long x) {
  if (x == 0) return 0.0f;
  int e = 0;
  const long double m = std::frexp(static_cast<long double>(x), &e);  // |m| in [0.5, 1)
  return static_cast<float>(std::ldexp(std::trunc(std::ldexp(m, 24)), e - 24));
}
inline long long __float2ll_rz(float x) { return static_cast<long long>(x); }  // C++ truncates
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline float __double2float_rn(double x) { return static_cast<float>(x); }
