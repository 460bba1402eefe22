// The quantize family's seed cases beside its worked examples (quantize_examples.cpp): storage
// shapes and scale layouts, input recipes, stochastic rounding and the Hadamard path, expert
// weights, and dequantize under every profile.
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cases/seeds/families.h"
#include "cases/seeds/seed_builders.h"
#include "io/tensor_convert.h"
#include "reference/hadamard.h"
#include "reference/profiles.h"

namespace nvfp4::cases::seeds {
namespace {

void add_shapes(std::vector<CaseRecord>& out) {
  {
    Quant q;
    out.push_back(quantize_recipe_case(q, recipe(Distribution::kRandn, 615, 112, 96, io::DType::BF16),
                                       "NUMERICS.md §6.15 storage shapes: x[112, 96] both directions: data [112, 48] and "
                                       "[96, 56], scales [128, 8] with padding r >= 112 / j >= 6 and c >= 96 / i >= 7"));
    q.profile = "mslk";
    q.block = BlockShape::k2D;
    out.push_back(quantize_recipe_case(q, recipe(Distribution::kUniform, 616, 112, 96, io::DType::BF16),
                                       "NUMERICS.md §6.15 storage shapes, 2D tiles (mslk): x[112, 96] both directions"));
  }
  struct S {
    std::int64_t M, K;
    const char* profile;
    bool two_d;
    std::uint64_t seed;
  };
  for (const S& s : {S{48, 80, "te", true, 4880}, S{48, 80, "mslk", false, 4881}, S{304, 272, "te", true, 304272},
                     S{304, 272, "te", false, 304273}}) {
    Quant q;
    q.profile = s.profile;
    q.block = s.two_d ? BlockShape::k2D : BlockShape::k1D;
    q.row_scaled = !s.two_d;
    out.push_back(quantize_recipe_case(
        q, recipe(Distribution::kRandn, s.seed, s.M, s.K, io::DType::BF16),
        fmt::format("NUMERICS.md §2.4.1 / §3.11 / §3.12: shape {}x{} (not a multiple of 32/64/128: scale padding), {}, "
                    "both directions, profile {}",
                    s.M, s.K, s.two_d ? "2D 16x16 tiles" : "row-scaled", s.profile)));
  }
  {
    Quant q;
    q.layout = ScaleLayout::kSwizzled;
    out.push_back(quantize_recipe_case(q, recipe(Distribution::kRandn, 2421, 48, 80, io::DType::BF16),
                                       "NUMERICS.md §2.4.2: GEMM-swizzled scale layout, 48x80 (K/16=5, C'=8), both directions"));
    q.profile = "miles";
    q.block = BlockShape::k2D;
    q.direction = Direction::kRowwise;
    out.push_back(quantize_recipe_case(q, recipe(Distribution::kRandn, 2422, 64, 48, io::DType::F16),
                                       "NUMERICS.md §2.4.2: GEMM-swizzled scale layout, 2D tiles, F16 input 64x48 (miles)"));
  }
}

void add_recipes(std::vector<CaseRecord>& out) {
  static const Distribution kDists[] = {Distribution::kTies, Distribution::kBlockLogUniform, Distribution::kSpecials};
  static const io::DType kTypes[] = {io::DType::F32, io::DType::BF16, io::DType::F16};
  static const char* kSections[] = {"§2.1.2 / §6.2 E2M1 ties and §2.2 E4M3 ties",
                                    "§5.9 / §5.10 / §6.12 scale underflow and saturation",
                                    "§6.3 special values (zeros, -0.0, subnormals, FLT_MAX, inf, NaN)"};
  const auto profiles = all_profiles();
  std::size_t k = 0;
  for (std::size_t d = 0; d < 3; ++d)
    for (std::size_t t = 0; t < 3; ++t, ++k) {
      Quant q;
      q.profile = std::string(profiles[(3 * d + t) % profiles.size()].name);
      q.block = (k % 3 == 2) ? BlockShape::k2D : BlockShape::k1D;
      q.direction = (k % 2) ? Direction::kBoth : Direction::kRowwise;
      const Recipe rec = recipe(kDists[d], 9000 + k, 32, 64, kTypes[t]);
      out.push_back(quantize_recipe_case(
          q, rec,
          fmt::format("NUMERICS.md {}: recipe {} {} 32x64, profile {}, {}", kSections[d], distribution_name(kDists[d]),
                      io::dtype_name(kTypes[t]), q.profile, q.block == BlockShape::k2D ? "2D" : "1D")));
    }
}

CaseRecord with_sr(CaseRecord r, std::uint64_t seed, std::uint64_t offset) {
  r.c.params.set("rounding", std::string("stochastic"));
  r.c.params.set("seed", seed);
  r.c.params.set("offset", offset);
  return r;
}

CaseRecord with_rht(CaseRecord r, std::uint64_t mask) {
  r.c.params.set("rht", true);
  r.c.params.set("rht_mask", mask);
  return r;
}

// §3.18-§3.19 and §6.18: stochastic rounding, and TransformerEngine's wgrad recipe (the
// columnwise copy of rht(x)).
void add_gradient_path(std::vector<CaseRecord>& out) {
  // §6.18's block as row 0 of a 16x16 F32 tensor; g = 2688 and A = 6 make S = sf = 1, so y = x.
  const std::uint32_t block[16] = {0x3E99999A, 0x3F99999A, 0x402CCCCD, 0x40B00000, 0xBE99999A, 0xBF99999A,
                                   0xC02CCCCD, 0xC0B00000, 0x00000000, 0x80000000, 0x3F800000, 0x40C00000,
                                   0x3F3D70A4, 0x4079999A, 0x40833333, 0x40BCCCCD};
  Grid g(16, 16);
  for (int i = 0; i < 16; ++i) g.at(0, i) = block[i];
  Quant q;
  q.direction = Direction::kRowwise;
  q.amax_bits = 0x45280000;  // 2688
  out.push_back(with_sr(quantize_case(q, f32_tensor(g),
                                      "NUMERICS.md §6.18: SR of one block, seed 42, offset 0: "
                                      "packed bytes 30 75 A8 FD 80 72 62 76"),
                        42, 0));
  q.direction = Direction::kBoth;
  out.push_back(with_sr(quantize_case(q, f32_tensor(g),
                                      "NUMERICS.md §3.18.3: SR at the u64 edges: seed 2^64-1, offset 2^32-1 "
                                      "(the counter's low word carries into the next)"),
                        0xFFFFFFFFFFFFFFFFull, 0xFFFFFFFFull));
  const Recipe randn = recipe(Distribution::kRandn, 1818, 48, 80, io::DType::BF16);
  for (const char* p : {"te", "torchao", "modelopt", "te-2.13"}) {
    Quant sq;
    sq.profile = p;
    out.push_back(with_sr(quantize_recipe_case(sq, randn, fmt::format("NUMERICS.md §3.18 ({}): SR quantize, both directions", p)),
                          0x0123456789ABCDEFull, 7));
  }
  Quant rs;
  rs.row_scaled = true;
  out.push_back(with_sr(quantize_recipe_case(rs, randn, "NUMERICS.md §3.18: SR with row scaling"), 5, 0x100000000ull));
  Quant twod;
  twod.block = BlockShape::k2D;
  out.push_back(with_sr(quantize_recipe_case(twod, randn, "NUMERICS.md §3.18: SR with 16x16 tiles"), 9, 3));

  // TransformerEngine's wgrad recipe: the columnwise copy of rht(x).
  Quant both;
  out.push_back(with_rht(quantize_recipe_case(both, randn, "NUMERICS.md §3.19: quantize with rht (columnwise copy of rht(x))"),
                         kRhtDefaultMask));
  out.push_back(
      with_sr(with_rht(quantize_recipe_case(both, randn, "NUMERICS.md §3.18-§3.19: rht and SR together"), 0x1234), 77, 1));
  out.push_back(with_rht(quantize_recipe_case(rs, randn, "NUMERICS.md §3.19: rht with row scaling"), kRhtDefaultMask));
}

// te-pyref computes the amax of a BF16 input in BF16: a NaN amax is stored as 0x7FFF0000.
void add_bf16_nan_amax(std::vector<CaseRecord>& out) {
  Grid n(16, 32);
  SplitMix64 rng(1920);
  fill_all(n, rng, 0x40400000);
  n.at(3, 5) = 0x7FC00000;
  for (const bool row_scaled : {false, true}) {
    Quant p;
    p.profile = "te-pyref";
    p.row_scaled = row_scaled;
    out.push_back(
        quantize_case(p, bf16_tensor(n),
                      fmt::format("NUMERICS.md §4.2.7 (te-pyref): BF16 input with a NaN{}: the amax is stored as 0x7FFF0000",
                                  row_scaled ? ", row-scaled (row 3 and column 5)" : "")));
  }
}

void add_experts(std::vector<CaseRecord>& out) {
  Quant q;
  CaseRecord r =
      quantize_recipe_case(q, recipe(Distribution::kRandn, 3000, 96, 64, io::DType::BF16),
                           "NUMERICS.md §2.4.3: expert weights [3, 32, 64], each expert quantized alone with its own amax");
  r.recipes.clear();
  r.c.inputs.at("x").shape = {3, 32, 64};
  r.c.params.set("experts", true);
  out.push_back(r);
}

void add_dequantize(std::vector<CaseRecord>& out) {
  static const io::DType kTypes[] = {io::DType::F32, io::DType::BF16, io::DType::F16};
  std::uint64_t seed = 1300;
  int i = 0;
  for (const NamedProfile& p : all_profiles()) {
    const FloatMatrix x = generate_values(recipe(Distribution::kRandn, seed++, 32, 64, io::DType::F32));
    QuantizeOptions o;
    o.profile = p.knobs;
    const Quantization q = quantize(x, o);
    CaseRecord r = op_case("dequantize", std::string(p.name),
                           {{"data", io::from_byte_matrix(q.rowwise->data)},
                            {"scale", io::from_byte_matrix(q.rowwise->scale)},
                            {"amax", io::from_float_vector(q.rowwise->amax)}},
                           fmt::format("NUMERICS.md §3.13 / §6.13 / §5.6: dequantize a 32x64 tensor quantized by the "
                                       "reference under {} (DQ chain of the profile), output {}",
                                       p.name, io::dtype_name(kTypes[i % 3])));
    r.c.params.set("output_dtype", std::string(io::dtype_name(kTypes[i++ % 3])));
    out.push_back(std::move(r));
  }
}

}  // namespace

void add_quantize_seeds(std::vector<CaseRecord>& out) {
  add_quantize_worked_examples(out);
  add_shapes(out);
  add_recipes(out);
  add_gradient_path(out);
  add_bf16_nan_amax(out);
  add_experts(out);
  add_dequantize(out);
}

}  // namespace nvfp4::cases::seeds
