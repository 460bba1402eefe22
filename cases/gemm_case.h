// The operands and options of a gemm case, read from its registry parameters and tensors once
// here for the reference, the metamorphic relations and the CLI.
#pragma once

#include "cases/case.h"
#include "reference/gemm.h"

namespace nvfp4::cases {

// The parameters alone: output_dtype, alpha, beta, bias, row_scaled, accumulate (pointers null).
GemmOptions gemm_options(const Case& c);
bool gemm_scales_swizzled(const Case& c);  // parameter scale_layout
io::DType gemm_output_dtype(const Case& c);

// Everything the reference needs, scales compact (unswizzled when the case stores them swizzled).
struct GemmInputs {
  GemmOperand a, b;
  FloatMatrix c;        // empty unless the case has tensor c
  FloatVector bias;     // empty unless parameter bias
  GemmOptions options;  // c and bias point into this object: do not copy it
  GemmInputs() = default;
  GemmInputs(const GemmInputs&) = delete;
};
void read_gemm_inputs(const Case& c, GemmInputs& in);

}  // namespace nvfp4::cases
