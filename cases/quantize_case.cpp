#include "cases/quantize_case.h"

#include "io/tensor_convert.h"
#include "reference/error.h"

namespace nvfp4::cases {

std::uint16_t rht_mask_param(const Case& c) {
  const std::uint64_t mask = c.params.unsigned_integer("rht_mask");
  if (mask > 0xFFFF) fail(c.op, ErrorCode::E_UNSUPPORTED, "rht_mask={:#x} has more than 16 bits", mask);
  return std::uint16_t(mask);
}

RhtSum rht_sum_param(const Case& c) {
  const std::string& name = c.params.text("accumulation");
  const std::optional<RhtSum> sum = rht_sum_of(name);
  if (!sum) fail(c.op, ErrorCode::E_UNSUPPORTED, "accumulation={} is not a sum rule of the transform (exact, mma-sm90)", name);
  return *sum;
}

std::string_view block_name(BlockShape b) { return b == BlockShape::k1D ? "1d" : "2d"; }

std::string_view direction_name(Direction d) {
  return d == Direction::kRowwise ? "rowwise" : d == Direction::kColumnwise ? "columnwise" : "both";
}

std::string_view scale_layout_name(ScaleLayout l) { return l == ScaleLayout::kCompact ? "compact" : "swizzled"; }

QuantizeOptions quantize_options(const Case& c) {
  const Params& p = c.params;
  QuantizeOptions o;
  o.profile = case_profile(c);
  o.block = p.text("block") == "2d" ? BlockShape::k2D : BlockShape::k1D;
  const std::string& d = p.text("direction");
  o.direction = d == "both" ? Direction::kBoth : d == "columnwise" ? Direction::kColumnwise : Direction::kRowwise;
  o.row_scaled = p.flag("row_scaled");
  o.amax = p.f32("amax");
  o.scale_layout = p.text("scale_layout") == "swizzled" ? ScaleLayout::kSwizzled : ScaleLayout::kCompact;
  if (const auto x = c.inputs.find("x"); x != c.inputs.end())
    o.input = x->second.dtype == io::DType::BF16  ? InputFormat::kBF16
              : x->second.dtype == io::DType::F16 ? InputFormat::kF16
                                                  : InputFormat::kF32;
  if (p.text("rounding") == "stochastic")
    o.stochastic = StochasticRounding{p.unsigned_integer("seed"), p.unsigned_integer("offset")};
  if (p.flag("rht")) o.rht_mask = rht_mask_param(c);
  return o;
}

void set_quantize_params(Case& c, BlockShape block, Direction direction, bool row_scaled, ScaleLayout layout) {
  c.params.set("block", std::string(block_name(block)));
  c.params.set("direction", std::string(direction_name(direction)));
  c.params.set("row_scaled", row_scaled);
  c.params.set("scale_layout", std::string(scale_layout_name(layout)));
}

io::DType dequantize_output_dtype(const Case& c) { return *io::dtype_from_name(c.params.text("output_dtype")); }

TensorMap reference_quantize(const Case& c, const QuantizeSteps& steps) {
  QuantizeOptions o = quantize_options(c);
  o.steps = steps;
  const Quantization q = quantize(io::to_float_matrix(case_input(c, "x"), c.op, "x"), o);
  TensorMap out;
  if (q.rowwise) {
    out["data"] = io::from_byte_matrix(q.rowwise->data);
    out["scale"] = io::from_byte_matrix(q.rowwise->scale);
    out["amax"] = io::from_float_vector(q.rowwise->amax);
  }
  if (q.columnwise) {
    out["data_t"] = io::from_byte_matrix(q.columnwise->data);
    out["scale_t"] = io::from_byte_matrix(q.columnwise->scale);
    out["amax_t"] = io::from_float_vector(q.columnwise->amax);
  }
  if (q.global_scale) out["global_scale"] = io::from_float_vector(FloatVector({*q.global_scale}));
  return out;
}

TensorMap reference_dequantize(const Case& c, const DequantizeSteps& steps) {
  TensorMap out;
  out["x"] = io::from_float_matrix(dequantize(io::to_byte_matrix(case_input(c, "data"), c.op, "data"),
                                              io::to_byte_matrix(case_input(c, "scale"), c.op, "scale"),
                                              io::to_float_vector(case_input(c, "amax"), c.op, "amax"), case_profile(c), steps),
                                   io::float_type_of(dequantize_output_dtype(c), c.op));
  return out;
}

}  // namespace nvfp4::cases
