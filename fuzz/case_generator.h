// RapidCheck generator of whole cases: operation, profile, shape and an input recipe, then the
// operation's own generator (fuzz/op_generators.h). Structure shrinks (smaller shapes, simpler
// distributions, fewer options); data comes from the recipe's seed, so a shrunk case stays
// reproducible and small.
#pragma once

#include <string>
#include <vector>

#include <rapidcheck.h>

#include "cases/case_io.h"
#include "cases/declaration.h"
#include "fuzz/case_plan.h"

namespace nvfp4::fuzz {

struct CaseSpace {
  std::vector<std::string> ops;       // operations to draw from (every registry operation when empty)
  std::vector<std::string> profiles;  // profile names (all when empty)
  std::size_t max_dim = 256;          // largest M or K
  // What the backends under test implement (nullptr entries: everything). Operations, profiles
  // and input dtypes are drawn inside every declaration; within_declarations() tells the rest.
  std::vector<const cases::Declaration*> declarations;
};

// Why a case lies outside one of the space's declarations ("" when inside all).
std::string outside_declarations(const CaseSpace& space, const cases::Case& c);

// What a campaign over the space covers, one line per operation: the profiles and input dtypes
// it draws from and each parameter that a declaration restricts with its accepted values
// ("quantize: profile in [te]; block in [1d]; ...; amax = null; x dtype in [F32, BF16]"); every
// parameter not listed takes any value the registry allows.
std::vector<std::string> describe_space(const CaseSpace& space);

// The draws of a case (cheap; RapidCheck's state is global, so one thread at a time), and the
// whole case: case_plan(space) built.
rc::Gen<CasePlan> case_plan(const CaseSpace& space);
rc::Gen<cases::CaseRecord> case_record(const CaseSpace& space);

// Every registry operation, in registry order.
std::vector<std::string> all_operations();

}  // namespace nvfp4::fuzz
