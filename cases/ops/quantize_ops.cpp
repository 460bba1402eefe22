// Quantization and dequantization (docs/NUMERICS.md §3.5-§3.13).
#include "cases/experts.h"
#include "cases/ops/families.h"
#include "cases/ops/param_specs.h"
#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "cases/tensor_edit.h"
#include "io/tensor_convert.h"
#include "reference/error.h"
#include "reference/hadamard.h"
#include "reference/layout.h"

namespace nvfp4::cases {
namespace {

// The rowwise copy of quantize(x) is the columnwise copy of quantize(x^T), and vice versa.
TensorMap quantize_via_transpose(const Case& c) {
  Case t = with_input(c, "x", transposed(c.inputs.at("x")));
  const std::string& d = c.params.text("direction");
  if (d == "rowwise") t.params.set("direction", std::string("columnwise"));
  if (d == "columnwise") t.params.set("direction", std::string("rowwise"));
  TensorMap q = ReferenceBackend().run(t), out;
  for (auto& [name, tensor] : q) {
    if (name == "global_scale")
      out[name] = std::move(tensor);
    else if (name.size() > 2 && name.substr(name.size() - 2) == "_t")
      out[name.substr(0, name.size() - 2)] = std::move(tensor);
    else
      out[name + "_t"] = std::move(tensor);
  }
  return out;
}

// Under stochastic rounding or rht the copies are not transposes of each other (their random
// bits and inputs differ), but each copy is computed on its own: the rowwise copy is
// quantize(x, rowwise), the columnwise one quantize(x, columnwise), and with rht and nearest
// rounding the rowwise quantization of the rht operation's output.
TensorMap quantize_copy_by_copy(const Case& c) {
  const io::Tensor& x = c.inputs.at("x");
  const std::string& d = c.params.text("direction");
  Case row = c;
  row.params.set("direction", std::string("rowwise"));
  row.params.set("rht", false);
  TensorMap out = ReferenceBackend().run(row);  // global_scale comes from x in every case
  if (d == "columnwise") out.erase("data"), out.erase("scale"), out.erase("amax");
  if (d == "rowwise") return out;
  TensorMap col;
  if (c.params.flag("rht") && c.params.text("rounding") == "nearest") {
    Case t = make_case("rht");
    t.params.set("rht_mask", c.params.unsigned_integer("rht_mask"));
    t.params.set("accumulation", std::string(rht_sum_name(quantize_options(c).profile.rht)));  // the profile's sums
    t.inputs["x"] = x;
    Case q = with_input(row, "x", ReferenceBackend().run(t).at("x_t"));
    for (auto& [name, tensor] : ReferenceBackend().run(q))
      if (name != "global_scale") col[name + "_t"] = std::move(tensor);
  } else {
    Case cw = c;
    cw.params.set("direction", std::string("columnwise"));
    col = ReferenceBackend().run(cw);
  }
  for (const char* name : {"data_t", "scale_t", "amax_t"}) out[name] = col.at(name);
  return out;
}

// Either relation reshapes x (transposes, or splits the copies), so x is checked first as the
// reference checks it: a case that the reference rejects gets the reference's error.
TensorMap quantize_metamorphic(const Case& c) {
  const io::Tensor& x = case_input(c, "x");
  if (x.shape.size() != 2) return ReferenceBackend().run(c);
  validate_quantize(std::size_t(x.shape[0]), std::size_t(x.shape[1]), quantize_options(c));
  const bool plain = c.params.text("rounding") == "nearest" && !c.params.flag("rht");
  return plain ? quantize_via_transpose(c) : quantize_copy_by_copy(c);
}

// Dequantization is row-local: 16-row slices dequantized separately, then concatenated.
TensorMap dequantize_by_row_slices(const Case& c) {
  const io::Tensor &data = c.inputs.at("data"), &scale = c.inputs.at("scale"), &amax = c.inputs.at("amax");
  const std::int64_t M = data.shape.at(0), K = 2 * data.shape.at(1);
  if (M % 16 || scale.shape.at(0) != scale_rows(M) || (amax.shape.at(0) != 1 && amax.shape.at(0) != M))
    return ReferenceBackend().run(c);  // the relation needs whole 16-row slices; errors come from the reference
  std::vector<io::Tensor> parts;
  for (std::int64_t r0 = 0; r0 < M; r0 += 16) {
    Case s = c;
    s.inputs["data"] = row_slice(data, r0, 16);
    io::Tensor sc = row_slice(scale, r0, 16);
    sc.shape[0] = 128;  // pad the slice's scale matrix to 128 rows with 0x00
    sc.bytes.resize(128 * scale.shape.at(1), 0);
    s.inputs["scale"] = sc;
    if (amax.shape.at(0) == M) {  // row-scaled: the slice's 16 amaxes
      io::Tensor a = row_slice(io::Tensor{amax.dtype, {M, 1}, amax.bytes}, r0, 16);
      a.shape = {16};
      s.inputs["amax"] = a;
    }
    parts.push_back(ReferenceBackend().run(s).at("x"));
  }
  TensorMap out;
  out["x"] = concat_rows(parts, K, dequantize_output_dtype(c));
  return out;
}

}  // namespace

std::vector<OperationSpec> quantize_operations() {
  const std::vector<io::DType> floats = {io::DType::F32, io::DType::BF16, io::DType::F16};
  OperationSpec q;
  q.name = "quantize";
  q.family = "quantize";
  q.summary = "NVFP4 quantization: 1D (1x16 / 16x1) or 2D (16x16) blocks, rowwise, columnwise or both, optionally row-scaled";
  q.section = "§3.5-§3.12";
  q.params = {
      profile_param(),
      enum_param("block", {"1d", "2d"}, "1d: 1x16 blocks (16x1 columnwise); 2d: 16x16 tiles"),
      enum_param("direction", {"rowwise", "columnwise", "both"}, "which copies: x, x^T or both"),
      {"row_scaled", ParamType::kBool, {}, false, "one global amax per row of x (and per column for x^T); 1d only"},
      {"amax", ParamType::kF32Bits, {}, F32Bits{}, "global amax override (both directions); null: computed"},
      enum_param("scale_layout", {"compact", "swizzled"}, "scale storage: compact or GEMM-swizzled (128x4)"),
      {"rounding",
       ParamType::kEnum,
       {"nearest", "stochastic"},
       std::string("nearest"),
       "E2M1 rounding: to nearest, or stochastic with the canonical Philox bits of seed and offset (§3.18)",
       true},
      {"seed", ParamType::kUInt, {}, std::uint64_t(0), "stochastic rounding: the Philox key (u64)", true},
      {"offset", ParamType::kUInt, {}, std::uint64_t(0), "stochastic rounding: the Philox counter offset (u64)", true},
      {"rht",
       ParamType::kBool,
       {},
       false,
       "the columnwise copy quantizes rht(x) with its own amax (§3.19; BF16 x, 1d blocks, a columnwise copy)",
       true},
      {"rht_mask",
       ParamType::kUInt,
       {},
       std::uint64_t(kRhtDefaultMask),
       "rht sign mask, 16 bits: bit k set makes s_k = -1 (0: the plain Hadamard transform)",
       true},
      {"experts",
       ParamType::kBool,
       {},
       false,
       "x is [E, N, K] expert weights: each expert quantized alone with its own amax, every output gains a leading E",
       true},
  };
  q.inputs = {{.name = "x", .dtypes = floats, .shape = "[M, K] (BF16 when rht); [E, N, K] when experts", .ranks = {2, 3}}};
  const std::string_view rowwise = "direction != columnwise", columnwise = "direction != rowwise";
  q.outputs = {
      {"data", {io::DType::U8}, "[M, K/2]", true, rowwise},
      {"scale", {io::DType::U8}, "[roundup(M, 128), roundup(K/16, 4)]", true, rowwise},
      {"amax", {io::DType::F32}, "[1], or [M] when row_scaled", true, rowwise},
      {"data_t", {io::DType::U8}, "[K, M/2]", true, columnwise},
      {"scale_t", {io::DType::U8}, "[roundup(K, 128), roundup(M/16, 4)]", true, columnwise},
      {"amax_t", {io::DType::F32}, "[1], or [K] when row_scaled", true, columnwise},
      {"global_scale", {io::DType::F32}, "[1]", true, "the profile exports a second-level scale and not row_scaled"},
  };
  q.reference = [](const Case& c) { return run_per_expert(c, [](const Case& e) { return reference_quantize(e); }); };
  q.metamorphic = [](const Case& c) { return run_per_expert(c, quantize_metamorphic); };
  q.relation =
      "the rowwise copy of quantize(x) is the columnwise copy of quantize(x^T), and vice versa; under stochastic "
      "rounding or rht, each copy equals that copy quantized alone (with rht and nearest rounding: the rowwise "
      "quantization of the rht operation's output)";

  OperationSpec d;
  d.name = "dequantize";
  d.family = "quantize";
  d.summary = "NVFP4 rowwise data, compact scales and amax back to floating point under the profile's DQ chain";
  d.section = "§3.13";
  d.params = {profile_param(), enum_param("output_dtype", {"F32", "BF16", "F16"}, "dtype of the output x")};
  d.inputs = {
      {.name = "data", .dtypes = {io::DType::U8}, .shape = "[M, K/2]", .ranks = {2}},
      {.name = "scale", .dtypes = {io::DType::U8}, .shape = "[roundup(M, 128), roundup(K/16, 4)] (compact)", .ranks = {2}},
      {.name = "amax", .dtypes = {io::DType::F32}, .shape = "[1] or [M] (row-scaled)", .ranks = {1}}};
  d.outputs = {{"x", floats, "[M, K] of dtype output_dtype"}};
  d.reference = [](const Case& c) { return reference_dequantize(c); };
  d.metamorphic = dequantize_by_row_slices;
  d.relation = "dequantization is row-local: 16-row slices dequantized separately and concatenated";
  return {q, d};
}

}  // namespace nvfp4::cases
