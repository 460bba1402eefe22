// One case generator per registry operation. A generator runs inside rc::gen::exec (it draws with
// `*gen`) and completes a plan that case_plan() has started: the operation with its default
// parameters, a drawn profile (where the operation has one), and the recipe of an input "x"
// (p.record.recipes["x"], which the generator may keep, reuse for other inputs or drop). It sets
// parameters as it draws and leaves every costly step (data, reference runs) to the plan's steps.
#pragma once

#include <span>
#include <string_view>

#include "fuzz/case_plan.h"

namespace nvfp4::fuzz {

// `profile` is the drawn profile (already set where the operation has the parameter); operations
// whose inputs are quantized tensors quantize under it.
using OpGenerator = void (*)(CasePlan& p, std::string_view profile);

struct GeneratorRow {
  std::string_view op;
  OpGenerator generate;
};

std::span<const GeneratorRow> op_generators();
OpGenerator find_generator(std::string_view op);  // nullptr when the operation has none

}  // namespace nvfp4::fuzz
