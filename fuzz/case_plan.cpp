#include "fuzz/case_plan.h"

namespace nvfp4::fuzz {

CaseRecord CasePlan::build() const {
  CaseRecord r = record;
  for (const auto& [name, recipe] : r.recipes) r.c.inputs[name] = generate_tensor(recipe);
  for (const auto& step : steps) step(r);
  return r;
}

}  // namespace nvfp4::fuzz
