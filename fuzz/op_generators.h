// One case generator per registry operation. A generator runs inside rc::gen::exec (it draws with
// `*gen`) and completes a record that case_record() has started: the operation with its default
// parameters, a drawn profile (where the operation has one), and an input "x" from a drawn recipe
// (r.recipes["x"], whose shape the generator may reuse for other inputs or replace).
#pragma once

#include <span>
#include <string_view>

#include "cases/case_io.h"

namespace nvfp4::fuzz {

// `profile` is the drawn profile (already set where the operation has the parameter); operations
// whose inputs are quantized tensors quantize under it.
using OpGenerator = void (*)(CaseRecord& r, std::string_view profile);

struct GeneratorRow {
  std::string_view op;
  OpGenerator generate;
};

std::span<const GeneratorRow> op_generators();
OpGenerator find_generator(std::string_view op);  // nullptr when the operation has none

}  // namespace nvfp4::fuzz
