// RapidCheck generator of whole cases: operation, profile, options, shape and an input recipe.
// Structure shrinks (smaller shapes, simpler distributions, fewer options); data comes from the
// recipe's seed, so a shrunk case stays reproducible and small.
#pragma once

#include <string>
#include <vector>

#include <rapidcheck.h>

#include "fuzz/case_io.h"

namespace nvfp4::fuzz {

struct CaseSpace {
  std::vector<Operation> ops;          // operations to draw from (all when empty)
  std::vector<std::string> profiles;   // profile names (all when empty)
  std::size_t max_dim = 256;           // largest M or K
};

rc::Gen<CaseRecord> case_record(const CaseSpace& space);

// Every operation, in a fixed order.
std::vector<Operation> all_operations();

}  // namespace nvfp4::fuzz
