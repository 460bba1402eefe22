// Host <-> device copies of case tensors, and poisoned output buffers: an output byte that no
// kernel writes keeps the 0xA5 pattern and shows up in the bitwise comparison.
#pragma once

#include <vector>

#include "device/runtime/device_buffer.h"
#include "io/safetensors.h"

namespace nvfp4::device {

inline DeviceBuffer upload(const io::Tensor& t, cudaStream_t s) {
  DeviceBuffer b(t.bytes.size(), s);
  b.upload(t.bytes.data(), s);
  return b;
}

inline DeviceBuffer poisoned(std::size_t bytes, cudaStream_t s) {
  DeviceBuffer b(bytes, s);
  b.poison(s);
  return b;
}

// A tensor of `shape` read from device memory at `device` (any allocation that holds it).
inline io::Tensor download(const void* device, io::DType dtype, std::vector<std::int64_t> shape, cudaStream_t s) {
  std::int64_t numel = 1;
  for (std::int64_t d : shape) numel *= d;
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(numel) * io::dtype_size(dtype));
  NVFP4_CUDA_CHECK(cudaMemcpyAsync(bytes.data(), device, bytes.size(), cudaMemcpyDeviceToHost, s));
  NVFP4_CUDA_CHECK(cudaStreamSynchronize(s));
  return io::make_tensor(dtype, std::move(shape), bytes);
}

// The first numel elements of b (an empty tensor still owns a 1-byte allocation).
inline io::Tensor download(const DeviceBuffer& b, io::DType dtype, std::vector<std::int64_t> shape, cudaStream_t s) {
  return download(b.get(), dtype, std::move(shape), s);
}

}  // namespace nvfp4::device
