#include "cases/tensor_edit.h"

#include <cstring>

namespace nvfp4::cases {

io::Tensor transposed(const io::Tensor& t) {
  const std::size_t rows = t.shape.at(0), cols = t.shape.at(1), size = io::dtype_size(t.dtype);
  io::Tensor out{t.dtype, {std::int64_t(cols), std::int64_t(rows)}, std::vector<std::uint8_t>(t.bytes.size())};
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) std::memcpy(&out.bytes[(c * rows + r) * size], &t.bytes[(r * cols + c) * size], size);
  return out;
}

io::Tensor row_slice(const io::Tensor& t, std::int64_t r0, std::int64_t n) {
  const std::size_t row_bytes = t.shape.at(1) * io::dtype_size(t.dtype);
  io::Tensor out{t.dtype, {n, t.shape.at(1)}, {}};
  out.bytes.assign(t.bytes.begin() + r0 * row_bytes, t.bytes.begin() + (r0 + n) * row_bytes);
  return out;
}

io::Tensor leading_slice(const io::Tensor& t, std::int64_t i) {
  io::Tensor out{t.dtype, std::vector<std::int64_t>(t.shape.begin() + 1, t.shape.end()), {}};
  const std::size_t n = std::size_t(out.numel()) * io::dtype_size(t.dtype);
  out.bytes.assign(t.bytes.begin() + std::ptrdiff_t(i * n), t.bytes.begin() + std::ptrdiff_t((i + 1) * n));
  return out;
}

io::Tensor concat_rows(const std::vector<io::Tensor>& parts, std::int64_t cols, io::DType dtype) {
  io::Tensor out{dtype, {0, cols}, {}};
  for (const io::Tensor& p : parts) {
    out.shape[0] += p.shape.at(0);
    out.bytes.insert(out.bytes.end(), p.bytes.begin(), p.bytes.end());
  }
  return out;
}

Case with_input(const Case& c, const std::string& name, io::Tensor t) {
  Case d = c;
  d.inputs[name] = std::move(t);
  return d;
}

}  // namespace nvfp4::cases
