#include "tensors.h"

#include <span>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "io/safetensors.h"

namespace nvfp4::python {

cases::TensorMap tensors_from_python(const std::vector<TensorTuple>& tensors) {
  cases::TensorMap out;
  for (const auto& [name, dtype_name, shape, bytes] : tensors) {
    const std::optional<io::DType> dtype = io::dtype_from_name(dtype_name);
    if (!dtype) throw io::FormatError("tensor '" + name + "': unknown dtype '" + dtype_name + "'");
    out[name] = io::make_tensor(*dtype, shape, std::span<const std::uint8_t>(bytes.data(), bytes.size()));
  }
  return out;
}

nb::list tensors_to_python(cases::TensorMap tensors) {
  nb::list out;
  for (auto& [name, t] : tensors) {
    auto* bytes = new std::vector<std::uint8_t>(std::move(t.bytes));
    nb::capsule owner(bytes, [](void* p) noexcept { delete static_cast<std::vector<std::uint8_t>*>(p); });
    nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>> array(bytes->data(), {bytes->size()}, owner);
    out.append(nb::make_tuple(name, std::string(io::dtype_name(t.dtype)), t.shape, array));
  }
  return out;
}

}  // namespace nvfp4::python
