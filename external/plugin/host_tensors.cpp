#include "external/plugin/host_tensors.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include <fmt/format.h>

namespace nvfp4::external {
namespace {

constexpr std::size_t kAlignment = 256;  // DLPack's alignment of `data`
constexpr std::uint8_t kPoison = 0xA5;   // the device backend's poison byte

}  // namespace

DLDataType dl_dtype(io::DType t) {
  const auto bits = std::uint8_t(8 * io::dtype_size(t));
  switch (t) {
    case io::DType::F64:
    case io::DType::F32:
    case io::DType::F16:
      return {kDLFloat, bits, 1};
    case io::DType::BF16:
      return {kDLBfloat, bits, 1};
    case io::DType::I64:
    case io::DType::I32:
    case io::DType::I16:
    case io::DType::I8:
      return {kDLInt, bits, 1};
    case io::DType::U8:
    case io::DType::BOOL:
    case io::DType::F8_E4M3:
    case io::DType::F8_E5M2:
      return {kDLUInt, bits, 1};
  }
  return {kDLUInt, bits, 1};
}

void HostBuffer::Free::operator()(std::uint8_t* p) const { std::free(p); }

HostBuffer::HostBuffer(std::size_t bytes) : size_(bytes) {
  // aligned_alloc wants a multiple of the alignment; one block at least, so data() is never null.
  const std::size_t rounded = (bytes / kAlignment + 1) * kAlignment;
  data_.reset(static_cast<std::uint8_t*>(std::aligned_alloc(kAlignment, rounded)));
  if (!data_) throw std::bad_alloc();
}

InputViews::InputViews(const cases::TensorMap& inputs) {
  buffers_.reserve(inputs.size());
  shapes_.reserve(inputs.size());
  for (const auto& [name, t] : inputs) {
    HostBuffer& b = buffers_.emplace_back(t.bytes.size());
    if (!t.bytes.empty()) std::memcpy(b.data(), t.bytes.data(), t.bytes.size());
    std::vector<std::int64_t>& shape = shapes_.emplace_back(t.shape);
    nvfp4_tensor v{};
    v.name = name.c_str();
    v.dtype = io::dtype_name(t.dtype).data();  // the names are string literals: NUL-terminated
    v.tensor.data = b.data();
    v.tensor.device = {kDLCPU, 0};
    v.tensor.ndim = int(shape.size());
    v.tensor.dtype = dl_dtype(t.dtype);
    v.tensor.shape = shape.data();
    views_.push_back(v);
  }
}

void* OutputCollector::allocate(void* self, const char* name, const char* dtype, int ndim, const std::int64_t* shape) {
  OutputCollector& c = *static_cast<OutputCollector*>(self);
  // Nothing may unwind through the plugin's frames (they may be C).
  try {
    return c.add(name, dtype, ndim, shape);
  } catch (const std::exception& e) {
    if (c.problem_.empty()) c.problem_ = std::string("the host could not allocate an output: ") + e.what();
    return nullptr;
  }
}

void* OutputCollector::add(const char* name, const char* dtype, int ndim, const std::int64_t* shape) {
  const auto refuse = [&](const std::string& why) -> void* {
    if (problem_.empty()) problem_ = "the plugin asked for a bad output: " + why;
    return nullptr;
  };
  if (!name || !dtype) return refuse("a NULL name or dtype");
  const std::optional<io::DType> t = io::dtype_from_name(dtype);
  if (!t) return refuse(fmt::format("'{}' has unknown dtype '{}'", name, dtype));
  for (const Output& o : outputs_)
    if (o.name == name) return refuse(fmt::format("'{}' was asked for twice", name));
  if (ndim < 0 || (ndim > 0 && !shape)) return refuse(fmt::format("'{}' has ndim {} and shape {}", name, ndim, fmt::ptr(shape)));
  std::vector<std::int64_t> dims(shape, shape + ndim);
  std::size_t bytes = io::dtype_size(*t);
  for (const std::int64_t d : dims) {
    if (d < 0) return refuse(fmt::format("'{}' has a negative dimension {}", name, d));
    if (d > 0 && bytes > std::numeric_limits<std::size_t>::max() / std::size_t(d))
      return refuse(fmt::format("'{}' is too large", name));
    bytes *= std::size_t(d);
  }
  Output& o = outputs_.emplace_back(Output{name, *t, std::move(dims), HostBuffer(bytes)});
  std::memset(o.buffer.data(), kPoison, bytes);
  return o.buffer.data();
}

cases::TensorMap OutputCollector::outputs() const {
  cases::TensorMap out;
  for (const Output& o : outputs_) out[o.name] = io::make_tensor(o.dtype, o.shape, {o.buffer.data(), o.buffer.size()});
  return out;
}

}  // namespace nvfp4::external
