// The fault catalogue (docs/spec/faults.md): one row per pattern of a real NVFP4 bug, each a
// variant of one formula step, layout or packing rule of the reference. compare/diagnose.h runs
// a failing case through the rows that apply to it and names those that reproduce the failure.
// Adding a pattern is adding a row here (and its line in docs/spec/faults.md).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "cases/case.h"
#include "compare/explain.h"
#include "reference/dequantize.h"
#include "reference/quantize.h"

namespace nvfp4::compare {

// A variant of the reference's computation of one case: the case (with the parameters, inputs or
// knobs a pattern changes), the steps it replaces, and what it does to the outputs afterwards.
struct Variant {
  cases::Case c;
  QuantizeSteps quantize;
  DequantizeSteps dequantize;
  std::vector<void (*)(const cases::Case& original, cases::TensorMap& outputs)> outputs;
};

struct FaultPattern {
  std::string_view name;     // stable: reports, campaign.json and the fault suite use it
  std::string_view summary;  // one line: what the kernel does wrong
  std::string_view source;   // the public report it comes from, or the kind of code that does it
  std::string_view ops;      // the operations it applies to, comma-separated (for the docs)
  std::string_view knob;     // the single-knob variant it is ("E4M3=TORCH"), named by the pattern alone; or ""
  // Whether the pattern can change this case's outputs (a swizzle pattern needs swizzled scales).
  bool (*applies)(const cases::Case& c);
  // Turns v into the pattern's variant. Null for a detector.
  void (*apply)(Variant& v);
  // A detector, for a fault that writes no definite bytes: whether the explained differences
  // fit it. Null for a variant.
  bool (*detects)(const cases::Case& c, const Explanation& x);
};

std::span<const FaultPattern> fault_patterns();
const FaultPattern* find_fault_pattern(std::string_view name);

// The outputs of variant v: the reference run on v.c with v's steps, then v's output changes.
cases::TensorMap run_variant(const Variant& v, const cases::Case& original);

}  // namespace nvfp4::compare
