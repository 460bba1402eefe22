// The host's side of the plugin ABI's tensors (include/nvfp4_verify/plugin.h): a case's inputs
// laid out as nvfp4_tensor views, and the outputs a plugin asks for through the allocator.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cases/case.h"
#include "nvfp4_verify/plugin.h"

namespace nvfp4::external {

// DLPack's description of a safetensors dtype. dlpack 0.6 has no float8 or bool codes, so
// F8_E4M3, F8_E5M2 and BOOL are 8-bit kDLUInt there: the dtype name beside it decides.
DLDataType dl_dtype(io::DType t);

// A host buffer with DLPack's 256-byte alignment, never null (also when empty).
class HostBuffer {
 public:
  explicit HostBuffer(std::size_t bytes);
  std::uint8_t* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::uint8_t* p) const;
  };
  std::unique_ptr<std::uint8_t, Free> data_;
  std::size_t size_;
};

// Copies of a case's inputs and their views, valid while this object lives.
class InputViews {
 public:
  explicit InputViews(const cases::TensorMap& inputs);
  const nvfp4_tensor* data() const { return views_.data(); }
  int size() const { return int(views_.size()); }

 private:
  std::vector<HostBuffer> buffers_;
  std::vector<std::vector<std::int64_t>> shapes_;
  std::vector<nvfp4_tensor> views_;
};

// The outputs a plugin asks for. Each buffer is poisoned with 0xA5 so that bytes the plugin
// leaves unwritten show in the comparison.
class OutputCollector {
 public:
  // The nvfp4_output_allocator; `self` is the collector. NULL (and a problem()) for a bad request.
  static void* allocate(void* self, const char* name, const char* dtype, int ndim, const std::int64_t* shape);
  // The first bad request, in one line; "" when there was none.
  const std::string& problem() const { return problem_; }
  cases::TensorMap outputs() const;

 private:
  struct Output {
    std::string name;
    io::DType dtype;
    std::vector<std::int64_t> shape;
    HostBuffer buffer;
  };
  void* add(const char* name, const char* dtype, int ndim, const std::int64_t* shape);
  std::vector<Output> outputs_;
  std::string problem_;
};

}  // namespace nvfp4::external
