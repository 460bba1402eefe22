// The seed corpus (corpora/seed/): small cases, one per worked-example class of NUMERICS.md §6 and
// per upstream divergence of §5 that a single operation can express, plus shapes, layouts and
// every operation. `nvfp4-verify seed-corpus --output DIR` writes them; the list is deterministic,
// so regenerating it yields the same files (same content, same names).
#pragma once

#include <vector>

#include "cases/case_io.h"

namespace nvfp4 {

// Every record has origin "seed corpus" and a note naming the NUMERICS.md section it exercises.
std::vector<CaseRecord> seed_corpus();

}  // namespace nvfp4
