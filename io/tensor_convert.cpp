#include "io/tensor_convert.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "reference/error.h"
#include "reference/half_float.h"

namespace nvfp4::io {
namespace {

template <class T>
T load(const Tensor& t, std::int64_t i) {
  T v;
  std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

void require_rank(const Tensor& t, std::size_t rank, std::string_view op, std::string_view name) {
  if (t.shape.size() != rank)
    fail(op, ErrorCode::E_RANK, "tensor '{}' has rank {}; expected a {}-D tensor", name, t.shape.size(), rank);
}

void require_dtype(const Tensor& t, DType dtype, std::string_view op, std::string_view name) {
  if (t.dtype != dtype)
    fail(op, ErrorCode::E_DTYPE, "tensor '{}' has dtype {}; expected {}", name, dtype_name(t.dtype), dtype_name(dtype));
}

FloatMatrix to_float_matrix(const Tensor& t, std::string_view op, std::string_view name) {
  require_rank(t, 2, op, name);
  const std::size_t rows = t.shape[0], cols = t.shape[1];
  FloatMatrix m = xt::empty<float>({rows, cols});
  const std::int64_t n = t.numel();
  switch (t.dtype) {
    case DType::F32:
      for (std::int64_t i = 0; i < n; ++i) m.data()[i] = load<float>(t, i);
      break;
    case DType::BF16:
      for (std::int64_t i = 0; i < n; ++i) m.data()[i] = bf16_to_float(load<std::uint16_t>(t, i));
      break;
    case DType::F16:
      for (std::int64_t i = 0; i < n; ++i) m.data()[i] = half_to_float(load<std::uint16_t>(t, i));
      break;
    default:
      fail(op, ErrorCode::E_DTYPE, "tensor '{}' has dtype {}; expected F32, BF16 or F16", name, dtype_name(t.dtype));
  }
  return m;
}

ByteMatrix to_byte_matrix(const Tensor& t, std::string_view op, std::string_view name) {
  require_rank(t, 2, op, name);
  require_dtype(t, DType::U8, op, name);
  ByteMatrix m = xt::empty<std::uint8_t>({std::size_t(t.shape[0]), std::size_t(t.shape[1])});
  std::copy(t.bytes.begin(), t.bytes.end(), m.data());  // not memcpy: an empty tensor has no data pointer
  return m;
}

FloatVector to_float_vector(const Tensor& t, std::string_view op, std::string_view name) {
  require_rank(t, 1, op, name);
  require_dtype(t, DType::F32, op, name);
  FloatVector v = xt::empty<float>({std::size_t(t.shape[0])});
  if (!t.bytes.empty()) std::memcpy(v.data(), t.bytes.data(), t.bytes.size());  // an empty tensor has no data pointer
  return v;
}

FloatVector to_bf16_values(const Tensor& t, std::string_view op, std::string_view name) {
  require_rank(t, 1, op, name);
  require_dtype(t, DType::BF16, op, name);
  FloatVector v = xt::empty<float>({std::size_t(t.shape[0])});
  for (std::int64_t i = 0; i < t.shape[0]; ++i) v(i) = bf16_to_float(load<std::uint16_t>(t, i));
  return v;
}

std::vector<std::uint8_t> to_byte_vector(const Tensor& t, std::string_view op, std::string_view name) {
  require_rank(t, 1, op, name);
  require_dtype(t, DType::U8, op, name);
  return t.bytes;
}

Tensor from_bf16_values(const FloatVector& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16(v(i));
  return make_tensor_from<std::uint16_t>(DType::BF16, {std::int64_t(v.size())}, out);
}

Tensor from_byte_vector(const std::vector<std::uint8_t>& v) {
  return make_tensor(DType::U8, {std::int64_t(v.size())}, {v.data(), v.size()});
}

Tensor from_byte_matrix(const ByteMatrix& m) {
  return make_tensor(DType::U8, {std::int64_t(m.shape(0)), std::int64_t(m.shape(1))}, {m.data(), m.size()});
}

Tensor from_float_vector(const FloatVector& v) {
  return make_tensor_from<float>(DType::F32, {std::int64_t(v.size())}, {v.data(), v.size()});
}

Tensor from_float_matrix(const FloatMatrix& m, FloatType type) {
  const std::vector<std::int64_t> shape = {std::int64_t(m.shape(0)), std::int64_t(m.shape(1))};
  if (type == FloatType::F32) {
    std::vector<float> out(m.size());
    for (std::size_t i = 0; i < m.size(); ++i) out[i] = canonicalize_nan(m.data()[i]);
    return make_tensor_from<float>(DType::F32, shape, out);
  }
  std::vector<std::uint16_t> out(m.size());
  for (std::size_t i = 0; i < m.size(); ++i)
    out[i] = type == FloatType::BF16 ? float_to_bf16(m.data()[i]) : float_to_half(m.data()[i]);
  return make_tensor_from<std::uint16_t>(type == FloatType::BF16 ? DType::BF16 : DType::F16, shape, out);
}

FloatType float_type_of(DType t, std::string_view op) {
  switch (t) {
    case DType::F32:
      return FloatType::F32;
    case DType::BF16:
      return FloatType::BF16;
    case DType::F16:
      return FloatType::F16;
    default:
      fail(op, ErrorCode::E_DTYPE, "dtype {} is not F32, BF16 or F16", dtype_name(t));
  }
}

}  // namespace nvfp4::io
