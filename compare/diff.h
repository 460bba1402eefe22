// Bitwise comparison of two backends' outputs. The only relaxation is the one NUMERICS.md's
// contract allows: a NaN equals any NaN of the same floating-point format.
#pragma once

#include <string>
#include <vector>

#include "cases/case.h"

namespace nvfp4::compare {

struct TensorDiff {
  std::string tensor;           // output name, e.g. "scale_t"
  std::string problem;          // empty when only element mismatches; else "missing in actual", "shape ..."
  std::size_t mismatches = 0;   // elements whose bits differ
  std::size_t first_index = 0;  // flat index of the first mismatching element
  std::string first_expected;   // its bits, hex
  std::string first_actual;
};

// Whether element i of two tensors of one dtype and shape is equal under that rule.
bool same_element(const io::Tensor& a, const io::Tensor& b, std::size_t i);

// Every output of `expected` and `actual`, by name; returns only the tensors that differ.
std::vector<TensorDiff> diff_outputs(const cases::TensorMap& expected, const cases::TensorMap& actual);

// One line per differing tensor, for test failure messages and replay output.
std::string describe(const std::vector<TensorDiff>& diffs);

}  // namespace nvfp4::compare
