// Scalar arithmetic of NUMERICS.md §1.1, shared by the CPU reference and the CUDA kernels.
//
// Every formula in the project is written with these helpers so that each RN(.) of the
// specification is one visible, correctly rounded binary32 operation on host and device alike
// (no FMA contraction, no fast-math reciprocal).
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define NVFP4_HD __host__ __device__ __forceinline__
#else
#define NVFP4_HD inline
#endif

namespace nvfp4 {

NVFP4_HD std::uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

NVFP4_HD float float_of(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

NVFP4_HD bool is_nan(float v) { return (bits_of(v) & 0x7FFFFFFFu) > 0x7F800000u; }

// The NaN that CUDA arithmetic produces (and the emulator emits): profiles reproduce the
// frameworks as they run on CUDA, where any NaN result of an operation has these bits.
constexpr std::uint32_t kCanonicalNanBits = 0x7FFFFFFFu;
NVFP4_HD float canonical_nan() { return float_of(kCanonicalNanBits); }
NVFP4_HD float canonicalize_nan(float v) { return is_nan(v) ? canonical_nan() : v; }
NVFP4_HD bool sign_bit(float v) { return (bits_of(v) >> 31) != 0; }
NVFP4_HD float abs_f(float v) { return float_of(bits_of(v) & 0x7FFFFFFFu); }

// RN(a*b), RN(a/b), RN(a+b): one IEEE binary32 operation each (the host build uses
// -ffp-contract=off; on the device the intrinsics forbid contraction whatever the flags).
// On the host a NaN result is made canonical, as the GPU does (x86 would keep the payload).
NVFP4_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return canonicalize_nan(a * b);
#endif
}
NVFP4_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return canonicalize_nan(a / b);
#endif
}
NVFP4_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return canonicalize_nan(a + b);
#endif
}

// a + b rounded toward zero (for truncating magic-number additions).
NVFP4_HD float add_rz(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rz(a, b);
#else
  // The round-to-nearest sum and its exact error (TwoSum); one step toward zero where the
  // nearest was away from zero. An overflow to infinity becomes the largest finite value.
  const float s = a + b;
  if (!std::isfinite(s)) return std::isfinite(a) && std::isfinite(b) ? std::copysign(FLT_MAX, s) : canonicalize_nan(s);
  const float bb = s - a, err = (a - (s - bb)) + (b - bb);  // a + b = s + err exactly
  if (err != 0.0f && (err < 0.0f) != (s < 0.0f)) return std::nextafter(s, 0.0f);
  return s;
#endif
}

// fma32(a, b, c): a*b+c with one rounding (std::fmaf is correctly rounded in glibc).
NVFP4_HD float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return canonicalize_nan(std::fmaf(a, b, c));
#endif
}

NVFP4_HD float floor_f(float v) {
#if defined(__CUDA_ARCH__)
  return floorf(v);
#else
  return std::floor(v);
#endif
}

// C99 fminf/fmaxf: a NaN operand is ignored unless both are NaN.
NVFP4_HD float fmin_c99(float a, float b) {
  if (is_nan(a)) return canonicalize_nan(b);
  if (is_nan(b)) return a;
  return b < a ? b : a;
}
NVFP4_HD float fmax_c99(float a, float b) {
  if (is_nan(a)) return canonicalize_nan(b);
  if (is_nan(b)) return a;
  return b > a ? b : a;
}

// fmin_c99 / fmax_c99 for a nonzero constant `k` (so no ±0 pair can tie): min.f32 / max.f32, one
// instruction, on the device.
NVFP4_HD float fmin_c99_const(float a, float k) {
#if defined(__CUDA_ARCH__)
  return fminf(a, k);
#else
  return fmin_c99(a, k);
#endif
}
NVFP4_HD float fmax_c99_const(float a, float k) {
#if defined(__CUDA_ARCH__)
  return fmaxf(a, k);
#else
  return fmax_c99(a, k);
#endif
}

// PyTorch torch.minimum / torch.clamp: NaN-propagating.
NVFP4_HD float tmin(float a, float b) {
  if (is_nan(a) || is_nan(b)) return canonical_nan();
  return b < a ? b : a;
}
NVFP4_HD float tclamp(float v, float lo, float hi) {
  if (is_nan(v)) return v;
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

}  // namespace nvfp4
