// Grouped (MoE) operations (docs/NUMERICS.md §2.4.3, §3.20.5): the grouped scale layout and the
// grouped GEMM, M-grouped (forward, dgrad) and K-grouped (wgrad).
#include <numeric>

#include "cases/gemm_case.h"
#include "cases/grouped_gemm_case.h"
#include "cases/ops/families.h"
#include "cases/ops/param_specs.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "io/tensor_convert.h"
#include "reference/grouped_layout.h"
#include "reference/layout.h"

namespace nvfp4::cases {
namespace {

GroupAxis axis_param(const Case& c) { return c.params.text("axis") == "inner" ? GroupAxis::kInner : GroupAxis::kOuter; }
const std::vector<std::int64_t>& sizes_param(const Case& c) { return c.params.integers("group_sizes"); }

// The grouped axis's extent in elements, from the compact matrix of the whole tensor: the logical
// extent is what the group sizes sum to (checked against the padded extent by the layout).
std::int64_t groups_total(const Case& c) {
  const std::vector<std::int64_t>& s = sizes_param(c);
  return std::accumulate(s.begin(), s.end(), std::int64_t(0));
}

TensorMap run_grouped_swizzle(const Case& c) {
  const ByteMatrix compact = io::to_byte_matrix(case_input(c, "scale"), c.op, "scale");
  check_groups(c.op, sizes_param(c), groups_total(c));
  TensorMap out;
  out["scale"] = io::from_byte_vector(grouped_swizzle(compact, axis_param(c), sizes_param(c)));
  return out;
}

TensorMap run_grouped_unswizzle(const Case& c) {
  check_groups(c.op, sizes_param(c), groups_total(c));
  TensorMap out;
  out["scale"] = io::from_byte_matrix(grouped_unswizzle(io::to_byte_vector(case_input(c, "scale"), c.op, "scale"), axis_param(c),
                                                        sizes_param(c), c.params.integer("extent")));
  return out;
}

// Visits every entry of every group's compact block with its position in the whole compact
// matrix (R, C) and its byte in the grouped buffer: the group's offset plus the §2.4.2 offset of
// its group-local position. False when the groups or the shape do not fit (the reference's error).
template <class Visit>
bool for_each_grouped_entry(GroupAxis axis, const std::vector<std::int64_t>& sizes, std::int64_t rows, std::int64_t cols,
                            Visit visit) {
  if (!grouped_compact_fits(axis, sizes, rows, cols)) return false;
  std::int64_t first = 0, base = 0;
  for (const std::int64_t size : sizes) {
    if (size < 0 || size % 16) return false;
    const std::int64_t g_rows = axis == GroupAxis::kOuter ? scale_rows(size) : rows;
    const std::int64_t g_cols = axis == GroupAxis::kOuter ? cols : scale_cols(size);
    const std::int64_t used_rows = axis == GroupAxis::kOuter ? size : rows,
                       used_cols = axis == GroupAxis::kOuter ? cols : size / 16;
    for (std::int64_t r = 0; r < used_rows; ++r)
      for (std::int64_t k = 0; k < used_cols; ++k)
        visit(axis == GroupAxis::kOuter ? first + r : r, axis == GroupAxis::kOuter ? k : first / 16 + k,
              base + swizzled_offset(r, k, g_cols));
    first += size;
    base += g_rows * g_cols;
  }
  return true;
}

TensorMap grouped_swizzle_by_scatter(const Case& c) {
  const io::Tensor& s = c.inputs.at("scale");
  if (s.shape.size() != 2 || s.dtype != io::DType::U8) return ReferenceBackend().run(c);
  const ByteMatrix compact = io::to_byte_matrix(s, c.op, "scale");
  std::vector<std::uint8_t> bytes;
  const GroupAxis axis = axis_param(c);
  const std::int64_t rows = std::int64_t(compact.shape(0)), cols = std::int64_t(compact.shape(1));
  // The groups must fit the matrix before their buffer is sized by them (a group of 2^48 rows).
  if (!grouped_compact_fits(axis, sizes_param(c), rows, cols)) return ReferenceBackend().run(c);
  bytes.assign(std::size_t(std::max<std::int64_t>(0, grouped_bytes(axis, sizes_param(c), rows, cols))), 0);
  if (!for_each_grouped_entry(axis, sizes_param(c), rows, cols,
                              [&](std::int64_t R, std::int64_t C, std::int64_t at) { bytes[std::size_t(at)] = compact(R, C); }))
    return ReferenceBackend().run(c);
  TensorMap out;
  out["scale"] = io::from_byte_vector(bytes);
  return out;
}

// The same positions gathered: each compact entry read from its byte, padding 0x00.
TensorMap grouped_unswizzle_by_gather(const Case& c) {
  const io::Tensor& s = c.inputs.at("scale");
  const GroupAxis axis = axis_param(c);
  const std::int64_t extent = c.params.integer("extent"), total = groups_total(c);
  if (s.shape.size() != 1 || s.dtype != io::DType::U8 || extent < 0 || total < 0) return ReferenceBackend().run(c);
  const std::int64_t rows = axis == GroupAxis::kOuter ? scale_rows(total) : extent;
  const std::int64_t cols = axis == GroupAxis::kOuter ? extent : scale_cols(total);
  if (grouped_bytes(axis, sizes_param(c), rows, cols) != std::int64_t(s.bytes.size())) return ReferenceBackend().run(c);
  ByteMatrix compact = xt::zeros<std::uint8_t>({std::size_t(rows), std::size_t(cols)});
  if (!for_each_grouped_entry(axis, sizes_param(c), rows, cols,
                              [&](std::int64_t R, std::int64_t C, std::int64_t at) { compact(R, C) = s.bytes[std::size_t(at)]; }))
    return ReferenceBackend().run(c);
  TensorMap out;
  out["scale"] = io::from_byte_matrix(compact);
  return out;
}

TensorMap run_grouped_gemm_reference(const Case& c) {
  return run_grouped_gemm(c, [](const Case& g) { return operation("gemm").reference(g); });
}
TensorMap grouped_gemm_via_relations(const Case& c) {
  return run_grouped_gemm(c, [](const Case& g) { return operation("gemm").metamorphic(g); });
}

ParamSpec sizes_spec(std::string_view doc) {
  return ParamSpec{"group_sizes", ParamType::kIntList, {}, std::vector<std::int64_t>{16}, doc};
}

}  // namespace

std::vector<OperationSpec> grouped_operations() {
  const ParamSpec axis = enum_param(
      "axis", {"outer", "inner"},
      "outer: groups along the scale rows (tokens, rowwise); inner: along the scale columns (tokens of columnwise copies)");
  const ParamSpec sizes = sizes_spec("group extents in elements along the grouped axis (rows, or K elements), multiples of 16");
  OperationSpec s;
  s.name = "grouped_swizzle";
  s.family = "grouped";
  s.summary =
      "compact scales of a grouped tensor to the grouped swizzled layout: each group swizzled on its own extent, concatenated";
  s.section = "§2.4.3";
  s.params = {axis, sizes};
  s.inputs = {{.name = "scale", .dtypes = {io::DType::U8}, .shape = "[R', C'] compact scales of the whole tensor", .ranks = {2}}};
  s.outputs = {{"scale", {io::DType::U8}, "[sum over groups of R'_g * C'_g]"}};
  s.reference = run_grouped_swizzle;
  s.metamorphic = grouped_swizzle_by_scatter;
  s.relation =
      "every compact entry scattered to its byte: the group's buffer offset plus the 128x4 offset of its position in the group";

  OperationSpec u;
  u.name = "grouped_unswizzle";
  u.family = "grouped";
  u.summary = "grouped swizzled scales back to the compact scales of the whole tensor";
  u.section = "§2.4.3";
  u.params = {axis,
              sizes,
              {"extent",
               ParamType::kInt,
               {},
               std::int64_t(4),
               "the ungrouped axis's padded extent: C' (outer, a multiple of 4) or R' (inner, a multiple of 128)"}};
  u.inputs = {{.name = "scale", .dtypes = {io::DType::U8}, .shape = "[sum over groups of R'_g * C'_g]", .ranks = {1}}};
  u.outputs = {{"scale", {io::DType::U8}, "outer [roundup(sum,128), extent]; inner [extent, roundup(sum/16,4)]"}};
  u.reference = run_grouped_unswizzle;
  u.metamorphic = grouped_unswizzle_by_gather;
  u.relation = "every compact entry gathered from its byte (the group's offset plus the 128x4 offset), padding 0x00";

  OperationSpec g;
  g.name = "grouped_gemm";
  g.family = "grouped";
  g.summary =
      "G independent GEMMs (EXACT or an MMA model) with their own amaxes: M-grouped (tokens split, one weight per group) or "
      "K-grouped (wgrad: token ranges contracted)";
  g.section = "§3.20.5, §3.20.6, §2.4.3";
  g.params = {
      enum_param("grouping", {"m", "k"},
                 "m: A's rows split into groups, one B per group; k: both operands' K (tokens) split, one D per group"),
      sizes_spec("group extents (m: rows of A; k: tokens along K), multiples of 16, summing to that extent"),
      enum_param("output_dtype", {"F32", "BF16", "F16"}, "dtype of d"),
      enum_param(
          "scale_layout", {"compact", "swizzled"},
          "compact: whole-tensor compact scales; swizzled: the grouped layout of §2.4.3 (B of grouping m: each weight swizzled)"),
      {"row_scaled", ParamType::kBool, {}, false, "grouping m: per-row amaxes and the post-scale of §3.20.4, per group"},
      accumulation_param()};
  const std::string_view grouped_scale = "compact [R', C'] of the whole operand, or grouped swizzled bytes (1-D)";
  g.inputs = {{.name = "a_data", .dtypes = {io::DType::U8}, .shape = "m: [T, K/2]; k: [M, T/2]", .ranks = {2}},
              {.name = "a_scale", .dtypes = {io::DType::U8}, .shape = grouped_scale, .ranks = {1, 2}},
              {.name = "a_amax", .dtypes = {io::DType::F32}, .shape = "[G], or [T] when row_scaled", .ranks = {1}},
              {.name = "b_data", .dtypes = {io::DType::U8}, .shape = "m: [G, N, K/2]; k: [N, T/2]", .ranks = {2, 3}},
              {.name = "b_scale",
               .dtypes = {io::DType::U8},
               .shape = "m: [G, roundup(N,128), roundup(K/16,4)] (swizzled per weight); k: as a_scale",
               .ranks = {1, 2, 3}},
              {.name = "b_amax", .dtypes = {io::DType::F32}, .shape = "[G], or [G, N] when row_scaled", .ranks = {1, 2}}};
  g.outputs = {{"d", {io::DType::F32, io::DType::BF16, io::DType::F16}, "m: [T, N]; k: [G, M, N]"}};
  g.reference = run_grouped_gemm_reference;
  g.metamorphic = grouped_gemm_via_relations;
  g.relation = "each group through the gemm relations (blocks reversed and split, D^T = D(B, A), a row negated)";
  return {s, u, g};
}

}  // namespace nvfp4::cases
