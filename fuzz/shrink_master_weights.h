// Structural shrinking of a failing cast_master_weights case, after RapidCheck's: RapidCheck
// fixes a pick once it has moved past it, so a weight drawn before its cut points can stay larger
// than it needs to be. This greedy pass drops weights and cut points and crops weights to fewer
// rows and columns, remapping the cut points, and keeps every change that still fails.
#pragma once

#include <functional>

#include "cases/case_io.h"

namespace nvfp4::fuzz {

// `fails` reruns a candidate; no-op for other operations.
void shrink_master_weights(cases::CaseRecord& r, const std::function<bool(const cases::Case&)>& fails);

}  // namespace nvfp4::fuzz
