// An owning device allocation (cudaMalloc, never managed memory) with checked copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "device/check.h"

namespace nvfp4::device {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    NVFP4_CUDA_CHECK(cudaMalloc(&ptr_, bytes ? bytes : 1));  // a valid pointer even when empty
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);  // no throw from a destructor; a failure here is a prior error
  }

  template <class T = void>
  T* get() const { return static_cast<T*>(ptr_); }
  std::size_t size() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }  // false for a default-constructed buffer

  void upload(const void* host, cudaStream_t stream) {
    NVFP4_CUDA_CHECK(cudaMemcpyAsync(ptr_, host, bytes_, cudaMemcpyHostToDevice, stream));
  }
  // Fills with a byte pattern no kernel writes on purpose, so an unwritten byte shows up.
  void poison(cudaStream_t stream, int byte = 0xA5) { NVFP4_CUDA_CHECK(cudaMemsetAsync(ptr_, byte, bytes_, stream)); }
  std::vector<std::uint8_t> download(cudaStream_t stream) const {
    std::vector<std::uint8_t> host(bytes_);
    NVFP4_CUDA_CHECK(cudaMemcpyAsync(host.data(), ptr_, bytes_, cudaMemcpyDeviceToHost, stream));
    NVFP4_CUDA_CHECK(cudaStreamSynchronize(stream));
    return host;
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace nvfp4::device
