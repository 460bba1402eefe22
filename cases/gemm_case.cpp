#include "cases/gemm_case.h"

#include "cases/registry.h"
#include "io/tensor_convert.h"
#include "reference/error.h"
#include "reference/scale_layout.h"

namespace nvfp4::cases {
namespace {

GemmOperand operand(const Case& c, const std::string& side, bool swizzled) {
  GemmOperand o;
  const std::string data = side + "_data", scale = side + "_scale", amax = side + "_amax";
  o.data = io::to_byte_matrix(case_input(c, data.c_str()), c.op, data);
  o.scale = io::to_byte_matrix(case_input(c, scale.c_str()), c.op, scale);
  if (swizzled) {
    const auto& s = o.scale.shape();
    if (s[0] % 128 || s[1] % 4)
      fail(c.op, ErrorCode::E_SCALE_SHAPE, "{}_scale is [{}, {}]: a swizzled buffer has a multiple of 128 rows and of 4 columns",
           side, s[0], s[1]);
    o.scale = unswizzle_scales(o.scale);
  }
  o.amax = io::to_float_vector(case_input(c, amax.c_str()), c.op, amax);
  return o;
}

}  // namespace

GemmOptions gemm_options(const Case& c) {
  GemmOptions o;
  o.alpha = c.params.f32("alpha");
  o.beta = c.params.f32("beta");
  const std::string& out = c.params.text("output_dtype");
  o.output = out == "BF16" ? GemmOutput::BF16 : out == "F16" ? GemmOutput::F16 : GemmOutput::F32;
  o.row_scaled = c.params.flag("row_scaled");
  o.accumulate = c.params.flag("accumulate");
  o.accumulation = *accumulation_of(c.params.text("accumulation"));  // the registry allows only the models' names
  return o;
}

bool gemm_scales_swizzled(const Case& c) { return c.params.text("scale_layout") == "swizzled"; }

io::DType gemm_output_dtype(const Case& c) {
  const std::string& out = c.params.text("output_dtype");
  return out == "BF16" ? io::DType::BF16 : out == "F16" ? io::DType::F16 : io::DType::F32;
}

void read_gemm_inputs(const Case& c, GemmInputs& in) {
  in.options = gemm_options(c);
  const bool swizzled = gemm_scales_swizzled(c);
  in.a = operand(c, "a", swizzled);
  in.b = operand(c, "b", swizzled);
  if (c.inputs.count("c")) {
    const io::Tensor& t = case_input(c, "c");
    io::require_rank(t, 2, c.op, "c");
    // β·C takes binary32; the row-scaled accumulator is of the output dtype.
    io::require_dtype(t, in.options.accumulate ? gemm_output_dtype(c) : io::DType::F32, c.op, "c");
    in.c = io::to_float_matrix(t, c.op, "c");
    in.options.c = &in.c;
  }
  if (c.params.flag("with_bias")) {
    in.bias = io::to_float_vector(case_input(c, "bias"), c.op, "bias");
    in.options.bias = &in.bias;
  }
}

}  // namespace nvfp4::cases
