// The seed corpus (corpora/seed/): small cases, one per worked-example class of NUMERICS.md §6 and
// per upstream divergence of §5 that a single operation can express, plus shapes, layouts and
// every operation. `nvfp4-verify seed-corpus --output DIR` writes them; the list is deterministic,
// so regenerating it yields the same files (same content, same names). Test and gate data: a
// library of its own (nvfp4_seed_corpus), not part of the installed nvfp4verify::cases.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "cases/case_io.h"

namespace nvfp4::cases {

// Profiles that an operation allows but none of its seed cases uses, and why.
struct UnseededProfiles {
  std::string_view op;  // an operation of the family, or "*" for each of them
  std::vector<std::string_view> profiles;
  std::string_view why;
};

// One operation family (OperationSpec::family) and its seed cases, built in cases/seeds/<family>.cpp.
// tests/seed_corpus_test.cpp checks that every profile the registry allows an operation with a
// profile parameter has a seed case of that operation or is listed in `unseeded`, never both: a
// new profile gets seed cases or a stated reason.
struct SeedFamily {
  std::string_view family;
  void (*add)(std::vector<CaseRecord>& out);
  std::vector<UnseededProfiles> unseeded;
};
std::span<const SeedFamily> seed_families();

// Every family's cases, in table order. Every record has origin "seed corpus" and a note naming
// the NUMERICS.md section it exercises.
std::vector<CaseRecord> seed_corpus();

}  // namespace nvfp4::cases
