// Explaining a mismatch of the distributed master-weight cast (NUMERICS.md §3.17): which rank
// and which step a wrong byte comes from, recognising the three upstream bugs of §5.1-§5.3 by
// the pattern they leave in the output.
#pragma once

#include "compare/explain.h"

namespace nvfp4::compare {

Explanation explain_master_weights(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual);

}  // namespace nvfp4::compare
