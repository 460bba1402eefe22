#include "fuzz/case_plan.h"

namespace nvfp4::fuzz {

cases::CaseRecord CasePlan::build() const {
  cases::CaseRecord r = record;
  for (const auto& [name, recipe] : r.recipes) r.c.inputs[name] = cases::generate_tensor(recipe);
  for (const auto& step : steps) step(r);
  return r;
}

}  // namespace nvfp4::fuzz
