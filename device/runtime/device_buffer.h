// An owning device allocation (cudaMalloc or cudaMallocAsync, never managed memory) with checked copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "device/runtime/check.h"

namespace nvfp4::device {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // A long-lived allocation (cudaMalloc; its cudaFree synchronizes the device).
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    NVFP4_CUDA_CHECK(cudaMalloc(&ptr_, bytes ? bytes : 1));  // a valid pointer even when empty
  }
  // A per-case allocation, ordered on `stream` (cudaMallocAsync from the device's pool, freed with
  // cudaFreeAsync): no device-wide synchronization, so that jobs on other streams keep running.
  // Only work on `stream` may use it.
  DeviceBuffer(std::size_t bytes, cudaStream_t stream) : bytes_(bytes), stream_(stream), ordered_(true) {
    NVFP4_CUDA_CHECK(cudaMallocAsync(&ptr_, bytes ? bytes : 1, stream));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), stream_(o.stream_), ordered_(o.ordered_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    std::swap(stream_, o.stream_);
    std::swap(ordered_, o.ordered_);
    return *this;
  }
  ~DeviceBuffer() {
    if (!ptr_) return;  // no throw from a destructor; a failure here is a prior error
    if (ordered_)
      cudaFreeAsync(ptr_, stream_);
    else
      cudaFree(ptr_);
  }

  template <class T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
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
  cudaStream_t stream_ = nullptr;
  bool ordered_ = false;
};

// An allocation ordered on `stream` when one is given (only work on that stream may use it), else
// a long-lived one that any stream may use.
inline DeviceBuffer allocate(std::size_t bytes, std::optional<cudaStream_t> stream) {
  return stream ? DeviceBuffer(bytes, *stream) : DeviceBuffer(bytes);
}

// Keeps freed stream-ordered allocations in the current device's pool instead of returning them
// to the driver at every synchronization, so that per-case buffers are reused (once per device).
void keep_pool_memory();

}  // namespace nvfp4::device
