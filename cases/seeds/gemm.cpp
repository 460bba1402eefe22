// The gemm family's seed cases (§3.20, §6.21): hand-written operands whose EXACT products
// cancel, tie or overflow, and products of quantized operands in every layout, output dtype and
// row-scaled path.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "cases/seeds/families.h"
#include "cases/seeds/seed_builders.h"
#include "io/tensor_convert.h"
#include "reference/layout.h"
#include "reference/profiles.h"
#include "reference/scale_layout.h"

namespace nvfp4::cases::seeds {
namespace {

// One operand row by row from hexadecimal bytes: data "66 66 ..." and one scale byte per block.
struct GemmRows {
  std::vector<std::string> data;
  std::vector<std::vector<std::uint8_t>> scale;
  float amax = 2688.0f;  // with the other operand's 2688, α = 1.0 exactly (§6.21)
};

std::map<std::string, io::Tensor> gemm_operand_tensors(const std::string& side, const GemmRows& g) {
  const std::int64_t rows = std::int64_t(g.data.size());
  std::vector<std::vector<std::uint8_t>> bytes;
  for (const std::string& line : g.data) {
    std::vector<std::uint8_t> b;
    for (std::size_t i = 0; i + 1 < line.size() + 1; i += 3)
      b.push_back(std::uint8_t(std::stoul(line.substr(i, 2), nullptr, 16)));
    bytes.push_back(b);
  }
  const std::int64_t half_k = std::int64_t(bytes[0].size()), blocks = half_k / 8;
  ByteMatrix data = xt::zeros<std::uint8_t>({std::size_t(rows), std::size_t(half_k)});
  ByteMatrix scale = xt::zeros<std::uint8_t>({std::size_t(scale_rows(rows)), std::size_t(scale_cols(16 * blocks))});
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < half_k; ++k) data(r, k) = bytes[r][k];
    for (std::int64_t j = 0; j < blocks; ++j) scale(r, j) = g.scale[r][j];
  }
  return {{side + "_data", io::from_byte_matrix(data)},
          {side + "_scale", io::from_byte_matrix(scale)},
          {side + "_amax", io::from_float_vector(FloatVector({g.amax}))}};
}

CaseRecord gemm_seed(const GemmRows& a, const GemmRows& b, std::string note) {
  std::map<std::string, io::Tensor> in = gemm_operand_tensors("a", a);
  in.merge(gemm_operand_tensors("b", b));
  return op_case("gemm", "te", std::move(in), std::move(note));
}

std::string repeat(const char* byte, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " " : "") + std::string(byte);
  return s;
}

// The first operand of a random product: the reference's rowwise quantization of a recipe.
std::map<std::string, io::Tensor> quantized_operand(const std::string& side, std::uint64_t seed, std::int64_t rows,
                                                    std::int64_t K, bool row_scaled, bool swizzled) {
  QuantizeOptions o;
  o.profile = default_profile().knobs;
  o.row_scaled = row_scaled;
  const Quantization q = quantize(generate_values(recipe(Distribution::kRandn, seed, rows, K, io::DType::F32)), o);
  return {{side + "_data", io::from_byte_matrix(q.rowwise->data)},
          {side + "_scale", io::from_byte_matrix(swizzled ? swizzle_scales(q.rowwise->scale) : q.rowwise->scale)},
          {side + "_amax", io::from_float_vector(q.rowwise->amax)}};
}

