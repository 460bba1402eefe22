#include "cases/grouped_gemm_case.h"

#include <numeric>

#include <fmt/ranges.h>

#include "cases/registry.h"
#include "cases/tensor_edit.h"
#include "io/tensor_convert.h"
#include "reference/error.h"
#include "reference/grouped_layout.h"
#include "reference/layout.h"
#include "reference/scale_layout.h"

namespace nvfp4::cases {
namespace {

constexpr std::string_view kOp = "grouped_gemm";

// Byte columns [c0, c0 + n) of a 2-D U8 tensor.
io::Tensor column_slice(const io::Tensor& t, std::int64_t c0, std::int64_t n) {
  io::Tensor out{t.dtype, {t.shape[0], n}, {}};
  for (std::int64_t r = 0; r < t.shape[0]; ++r) {
    const auto row = t.bytes.begin() + std::ptrdiff_t(r * t.shape[1] + c0);
    out.bytes.insert(out.bytes.end(), row, row + n);
  }
  return out;
}

// The F32 values [first, first + n) of an amax tensor of any rank, as a 1-D tensor.
io::Tensor amax_values(const io::Tensor& t, std::int64_t first, std::int64_t n) {
  io::Tensor out{io::DType::F32, {n}, {}};
  out.bytes.assign(t.bytes.begin() + std::ptrdiff_t(4 * first), t.bytes.begin() + std::ptrdiff_t(4 * (first + n)));
  return out;
}

void require_shape(const io::Tensor& t, const std::vector<std::int64_t>& shape, const char* name, ErrorCode code) {
  if (t.shape != shape) fail(kOp, code, "{} is [{}], expected [{}]", name, fmt::join(t.shape, ", "), fmt::join(shape, ", "));
}

// The whole compact scale matrix of a grouped operand: as stored, or from the grouped bytes.
ByteMatrix whole_compact(const Case& c, const char* name, GroupAxis axis, const std::vector<std::int64_t>& sizes,
                         std::int64_t extent) {
  const io::Tensor& s = case_input(c, name);
  io::require_dtype(s, io::DType::U8, kOp, name);
  if (c.params.text("scale_layout") == "swizzled") {
    io::require_rank(s, 1, kOp, name);
    return grouped_unswizzle(s.bytes, axis, sizes, extent);
  }
  return io::to_byte_matrix(s, kOp, name);
}

Case group_case(const Case& c) {
  Case g = make_case("gemm");
  g.params.set("output_dtype", c.params.text("output_dtype"));
  g.params.set("row_scaled", c.params.flag("row_scaled"));
  g.params.set("accumulation", c.params.text("accumulation"));
  return g;
}

std::vector<Case> m_grouped(const Case& c, const std::vector<std::int64_t>& sizes) {
  const io::Tensor &ad = case_input(c, "a_data"), &bd = case_input(c, "b_data"), &bs = case_input(c, "b_scale");
  io::require_rank(ad, 2, kOp, "a_data");
  io::require_rank(bd, 3, kOp, "b_data");
  io::require_rank(bs, 3, kOp, "b_scale");
  const std::int64_t T = ad.shape[0], half_k = ad.shape[1], G = std::int64_t(sizes.size());
  check_groups(kOp, sizes, T);
  if (bd.shape[0] != G) fail(kOp, ErrorCode::E_GROUPS, "b_data holds {} weights for {} groups", bd.shape[0], G);
  const std::int64_t N = bd.shape[1];
  require_shape(bd, {G, N, half_k}, "b_data", ErrorCode::E_DATA_SHAPE);
  require_shape(bs, {G, scale_rows(N), scale_cols(2 * half_k)}, "b_scale", ErrorCode::E_SCALE_SHAPE);
  const bool row_scaled = c.params.flag("row_scaled");
  const io::Tensor &aa = case_input(c, "a_amax"), &ba = case_input(c, "b_amax");
  if (aa.numel() != G && !(row_scaled && aa.numel() == T))
    fail(kOp, ErrorCode::E_AMAX_SHAPE, "a_amax has {} values: one per group ({}){}", aa.numel(), G,
         row_scaled ? " or per row" : "");
  if (ba.numel() != G && !(row_scaled && ba.numel() == G * N))
    fail(kOp, ErrorCode::E_AMAX_SHAPE, "b_amax has {} values: one per group ({}){}", ba.numel(), G,
         row_scaled ? " or per row of each weight" : "");
  const ByteMatrix a_scale = whole_compact(c, "a_scale", GroupAxis::kOuter, sizes, scale_cols(2 * half_k));
  const bool swizzled_b = c.params.text("scale_layout") == "swizzled";
  std::vector<Case> out;
  std::int64_t first = 0;
  for (std::int64_t g = 0; g < G; ++g) {
    Case k = group_case(c);
    k.inputs["a_data"] = row_slice(ad, first, sizes[g]);
    k.inputs["a_scale"] = io::from_byte_matrix(group_scales(a_scale, GroupAxis::kOuter, sizes, std::size_t(g)));
    k.inputs["a_amax"] = aa.numel() == G ? amax_values(aa, g, 1) : amax_values(aa, first, sizes[g]);
    k.inputs["b_data"] = leading_slice(bd, g);
    const io::Tensor b_scale = leading_slice(bs, g);
    k.inputs["b_scale"] =
        swizzled_b ? io::from_byte_matrix(unswizzle_scales(io::to_byte_matrix(b_scale, kOp, "b_scale"))) : b_scale;
    k.inputs["b_amax"] = ba.numel() == G ? amax_values(ba, g, 1) : amax_values(ba, g * N, N);
    out.push_back(std::move(k));
    first += sizes[g];
  }
  return out;
}

// An empty token range contracts nothing: S_exact = 0, which one block of zero codes and zero
// scales gives exactly (so that α = ±inf or NaN still gives NaN, and every other α +0.0).
void zero_block(Case& k, const std::string& side, std::int64_t rows) {
  k.inputs[side + "_data"] = io::make_tensor(io::DType::U8, {rows, 8}, std::vector<std::uint8_t>(std::size_t(rows * 8)));
  k.inputs[side + "_scale"] =
      io::make_tensor(io::DType::U8, {scale_rows(rows), 4}, std::vector<std::uint8_t>(std::size_t(scale_rows(rows) * 4)));
}

std::vector<Case> k_grouped(const Case& c, const std::vector<std::int64_t>& sizes) {
  if (c.params.flag("row_scaled")) fail(kOp, ErrorCode::E_UNSUPPORTED, "row_scaled is defined for grouping m only");
  const io::Tensor &ad = case_input(c, "a_data"), &bd = case_input(c, "b_data");
  io::require_rank(ad, 2, kOp, "a_data");
  io::require_rank(bd, 2, kOp, "b_data");
  const std::int64_t M = ad.shape[0], N = bd.shape[0], T = 2 * ad.shape[1], G = std::int64_t(sizes.size());
  if (2 * bd.shape[1] != T) fail(kOp, ErrorCode::E_GEMM_K, "a_data has {} tokens and b_data {}", T, 2 * bd.shape[1]);
  check_groups(kOp, sizes, T);
  const io::Tensor &aa = case_input(c, "a_amax"), &ba = case_input(c, "b_amax");
  if (aa.numel() != G) fail(kOp, ErrorCode::E_AMAX_SHAPE, "a_amax has {} values: one per group ({})", aa.numel(), G);
  if (ba.numel() != G) fail(kOp, ErrorCode::E_AMAX_SHAPE, "b_amax has {} values: one per group ({})", ba.numel(), G);
  const ByteMatrix a_scale = whole_compact(c, "a_scale", GroupAxis::kInner, sizes, scale_rows(M));
  const ByteMatrix b_scale = whole_compact(c, "b_scale", GroupAxis::kInner, sizes, scale_rows(N));
  if (std::int64_t(a_scale.shape(0)) != scale_rows(M) || std::int64_t(b_scale.shape(0)) != scale_rows(N))
    fail(kOp, ErrorCode::E_SCALE_SHAPE, "scale rows [{}, {}], expected [{}, {}]", a_scale.shape(0), b_scale.shape(0),
         scale_rows(M), scale_rows(N));
  std::vector<Case> out;
  std::int64_t first = 0;
  for (std::int64_t g = 0; g < G; ++g) {
    Case k = group_case(c);
    if (sizes[g] == 0) {
      zero_block(k, "a", M);
      zero_block(k, "b", N);
    } else {
      k.inputs["a_data"] = column_slice(ad, first / 2, sizes[g] / 2);
      k.inputs["b_data"] = column_slice(bd, first / 2, sizes[g] / 2);
      k.inputs["a_scale"] = io::from_byte_matrix(group_scales(a_scale, GroupAxis::kInner, sizes, std::size_t(g)));
      k.inputs["b_scale"] = io::from_byte_matrix(group_scales(b_scale, GroupAxis::kInner, sizes, std::size_t(g)));
    }
    k.inputs["a_amax"] = amax_values(aa, g, 1);
    k.inputs["b_amax"] = amax_values(ba, g, 1);
    out.push_back(std::move(k));
    first += sizes[g];
  }
  return out;
}

}  // namespace

std::vector<Case> grouped_gemm_groups(const Case& c) {
  validate_case(c);
  const std::vector<std::int64_t>& sizes = c.params.integers("group_sizes");
  return c.params.text("grouping") == "m" ? m_grouped(c, sizes) : k_grouped(c, sizes);
}

TensorMap assemble_grouped_gemm(const Case& c, const std::vector<TensorMap>& outs) {
  TensorMap result;
  io::Tensor& d = result["d"];
  const bool m = c.params.text("grouping") == "m";
  const std::string& dt = c.params.text("output_dtype");
  d.dtype = dt == "BF16" ? io::DType::BF16 : dt == "F16" ? io::DType::F16 : io::DType::F32;
  const io::Tensor& b = case_input(c, "b_data");
  const std::int64_t N = m ? b.shape[1] : b.shape[0];
  d.shape = m ? std::vector<std::int64_t>{0, N}
              : std::vector<std::int64_t>{std::int64_t(outs.size()), case_input(c, "a_data").shape[0], N};
  for (const TensorMap& o : outs) {
    const io::Tensor& part = o.at("d");
    if (m) d.shape[0] += part.shape[0];
    d.bytes.insert(d.bytes.end(), part.bytes.begin(), part.bytes.end());
  }
  return result;
}

TensorMap run_grouped_gemm(const Case& c, const std::function<TensorMap(const Case&)>& gemm) {
  std::vector<TensorMap> outs;
  for (const Case& g : grouped_gemm_groups(c)) outs.push_back(gemm(g));
  return assemble_grouped_gemm(c, outs);
}

}  // namespace nvfp4::cases
