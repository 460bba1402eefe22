// gemm cases of real-looking data, for the tests that compare GEMMs by ULP distance: operands that
// `quantize` (te, 1D, rowwise, compact) made from standard normal matrices, not the generator's
// edge cases.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "cases/registry.h"
#include "io/tensor_convert.h"
#include "reference/profiles.h"
#include "reference/quantize.h"

namespace nvfp4::test_support {

inline cases::Case normal_gemm_case(std::int64_t M, std::int64_t N, std::int64_t K, std::uint64_t seed,
                                    const std::string& output_dtype = "F32") {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  QuantizeOptions o;
  o.profile = find_profile("te")->knobs;
  cases::Case c = cases::make_case("gemm");
  c.params.set("output_dtype", output_dtype);
  for (const auto& [side, rows] : {std::pair{"a", M}, std::pair{"b", N}}) {
    FloatMatrix x = xt::empty<float>({std::size_t(rows), std::size_t(K)});
    for (float& v : x) v = normal(rng);
    const QuantizedTensor q = *quantize(x, o).rowwise;
    c.inputs[std::string(side) + "_data"] = io::from_byte_matrix(q.data);
    c.inputs[std::string(side) + "_scale"] = io::from_byte_matrix(q.scale);
    c.inputs[std::string(side) + "_amax"] = io::from_float_vector(q.amax);
  }
  return c;
}

}  // namespace nvfp4::test_support
