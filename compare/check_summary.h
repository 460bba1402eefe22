// What `check` tells its user, in words: which tensors match, and for a mismatch where the first
// mismatching block is and what kind of mismatch it is, with counts (docs/guides/check.md).
#pragma once

#include <string>
#include <vector>

#include "compare/check.h"

namespace nvfp4::compare {

// One paragraph: the case, the verdict, each compared tensor's count of differing elements, the
// blocks that match, the first mismatching block (quantize) or element with each of its
// differences classified, the mismatch kinds, and which profile or variant explains them.
// `e` is explain_check(r), unused when r matches.
std::string describe_check(const CheckResult& r, const Explanation& e);

// One line per profile, best first: "matches torchao on 100.0% of blocks (960 of 960), bit for bit".
std::vector<std::string> describe_identify(const std::vector<ProfileMatch>& ranking);

}  // namespace nvfp4::compare
