// Conversions between safetensors tensors and the reference's xtensor types, with the checks
// a user-supplied file needs (dtype, rank) reported as NUMERICS.md error codes.
#pragma once

#include <string_view>
#include <vector>

#include "io/safetensors.h"
#include "reference/tensor.h"

namespace nvfp4::io {

enum class FloatType { F32, BF16, F16 };
// The FloatType of a float dtype; E_DTYPE (labelled with op) for any other dtype.
FloatType float_type_of(DType t, std::string_view op);

// E_RANK / E_DTYPE (naming the tensor) unless t has this rank / dtype.
void require_rank(const Tensor& t, std::size_t rank, std::string_view op, std::string_view name);
void require_dtype(const Tensor& t, DType dtype, std::string_view op, std::string_view name);

// A 2-D F32/BF16/F16 tensor widened exactly to binary32. `op` and `name` label errors.
FloatMatrix to_float_matrix(const Tensor& t, std::string_view op, std::string_view name);
ByteMatrix to_byte_matrix(const Tensor& t, std::string_view op, std::string_view name);                 // 2-D U8
FloatVector to_float_vector(const Tensor& t, std::string_view op, std::string_view name);               // 1-D F32
FloatVector to_bf16_values(const Tensor& t, std::string_view op, std::string_view name);                // 1-D BF16, widened
std::vector<std::uint8_t> to_byte_vector(const Tensor& t, std::string_view op, std::string_view name);  // 1-D U8

Tensor from_byte_matrix(const ByteMatrix& m);
Tensor from_float_vector(const FloatVector& v);
Tensor from_bf16_values(const FloatVector& v);                // 1-D BF16, each value narrowed with RNbf16
Tensor from_byte_vector(const std::vector<std::uint8_t>& v);  // 1-D U8
// Narrows binary32 values to the output type with RNE (RNout); NaN becomes the canonical NaN.
Tensor from_float_matrix(const FloatMatrix& m, FloatType type);

}  // namespace nvfp4::io
