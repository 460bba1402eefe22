// gemm cases of real-looking data, for the tests that compare GEMMs by ULP distance: operands that
// `quantize` (te, 1D, rowwise, compact) made from standard normal matrices, not the generator's
// edge cases.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cases/registry.h"
#include "io/tensor_convert.h"
#include "reference/gemm.h"
#include "reference/layout.h"
#include "reference/profiles.h"
#include "reference/quantize.h"

namespace nvfp4::test_support {

// A [rows, K] operand from one E2M1 code per element and one scale byte per block, amax 2688 (α = 1).
inline GemmOperand operand_of_codes(const std::vector<std::vector<std::uint8_t>>& codes,
                                    const std::vector<std::vector<std::uint8_t>>& scales) {
  const std::size_t rows = codes.size(), K = codes[0].size();
  GemmOperand o;
  o.data = xt::zeros<std::uint8_t>({rows, K / 2});
  o.scale = xt::zeros<std::uint8_t>({std::size_t(scale_rows(std::int64_t(rows))), std::size_t(scale_cols(std::int64_t(K)))});
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < K / 2; ++k) o.data(r, k) = pack_nibbles(codes[r][2 * k], codes[r][2 * k + 1]);
    for (std::size_t j = 0; j < K / 16; ++j) o.scale(r, j) = scales[r][j];
  }
  o.amax = FloatVector({2688.0f});
  return o;
}

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
