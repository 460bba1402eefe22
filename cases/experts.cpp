#include "cases/experts.h"

#include "io/tensor_convert.h"
#include "reference/error.h"

namespace nvfp4 {

TensorMap run_per_expert(const Case& c, const std::function<TensorMap(const Case&)>& quantize) {
  if (!c.params.flag("experts")) return quantize(c);
  const io::Tensor& x = case_input(c, "x");
  if (x.shape.size() != 3)
    fail(c.op, ErrorCode::E_RANK, "experts: x has rank {}; expert weights are [E, N, K]", x.shape.size());
  const std::int64_t E = x.shape[0];
  const std::size_t bytes = x.bytes.size() / std::size_t(std::max<std::int64_t>(E, 1));
  TensorMap out;
  for (std::int64_t e = 0; e < E; ++e) {
    Case one = c;
    one.params.set("experts", false);
    io::Tensor& xe = one.inputs["x"];
    xe.shape = {x.shape[1], x.shape[2]};
    xe.bytes.assign(x.bytes.begin() + std::ptrdiff_t(e * bytes), x.bytes.begin() + std::ptrdiff_t((e + 1) * bytes));
    for (auto& [name, t] : quantize(one)) {
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

}  // namespace nvfp4
