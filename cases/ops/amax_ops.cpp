// The amax family (docs/NUMERICS.md §3.1-§3.3): global, per row, per column, per 1x16 and 16x1
// block and per 16x16 tile, under the profile's NaN rule.
#include "cases/ops/families.h"
#include "cases/ops/param_specs.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "cases/tensor_edit.h"
#include "io/tensor_convert.h"
#include "reference/amax.h"
#include "reference/formulas.h"

namespace nvfp4::cases {
namespace {

FloatMatrix input_x(const Case& c) { return io::to_float_matrix(case_input(c, "x"), c.op, "x"); }
AmaxRule rule(const Case& c) { return case_profile(c).amax; }

TensorMap one(io::Tensor amax) {
  TensorMap out;
  out["amax"] = std::move(amax);
  return out;
}
io::Tensor matrix(const FloatMatrix& m) { return io::from_float_matrix(m, io::FloatType::F32); }

TensorMap run_global(const Case& c) { return one(io::from_float_vector(FloatVector({amax_global(input_x(c), rule(c))}))); }
TensorMap run_rows(const Case& c) { return one(io::from_float_vector(amax_rows(input_x(c), rule(c)))); }
TensorMap run_cols(const Case& c) { return one(io::from_float_vector(amax_cols(input_x(c), rule(c)))); }
TensorMap run_1x16(const Case& c) { return one(matrix(amax_blocks_1x16(input_x(c), rule(c)))); }
TensorMap run_16x1(const Case& c) { return one(matrix(amax_blocks_16x1(input_x(c), rule(c)))); }
TensorMap run_16x16(const Case& c) { return one(matrix(amax_tiles_16x16(input_x(c), rule(c)))); }

// The global amax is the NaN-rule combination of the row amaxes.
TensorMap global_via_rows(const Case& c) {
  Case rows = c;
  rows.op = "amax_rows";
  const FloatVector r = io::to_float_vector(ReferenceBackend().run(rows).at("amax"), c.op, "amax");
  float g = 0.0f;
  for (float v : r) g = amax_combine(rule(c), g, v);
  return one(io::from_float_vector(FloatVector({g})));
}

// An amax over rows (columns, 1x16 blocks, 16x1 blocks, tiles) of x is the transposed amax over
// columns (rows, 16x1 blocks, 1x16 blocks, tiles) of x^T.
template <const char* kTwin>
TensorMap via_transpose(const Case& c) {
  Case t = with_input(c, "x", transposed(c.inputs.at("x")));
  t.op = kTwin;
  TensorMap out = ReferenceBackend().run(t);
  if (out.at("amax").shape.size() == 2) out["amax"] = transposed(out.at("amax"));
  return out;
}
constexpr char kRows[] = "amax_rows", kCols[] = "amax_cols", k1x16[] = "amax_blocks_1x16", k16x1[] = "amax_blocks_16x1",
               k16x16[] = "amax_tiles_16x16";

const std::vector<io::DType> kFloats = {io::DType::F32, io::DType::BF16, io::DType::F16};

OperationSpec amax_op(std::string_view name, std::string_view summary, std::string_view out_shape, Runner ref, Runner meta,
                      std::string_view relation) {
  OperationSpec op;
  op.name = name;
  op.family = "amax";
  op.summary = summary;
  op.section = "§3.1-§3.3";
  op.params = {profile_param()};
  op.inputs = {{.name = "x", .dtypes = kFloats, .shape = "[M, K]", .ranks = {2}}};
  op.outputs = {{"amax", {io::DType::F32}, out_shape}};
  op.reference = ref;
  op.metamorphic = meta;
  op.relation = relation;
  return op;
}

}  // namespace

std::vector<OperationSpec> amax_operations() {
  return {
      amax_op("amax_global", "max |x| over the tensor under the profile's NaN rule", "[1]", run_global, global_via_rows,
              "the NaN-rule combination of the row amaxes"),
      amax_op("amax_rows", "max |x| of each row (K % 16 == 0)", "[M]", run_rows, via_transpose<kCols>, "amax_cols of x^T"),
      amax_op("amax_cols", "max |x| of each column (K % 16 == 0)", "[K]", run_cols, via_transpose<kRows>, "amax_rows of x^T"),
      amax_op("amax_blocks_1x16", "max |x| of each 1x16 block (K % 16 == 0)", "[M, K/16]", run_1x16, via_transpose<k16x1>,
              "amax_blocks_16x1 of x^T, transposed"),
      amax_op("amax_blocks_16x1", "max |x| of each 16x1 block (M % 16 == 0)", "[M/16, K]", run_16x1, via_transpose<k1x16>,
              "amax_blocks_1x16 of x^T, transposed"),
      amax_op("amax_tiles_16x16", "max |x| of each 16x16 tile (M, K % 16 == 0)", "[M/16, K/16]", run_16x16, via_transpose<k16x16>,
              "amax_tiles_16x16 of x^T, transposed"),
  };
}

}  // namespace nvfp4::cases
