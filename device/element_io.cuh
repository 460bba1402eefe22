// Loading FP32/BF16/FP16 elements as exact binary32 values on the device, and the input-type
// dispatch every launcher uses.
#pragma once

#include <cstdint>

#include "device/kernels.h"
#include "reference/half_float.h"

namespace nvfp4::device {

struct Bf16 { std::uint16_t bits; };
struct Half { std::uint16_t bits; };

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(Bf16 v) { return bf16_to_float(v.bits); }
__device__ __forceinline__ float to_float(Half v) { return half_to_float(v.bits); }

// Calls f(T{}) with T the element type named by `type`.
template <class F>
void dispatch_input(InputType type, F&& f) {
  switch (type) {
    case InputType::F32: return f(float{});
    case InputType::BF16: return f(Bf16{});
    case InputType::F16: return f(Half{});
  }
}

inline unsigned grid_for(std::int64_t items, unsigned threads) {
  return static_cast<unsigned>((items + threads - 1) / threads);
}

}  // namespace nvfp4::device
