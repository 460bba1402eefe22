// Tensors between Python and the case model. Python passes (name, dtype, shape, bytes) tuples with
// the bytes as a 1-D uint8 array: numpy exports no DLPack for bfloat16 or float8, so the dtype
// travels by its safetensors name. Outputs come back the same way, their bytes a numpy array that
// owns the C++ buffer (no copy).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "cases/case.h"

namespace nvfp4::python {

namespace nb = nanobind;

using Bytes = nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using TensorTuple = std::tuple<std::string, std::string, std::vector<std::int64_t>, Bytes>;

// Throws io::FormatError for an unknown dtype or a byte count that does not fit the shape.
cases::TensorMap tensors_from_python(const std::vector<TensorTuple>& tensors);
nb::list tensors_to_python(cases::TensorMap tensors);

}  // namespace nvfp4::python
