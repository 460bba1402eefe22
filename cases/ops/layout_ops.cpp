// Storage layouts (docs/NUMERICS.md §2.4, §3.14, §3.21): scale swizzle and unswizzle, the packed
// nibble transpose and the 2D scale transpose.
#include <xtensor/xmanipulation.hpp>

#include "cases/ops/families.h"
#include "cases/ops/param_specs.h"
#include "cases/reference_backend.h"
#include "cases/tensor_edit.h"
#include "io/tensor_convert.h"
#include "reference/layout.h"
#include "reference/scale_layout.h"
#include "reference/transpose.h"

namespace nvfp4::cases {
namespace {

ByteMatrix byte_input(const Case& c, const char* name) { return io::to_byte_matrix(case_input(c, name), c.op, name); }

TensorMap one(const char* name, const ByteMatrix& m) {
  TensorMap out;
  out[name] = io::from_byte_matrix(m);
  return out;
}

TensorMap run_swizzle(const Case& c) { return one("scale", swizzle_scales(byte_input(c, "scale"))); }
TensorMap run_unswizzle(const Case& c) { return one("scale", unswizzle_scales(byte_input(c, "scale"))); }
TensorMap run_transpose_packed(const Case& c) { return one("data", transpose_packed(byte_input(c, "data"))); }
TensorMap run_transpose_scales_2d(const Case& c) {
  return one("scale",
             transpose_scales_2d(byte_input(c, "scale"), std::size_t(c.params.integer("M")), std::size_t(c.params.integer("K"))));
}

// A 128-row band's swizzled bytes are contiguous and in band order (§2.4.2): bands processed
// separately and concatenated.
TensorMap swizzle_by_bands(const Case& c) {
  const io::Tensor& s = c.inputs.at("scale");
  if (s.shape.size() != 2 || s.shape[0] % 128 || s.shape[1] % 4) return ReferenceBackend().run(c);
  std::vector<io::Tensor> parts;
  for (std::int64_t r0 = 0; r0 < s.shape[0]; r0 += 128)
    parts.push_back(ReferenceBackend().run(with_input(c, "scale", row_slice(s, r0, 128))).at("scale"));
  TensorMap out;
  out["scale"] = concat_rows(parts, s.shape[1], io::DType::U8);
  return out;
}

// Through an unpacked nibble matrix and xtensor's transpose.
TensorMap transpose_via_nibbles(const Case& c) {
  const ByteMatrix in = byte_input(c, "data");
  const std::size_t M = in.shape(0), K = 2 * in.shape(1);
  if (M % 2) return ReferenceBackend().run(c);
  ByteMatrix nibbles = xt::empty<std::uint8_t>({M, K});
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t k = 0; k < K; ++k) nibbles(r, k) = nibble_at(in(r, k / 2), k % 2);
  const ByteMatrix t = xt::transpose(nibbles);
  ByteMatrix out = xt::empty<std::uint8_t>({K, M / 2});
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t j = 0; j < M / 2; ++j) out(k, j) = pack_nibbles(t(k, 2 * j), t(k, 2 * j + 1));
  return one("data", out);
}

// Scatters each first-row-of-group byte to its 16 output rows (the reference gathers).
TensorMap transpose_scales_by_scatter(const Case& c) {
  const ByteMatrix in = byte_input(c, "scale");
  const std::int64_t M = c.params.integer("M"), K = c.params.integer("K");
  if (M < 0 || K < 0 || std::int64_t(in.shape(0)) != scale_rows(M) || std::int64_t(in.shape(1)) != scale_cols(K))
    return ReferenceBackend().run(c);
  ByteMatrix out = xt::zeros<std::uint8_t>({std::size_t(scale_rows(K)), std::size_t(scale_cols(M))});
  for (std::int64_t i = 0; i < M / 16; ++i)
    for (std::int64_t j = 0; j < K / 16; ++j)
      for (std::int64_t k = 16 * j; k < 16 * j + 16; ++k) out(k, i) = in(16 * i, j);
  return one("scale", out);
}

OperationSpec layout_op(std::string_view name, std::string_view summary, std::string_view section, TensorSpec in, TensorSpec out,
                        Runner ref, Runner meta, std::string_view relation) {
  OperationSpec op;
  op.name = name;
  op.family = "layout";
  op.summary = summary;
  op.section = section;
  op.inputs = {std::move(in)};
  op.outputs = {std::move(out)};
  op.reference = ref;
  op.metamorphic = meta;
  op.relation = relation;
  return op;
}

}  // namespace

std::vector<OperationSpec> layout_operations() {
  const std::vector<io::DType> u8 = {io::DType::U8};
  const std::string_view padded = "[R, C], R % 128 == 0, C % 4 == 0";
  const std::string_view band = "128-row bands swizzled separately and concatenated";
  OperationSpec scales_2d =
      layout_op("transpose_scales_2d", "2D (16x16 tile) rowwise scales to the columnwise copy's scales", "§3.14",
                {.name = "scale", .dtypes = u8, .shape = "[roundup(M, 128), roundup(K/16, 4)] (compact, 2D)", .ranks = {2}},
                {"scale", u8, "[roundup(K, 128), roundup(M/16, 4)]"}, run_transpose_scales_2d, transpose_scales_by_scatter,
                "scatters each tile's byte to its 16 output rows where the reference gathers");
  scales_2d.params = {int_param("M", "rows of the quantized tensor"), int_param("K", "columns of the quantized tensor")};
  return {
      layout_op("swizzle", "compact scales to the GEMM-swizzled (128x4) layout", "§2.4.2, §3.21",
                {.name = "scale", .dtypes = u8, .shape = padded, .ranks = {2}}, {"scale", u8, "[R, C]"}, run_swizzle,
                swizzle_by_bands, band),
      layout_op("unswizzle", "GEMM-swizzled (128x4) scales back to the compact layout", "§2.4.2, §3.21",
                {.name = "scale", .dtypes = u8, .shape = padded, .ranks = {2}}, {"scale", u8, "[R, C]"}, run_unswizzle,
                swizzle_by_bands, band),
      layout_op("transpose_packed", "packed E2M1 data [M, K/2] to the transpose's packed data [K, M/2] (M even)", "§3.14",
                {.name = "data", .dtypes = u8, .shape = "[M, K/2]", .ranks = {2}}, {"data", u8, "[K, M/2]"}, run_transpose_packed,
                transpose_via_nibbles, "through an unpacked nibble matrix and xtensor's transpose"),
      scales_2d,
  };
}

}  // namespace nvfp4::cases
