// Runs one case on two backends and compares the outputs bit for bit. Both rejecting the case
// with the same error code counts as agreement; one rejecting it does not.
#pragma once

#include <optional>
#include <string>

#include "compare/diff.h"

namespace nvfp4 {

struct Comparison {
  bool agree = false;
  TensorMap expected, actual;     // outputs of the first and second backend (empty when it threw)
  std::vector<TensorDiff> diffs;
  std::string problem;            // the disagreement in one line ("" when they agree)
};

Comparison compare_backends(const Case& c, Backend& expected, Backend& actual);

}  // namespace nvfp4
