// Naming the bug behind a mismatch (docs/spec/faults.md, "How a verdict is chosen"): the case is
// run again through the fault catalogue's variants of the reference, the other profiles and the
// single-knob variants of its own, and the candidates that reproduce the actual outputs become
// the explanation's causes, ranked; its verdict names the first.
#pragma once

#include "cases/case.h"
#include "compare/explain.h"

namespace nvfp4::compare {

// Fills x.causes, x.ties and x.verdict (keeping what the operation's explainer wrote in the
// verdict as a detail after the cause). A quantize case of more than 2^20 input elements is
// searched on the 16-row band of its first mismatching block (docs/spec/faults.md, step 8); other
// cases that large are not searched.
void diagnose(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual, Explanation& x);

// A shrunk case can lose what tells causes apart: its leading causes are checked on the case as
// found (`found`, its explanation). Of tied ones, those that reproduce every output byte of the
// case as found too are kept first, and the verdict says so. When none of them does, the shrunk
// case's few elements agreed by coincidence: the exact causes of the case as found replace them,
// or, with none, the verdict says that nothing reproduces the case as found. Nothing changes when
// the case as found was too large to search.
void confirm_with_found(Explanation& shrunk, const Explanation& found);

}  // namespace nvfp4::compare
