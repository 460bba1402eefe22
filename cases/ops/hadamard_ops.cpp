// The random Hadamard transform of TransformerEngine's wgrad recipe (docs/NUMERICS.md §3.19).
#include "cases/ops/families.h"
#include "cases/ops/param_specs.h"
#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "cases/tensor_edit.h"
#include "io/tensor_convert.h"
#include "reference/error.h"
#include "reference/hadamard.h"

namespace nvfp4::cases {
namespace {

TensorMap run_rht(const Case& c) {
  const io::Tensor& x = case_input(c, "x");
  io::require_rank(x, 2, c.op, "x");
  if (x.dtype != io::DType::BF16)
    fail(c.op, ErrorCode::E_DTYPE, "tensor 'x' has dtype {}; the transform takes BF16", io::dtype_name(x.dtype));
  TensorMap out;
  out["x_t"] =
      io::from_float_matrix(rht(io::to_float_matrix(x, c.op, "x"), rht_mask_param(c), rht_sum_param(c)), io::FloatType::BF16);
  return out;
}

// The sign mask is a negation of input rows: rht(x, mask) = rht(x', 0) where row 16b+k of x' is
// row 16b+k of x negated when bit k of the mask is set (negating a BF16 value is exact, and a
// product's sign is the coefficient's times the input's, -0.0 included).
TensorMap rht_via_negated_rows(const Case& c) {
  const io::Tensor& x = c.inputs.at("x");
  if (x.dtype != io::DType::BF16 || x.shape.size() != 2 || x.shape[0] % 16) return ReferenceBackend().run(c);
  const std::uint16_t mask = rht_mask_param(c);
  io::Tensor negated = x;
  const std::int64_t N = x.shape[1];
  for (std::int64_t r = 0; r < x.shape[0]; ++r)
    if ((mask >> (r % 16)) & 1u)
      for (std::int64_t col = 0; col < N; ++col) negated.bytes[2 * (r * N + col) + 1] ^= 0x80;  // BF16 sign bit
  Case plain = with_input(c, "x", negated);
  plain.params.set("rht_mask", std::uint64_t(0));
  return ReferenceBackend().run(plain);
}

}  // namespace

std::vector<OperationSpec> hadamard_operations() {
  OperationSpec op;
  op.name = "rht";
  op.family = "hadamard";
  op.summary =
      "16-point random Hadamard transform along the rows of a BF16 x [M, N], stored transposed: the sum rounded to binary32 "
      "(exact sum and RN, or a BF16 tensor core's), RNE to BF16";
  op.section = "§3.19";
  op.params = {{"rht_mask",
                ParamType::kUInt,
                {},
                std::uint64_t(kRhtDefaultMask),
                "sign mask, 16 bits: bit k set makes s_k = -1 (0: the plain Hadamard transform)"},
               rht_accumulation_param()};
  op.inputs = {{.name = "x", .dtypes = {io::DType::BF16}, .shape = "[M, N], M and N multiples of 16", .ranks = {2}}};
  op.outputs = {{"x_t", {io::DType::BF16}, "[N, M]"}};
  op.reference = run_rht;
  op.metamorphic = rht_via_negated_rows;
  op.relation = "the sign mask negates input rows: rht(x, mask) = rht(x with rows 16b+k negated for each set bit k, 0)";
  return {op};
}

}  // namespace nvfp4::cases
