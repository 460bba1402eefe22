// Loading FP32/BF16/FP16 elements as exact binary32 values on the device, and the input-type
// and profile dispatches the launchers use.
#pragma once

#include <cstdint>
#include <type_traits>

#include "device/kernels/launch.h"
#include "device/runtime/check.h"
#include "reference/half_float.h"

namespace nvfp4::device {

struct Bf16 {
  std::uint16_t bits;
};
struct Half {
  std::uint16_t bits;
};

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(Bf16 v) { return bf16_to_float(v.bits); }
__device__ __forceinline__ float to_float(Half v) { return half_to_float(v.bits); }

// Half k (0: bits 0-15, 1: bits 16-31) of a word of two BF16 values, as binary32: one instruction,
// where a 16-bit element is first extracted and then shifted.
__device__ __forceinline__ float bf16_half_of_word(std::uint32_t w, int k) {
  return __uint_as_float(k == 0 ? w << 16 : w & 0xFFFF0000u);
}

// The 16 / sizeof(T) elements of a 16-byte chunk of T as binary32, into v[0..].
template <class T>
__device__ __forceinline__ void chunk_to_float(const uint4& chunk, float* v) {
  if constexpr (std::is_same_v<T, Bf16>) {
    const std::uint32_t w[4] = {chunk.x, chunk.y, chunk.z, chunk.w};
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = bf16_half_of_word(w[k / 2], k % 2);
  } else {
    const T* e = reinterpret_cast<const T*>(&chunk);
#pragma unroll
    for (int k = 0; k < 16 / int(sizeof(T)); ++k) v[k] = to_float(e[k]);
  }
}

// Calls f(T{}) with T the element type named by `type`.
template <class F>
void dispatch_input(InputType type, F&& f) {
  switch (type) {
    case InputType::F32:
      return f(float{});
    case InputType::BF16:
      return f(Bf16{});
    case InputType::F16:
      return f(Half{});
  }
}

// Calls f(std::true_type{}) when the profile's knobs are te's and f(std::false_type{}) otherwise:
// a kernel instantiated on that flag reads its knobs through kernel_knobs, so that te's compile as
// constants and the shared formulas lose their knob switches.
template <class F>
void dispatch_knobs(const Profile& profile, F&& f) {
  if (same_knobs(profile, te_knobs())) return f(std::true_type{});
  return f(std::false_type{});
}

template <bool kTe>
__device__ __forceinline__ Profile kernel_knobs(const Profile& runtime) {
  return kTe ? te_knobs() : runtime;
}

inline unsigned grid_for(std::int64_t items, unsigned threads) { return static_cast<unsigned>((items + threads - 1) / threads); }

// SMs of the current device, for grids that loop over their work.
inline unsigned current_sm_count() {
  int device = 0, sms = 0;
  NVFP4_CUDA_CHECK(cudaGetDevice(&device));
  NVFP4_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return unsigned(sms);
}

}  // namespace nvfp4::device