// Hand-written operands: cancellation, exact ties at binary32 and BF16, NaN and infinite results.
void add_exact_cases(std::vector<CaseRecord>& out) {
  // §6.21: blocks 2^24, 1, -2^24: EXACT gives 1.0; binary32 accumulation in block order gives 0.
  const std::string a621 = repeat("66", 8) + " 02 " + repeat("00", 7) + " " + repeat("66", 8);
  const std::string b621 = repeat("66", 8) + " 02 " + repeat("00", 7) + " " + repeat("EE", 8);
  const GemmRows A{{a621}, {{0x78, 0x38, 0x78}}}, B{{b621}, {{0x78, 0x38, 0x78}}};
  out.push_back(gemm_seed(A, B, "NUMERICS.md §6.21: cancellation across blocks (2^24 + 1 - 2^24): EXACT D = 1.0 (0x3F800000)"));
  {
    CaseRecord r = gemm_seed(A, B, "NUMERICS.md §3.20.3: beta*C cancels alpha*S exactly (beta = -1, C = 1): D = +0.0");
    r.c.params.set("beta", F32Bits{0xBF800000u});
    r.c.inputs["c"] = io::from_float_vector(FloatVector({1.0f}));
    r.c.inputs["c"].shape = {1, 1};
    out.push_back(r);
    r.note = "NUMERICS.md §3.20.3: beta*C nearly cancels alpha*S (C = 1 + 2^-23): D = -2^-23 exactly";
    r.c.inputs["c"] = io::from_float_vector(FloatVector({1.0f + 0x1p-23f}));
    r.c.inputs["c"].shape = {1, 1};
    out.push_back(r);
  }
  // Ties: S = 2^24 + 1 and 2^24 + 3 are halfway between binary32 neighbours (to even: 2^24, 2^24 + 4).
  const std::string big = repeat("66", 8), one = "02 " + repeat("00", 7), three = "22 02 " + repeat("00", 6);
  out.push_back(gemm_seed({{big + " " + one}, {{0x78, 0x38}}}, {{big + " " + one}, {{0x78, 0x38}}},
                          "NUMERICS.md §3.20.3: exact tie at binary32, S = 2^24 + 1 rounds to even 2^24"));
  out.push_back(gemm_seed({{big + " " + three}, {{0x78, 0x38}}}, {{big + " " + three}, {{0x78, 0x38}}},
                          "NUMERICS.md §3.20.3: exact tie at binary32, S = 2^24 + 3 rounds to even 2^24 + 4"));
  {
    // S = 1 + 2^-8 is exact in binary32 and halfway between BF16 1.0 and 1 + 2^-7: RNbf16 gives 1.0.
    CaseRecord r =
        gemm_seed({{one + " 01 " + repeat("00", 7)}, {{0x38, 0x20}}}, {{one + " 01 " + repeat("00", 7)}, {{0x38, 0x20}}},
                  "NUMERICS.md §3.20.3: BF16 output of an exact tie at BF16 (S = 1 + 2^-8): 1.0");
    r.c.params.set("output_dtype", std::string("BF16"));
    out.push_back(r);
  }
  {
    CaseRecord r =
        gemm_seed({{a621}, {{0x78, 0x7F, 0x78}}}, B, "NUMERICS.md §3.20.3: a NaN scale byte (0x7F) in A's row: D is NaN");
    out.push_back(r);
    r = gemm_seed({{repeat("00", 8)}, {{0x38}}}, {{repeat("22", 8)}, {{0x38}}},
                  "NUMERICS.md §3.20.3: alpha = +inf with S = 0: D is NaN");
    r.c.params.set("alpha", F32Bits{0x7F800000u});
    out.push_back(r);
    r = gemm_seed({{repeat("77", 8)}, {{0x7E}}}, {{repeat("77", 8)}, {{0x7E}}},
                  "NUMERICS.md §3.20.3: alpha = FLT_MAX times a large S overflows to +inf");
    r.c.params.set("alpha", F32Bits{0x7F7FFFFFu});
    out.push_back(r);
    r = gemm_seed({{"03 " + repeat("00", 7)}, {{0x38}}}, {{"02 " + repeat("00", 7)}, {{0x38}}},
                  "NUMERICS.md §3.20.3: alpha = 2^-149 times S = 1.5: subnormal tie, rounds to even 2^-148");
    r.c.params.set("alpha", F32Bits{0x00000001u});
    out.push_back(r);
  }
}

// Random products of quantized operands: shapes off every tile multiple, both scale layouts,
// every output dtype, bias, and the row-scaled path (§3.20.4) with and without accumulation.
void add_products(std::vector<CaseRecord>& out) {
  const char* kOut[] = {"F32", "BF16", "F16"};
  for (int i = 0; i < 3; ++i) {
    const bool swizzled = i == 1;
    std::map<std::string, io::Tensor> in = quantized_operand("a", 2100 + i, 48, 80, false, swizzled);
    in.merge(quantized_operand("b", 2200 + i, 32, 80, false, swizzled));
    CaseRecord r = op_case("gemm", "te", std::move(in),
                           fmt::format("NUMERICS.md §3.20: 48x32x80 product of quantized operands, output {}{}{}", kOut[i],
                                       swizzled ? ", swizzled scales" : "", i == 2 ? ", bias" : ""));
    r.c.params.set("output_dtype", std::string(kOut[i]));
    r.c.params.set("scale_layout", std::string(swizzled ? "swizzled" : "compact"));
    if (i == 2) {
      r.c.params.set("with_bias", true);
      r.c.inputs["bias"] = io::from_float_vector(
          FloatVector(xt::view(generate_values(recipe(Distribution::kRandn, 2300, 16, 32, io::DType::F32)), 0, xt::all())));
    }
    out.push_back(r);
  }
  for (int i = 0; i < 3; ++i) {
    std::map<std::string, io::Tensor> in = quantized_operand("a", 2400 + i, 32, 64, i != 1, false);
    in.merge(quantized_operand("b", 2500 + i, 48, 64, i != 0, false));
    CaseRecord r = op_case("gemm", "te", std::move(in),
                           fmt::format("NUMERICS.md §3.20.4 / §6.21: row-scaled 32x48x64, {}{}",
                                       i == 0   ? "per-row A, scalar B (folded)"
                                       : i == 1 ? "scalar A, per-row B (folded)"
                                                : "per-row both (two steps)",
                                       i == 2 ? ", accumulating into BF16 C" : ""));
    r.c.params.set("row_scaled", true);
    if (i == 2) {
      r.c.params.set("accumulate", true);
      r.c.params.set("output_dtype", std::string("BF16"));
      r.c.inputs["c"] =
          io::from_float_matrix(generate_values(recipe(Distribution::kRandn, 2600, 32, 48, io::DType::F32)), io::FloatType::BF16);
    }
    out.push_back(r);
  }
}

}  // namespace

void add_gemm_seeds(std::vector<CaseRecord>& out) {
  add_exact_cases(out);
  add_products(out);
}

}  // namespace nvfp4::cases::seeds
