// Runs one case on two backends and compares the outputs bit for bit. Both rejecting the case
// with the same error code counts as agreement (an uncoded rejection agrees with any rejection);
// one rejecting it does not.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "compare/diff.h"

namespace nvfp4 {

// What comparing two backends on one case found (docs/worker-protocol.md, "Verdicts"). The last
// three are faults of the second backend (the first is the reference, which has none).
enum class Verdict {
  kAgree,     // same tensors and bits, or both rejected the case
  kMismatch,  // same tensors, different bits
  kError,     // one backend rejected the case, the other ran it (or they rejected it with different codes)
  kSchema,    // different tensor names, dtypes or shapes
  kProtocol,  // the backend broke its wire protocol
  kTimeout,   // the backend did not answer in time
  kCrash,     // the backend's process died
};
std::string_view verdict_name(Verdict v);
std::optional<Verdict> verdict_from_name(std::string_view name);

struct Comparison {
  bool agree = false;
  Verdict verdict = Verdict::kMismatch;
  TensorMap expected, actual;     // outputs of the first and second backend (empty when it threw)
  std::vector<TensorDiff> diffs;
  std::string problem;            // the disagreement in one line ("" when they agree)
};

// Two outcomes of one case, by backends named `expected` and `actual`.
Comparison compare_outcomes(std::string_view expected, Outcome e, std::string_view actual, Outcome a);

Comparison compare_backends(const Case& c, Backend& expected, Backend& actual);

}  // namespace nvfp4
