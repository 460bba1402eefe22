// Runs one case on two backends and compares the outputs bit for bit, or GEMM outputs by their
// ULP distance (compare/compare_mode.h). Both rejecting the case with the same error code counts as
// agreement (an uncoded rejection agrees with any rejection); one rejecting it does not.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "compare/compare_mode.h"
#include "compare/diff.h"
#include "compare/ulp_report.h"

namespace nvfp4::compare {

// What comparing two backends on one case found (docs/spec/worker-protocol.md, "Verdicts"). The last
// three are faults of the second backend (the first is the reference, which has none).
enum class Verdict {
  kAgree,     // same tensors and bits, or both rejected the case
  kMismatch,  // same tensors, different bits (ulp mode: some element beyond the bound)
  kError,     // one backend rejected the case, the other ran it (or they rejected it with different codes)
  kSchema,    // different tensor names, dtypes or shapes
  kProtocol,  // the backend broke its wire protocol
  kTimeout,   // the backend did not answer in time
  kCrash,     // the backend's process died
};
std::string_view verdict_name(Verdict v);

struct Comparison {
  bool agree = false;
  Verdict verdict = Verdict::kMismatch;
  cases::TensorMap expected, actual;  // outputs of the first and second backend (empty when it threw)
  std::vector<TensorDiff> diffs;      // bitwise, also in ulp mode (where they may agree)
  std::vector<UlpReport> ulp;         // ulp mode: one per floating-point output, against `expected`
  std::string problem;                // the disagreement in one line ("" when they agree)
};

// Two outcomes of one case, by backends named `expected` and `actual`. In ulp mode every F32,
// BF16 and F16 output is compared by ULP distance and every other output bit for bit: pass it only
// for GEMM operations (compare_mode_for).
Comparison compare_outcomes(std::string_view expected, cases::Outcome e, std::string_view actual, cases::Outcome a,
                            const CompareMode& mode = {});

// Runs c on both backends; `mode` applies when c's operation has GEMM outputs.
Comparison compare_backends(const cases::Case& c, cases::Backend& expected, cases::Backend& actual, const CompareMode& mode = {});

}  // namespace nvfp4::compare
