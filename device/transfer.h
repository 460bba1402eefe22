// Host <-> device copies of case tensors, and poisoned output buffers: an output byte that no
// kernel writes keeps the 0xA5 pattern and shows up in the bitwise comparison.
#pragma once

#include <vector>

#include "device/device_buffer.h"
#include "io/safetensors.h"

namespace nvfp4::device {

inline DeviceBuffer upload(const io::Tensor& t, cudaStream_t s) {
  DeviceBuffer b(t.bytes.size());
  b.upload(t.bytes.data(), s);
  return b;
}

inline DeviceBuffer poisoned(std::size_t bytes, cudaStream_t s) {
  DeviceBuffer b(bytes);
  b.poison(s);
  return b;
}

// The first numel elements of b (an empty tensor still owns a 1-byte allocation).
inline io::Tensor download(const DeviceBuffer& b, io::DType dtype, std::vector<std::int64_t> shape, cudaStream_t s) {
  std::vector<std::uint8_t> bytes = b.download(s);
  std::int64_t numel = 1;
  for (std::int64_t d : shape) numel *= d;
  bytes.resize(numel * io::dtype_size(dtype));
  return io::make_tensor(dtype, std::move(shape), bytes);
}

}  // namespace nvfp4::device
