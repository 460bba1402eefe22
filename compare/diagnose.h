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

// A shrunk case can lose what tells tied causes apart: keeps first those of shrunk's tied causes
// that also reproduce every output byte of the case as found (`found`, its explanation), when
// that narrows them, and says so in the verdict.
void break_tie(Explanation& shrunk, const Explanation& found);

}  // namespace nvfp4::compare
