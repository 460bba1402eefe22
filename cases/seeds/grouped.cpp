// The grouped family's seed cases (§2.4.3, §3.20.5): grouped swizzles along either axis with
// empty groups, and the MoE forward and wgrad GEMMs. (Expert weights are the quantize family's.)
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xadapt.hpp>

#include "cases/seeds/families.h"
#include "cases/seeds/seed_builders.h"
#include "io/tensor_convert.h"
#include "reference/grouped_layout.h"
#include "reference/profiles.h"
#include "reference/scale_layout.h"

namespace nvfp4::cases::seeds {
namespace {

void add_grouped_layouts(std::vector<CaseRecord>& out) {
  CaseRecord r = op_case("grouped_swizzle", "te", {{"scale", random_bytes(256, 8, 2700)}},
                         "NUMERICS.md §2.4.3: outer-axis groups of 128 rows each: equal to one whole-extent swizzle");
  r.c.params.set("axis", std::string("outer"));
  r.c.params.set("group_sizes", std::vector<std::int64_t>{128, 128});
  out.push_back(r);
  r = op_case("grouped_swizzle", "te", {{"scale", random_bytes(256, 4, 2701)}},
              "NUMERICS.md §2.4.3: outer-axis groups of 48, 0 and 160 rows: each group padded to 128-row bands");
  r.c.params.set("axis", std::string("outer"));
  r.c.params.set("group_sizes", std::vector<std::int64_t>{48, 0, 160});
  out.push_back(r);
  r = op_case("grouped_swizzle", "te", {{"scale", random_bytes(128, 12, 2702)}},
              "NUMERICS.md §2.4.3: inner-axis groups of 80, 32 and 48 tokens: each group's columns swizzled on its own extent");
  r.c.params.set("axis", std::string("inner"));
  r.c.params.set("group_sizes", std::vector<std::int64_t>{80, 32, 48});
  out.push_back(r);
  CaseRecord u =
      op_case("grouped_unswizzle", "te",
              {{"scale", io::from_byte_vector(grouped_swizzle(io::to_byte_matrix(random_bytes(128, 12, 2703), "seed", "scale"),
                                                              GroupAxis::kInner, {80, 32, 48}))}},
              "NUMERICS.md §2.4.3: inner-axis grouped bytes back to the whole compact matrix");
  u.c.params.set("axis", std::string("inner"));
  u.c.params.set("group_sizes", std::vector<std::int64_t>{80, 32, 48});
  u.c.params.set("extent", std::int64_t(128));
  out.push_back(u);
}

// MoE forward: 3 groups of tokens (32, 0, 48 rows), one weight per group, grouped swizzled scales.
void add_moe_forward(std::vector<CaseRecord>& out) {
  const std::vector<std::int64_t> sizes = {32, 0, 48};
  QuantizeOptions o;
  o.profile = default_profile().knobs;
  const Quantization a = quantize(generate_values(recipe(Distribution::kRandn, 2800, 80, 64, io::DType::F32)), o);
  std::vector<io::Tensor> data, scale;
  std::vector<float> b_amax;
  for (int g = 0; g < 3; ++g) {
    const Quantization b = quantize(generate_values(recipe(Distribution::kRandn, 2810 + g, 48, 64, io::DType::F32)), o);
    data.push_back(io::from_byte_matrix(b.rowwise->data));
    scale.push_back(io::from_byte_matrix(swizzle_scales(b.rowwise->scale)));
    b_amax.push_back(b.rowwise->amax(0));
  }
  auto stack = [](const std::vector<io::Tensor>& parts) {
    io::Tensor t{parts[0].dtype, parts[0].shape, {}};
    t.shape.insert(t.shape.begin(), std::int64_t(parts.size()));
    for (const io::Tensor& p : parts) t.bytes.insert(t.bytes.end(), p.bytes.begin(), p.bytes.end());
    return t;
  };
  const std::vector<float> a_amax = {a.rowwise->amax(0), a.rowwise->amax(0) * 2.0f, a.rowwise->amax(0) * 0.5f};
  CaseRecord r =
      op_case("grouped_gemm", "te",
              {{"a_data", io::from_byte_matrix(a.rowwise->data)},
               {"a_scale", io::from_byte_vector(grouped_swizzle(a.rowwise->scale, GroupAxis::kOuter, sizes))},
               {"a_amax", io::from_float_vector(FloatVector(xt::adapt(a_amax)))},
               {"b_data", stack(data)},
               {"b_scale", stack(scale)},
               {"b_amax", io::from_float_vector(FloatVector(xt::adapt(b_amax)))}},
              "NUMERICS.md §3.20.5: M-grouped GEMM (MoE forward), groups of 32, 0 and 48 tokens, grouped swizzled scales");
  r.c.params.set("group_sizes", sizes);
  r.c.params.set("scale_layout", std::string("swizzled"));
  out.push_back(r);
}

// MoE wgrad: dW_g = dY_g^T X_g over token ranges of 48, 16 and 0 tokens (columnwise copies).
void add_moe_wgrad(std::vector<CaseRecord>& out) {
  const std::vector<std::int64_t> sizes = {48, 16, 0};
  QuantizeOptions o;
  o.profile = default_profile().knobs;
  o.direction = Direction::kColumnwise;
  const Quantization dy = quantize(generate_values(recipe(Distribution::kRandn, 2900, 64, 32, io::DType::F32)), o);
  const Quantization x = quantize(generate_values(recipe(Distribution::kRandn, 2901, 64, 48, io::DType::F32)), o);
  CaseRecord r =
      op_case("grouped_gemm", "te",
              {{"a_data", io::from_byte_matrix(dy.columnwise->data)},
               {"a_scale", io::from_byte_vector(grouped_swizzle(dy.columnwise->scale, GroupAxis::kInner, sizes))},
               {"a_amax", io::from_float_vector(FloatVector({1.5f, 3.0f, 0.25f}))},
               {"b_data", io::from_byte_matrix(x.columnwise->data)},
               {"b_scale", io::from_byte_vector(grouped_swizzle(x.columnwise->scale, GroupAxis::kInner, sizes))},
               {"b_amax", io::from_float_vector(FloatVector({2.0f, 5.0f, 7.0f}))}},
              "NUMERICS.md §3.20.5: K-grouped GEMM (MoE wgrad), token ranges of 48, 16 and 0 (an empty range gives +0.0)");
  r.c.params.set("grouping", std::string("k"));
  r.c.params.set("group_sizes", sizes);
  r.c.params.set("scale_layout", std::string("swizzled"));
  out.push_back(r);
}

}  // namespace

void add_grouped_seeds(std::vector<CaseRecord>& out) {
  add_grouped_layouts(out);
  add_moe_forward(out);
  add_moe_wgrad(out);
}

}  // namespace nvfp4::cases::seeds
