// Small edits of host tensors that metamorphic relations build on: transpose, row slices,
// concatenation, replacing one input of a case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cases/case.h"

namespace nvfp4::cases {

io::Tensor transposed(const io::Tensor& t);                                  // 2-D, any dtype
io::Tensor row_slice(const io::Tensor& t, std::int64_t r0, std::int64_t n);  // rows [r0, r0 + n)
io::Tensor leading_slice(const io::Tensor& t, std::int64_t i);               // slice i of a [G, ...] tensor
io::Tensor concat_rows(const std::vector<io::Tensor>& parts, std::int64_t cols, io::DType dtype);
Case with_input(const Case& c, const std::string& name, io::Tensor t);

}  // namespace nvfp4::cases
