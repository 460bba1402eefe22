#include "cases/experts.h"

#include "cases/tensor_edit.h"
#include "io/tensor_convert.h"
#include "reference/error.h"

namespace nvfp4::cases {

Case expert_case(const Case& c, std::int64_t e) {
  const io::Tensor& x = case_input(c, "x");
  if (x.shape.size() != 3) fail(c.op, ErrorCode::E_RANK, "experts: x has rank {}; expert weights are [E, N, K]", x.shape.size());
  Case one = c;
  one.params.set("experts", false);
  one.inputs["x"] = leading_slice(x, e);
  return one;
}

TensorMap expert_outputs(const TensorMap& stacked, std::int64_t e) {
  TensorMap out;
  for (const auto& [name, t] : stacked) out[name] = leading_slice(t, e);
  return out;
}

TensorMap run_per_expert(const Case& c, const std::function<TensorMap(const Case&)>& quantize) {
  if (!c.params.flag("experts")) return quantize(c);
  const std::int64_t E = case_input(c, "x").shape.size() == 3 ? case_input(c, "x").shape[0] : 0;
  TensorMap out;
  for (std::int64_t e = 0; e < std::max<std::int64_t>(E, 1); ++e) {
    for (auto& [name, t] : quantize(expert_case(c, e))) {
      io::Tensor& stacked = out[name];
      if (e == 0) {
        stacked.dtype = t.dtype;
        stacked.shape = t.shape;
        stacked.shape.insert(stacked.shape.begin(), E);
      }
      stacked.bytes.insert(stacked.bytes.end(), t.bytes.begin(), t.bytes.end());
    }
  }
  return out;
}

}  // namespace nvfp4::cases
