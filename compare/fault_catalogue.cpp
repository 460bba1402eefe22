#include "compare/fault_catalogue.h"

#include <algorithm>

#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "io/tensor_convert.h"
#include "reference/fault_steps.h"
#include "reference/gemm.h"
#include "reference/scale_layout.h"

namespace nvfp4::compare {
namespace {

using cases::Case;
using cases::TensorMap;

// ---- what a case exercises ----

bool is_quantize(const Case& c) { return c.op == "quantize"; }
bool nearest(const Case& c) { return is_quantize(c) && c.params.text("rounding") == "nearest"; }
bool stochastic(const Case& c) { return is_quantize(c) && c.params.text("rounding") == "stochastic"; }
bool swizzled(const Case& c) { return c.params.has("scale_layout") && c.params.text("scale_layout") == "swizzled"; }
bool with_rht(const Case& c) { return is_quantize(c) && c.params.flag("rht") && c.params.text("direction") != "rowwise"; }
bool row_scaled(const Case& c) { return c.params.has("row_scaled") && c.params.flag("row_scaled"); }
bool quantize_op(const Case& c) { return is_quantize(c); }
bool dequantize_op(const Case& c) { return c.op == "dequantize"; }
bool gemm_op(const Case& c) { return c.op == "gemm"; }
bool master_weights_op(const Case& c) { return c.op == "cast_master_weights"; }

// ---- changes to a variant ----

// The knobs of the case's profile with one changed: the patterns that are a knob value.
template <auto Field, auto Value>
void knob(Variant& v) {
  Profile p = cases::case_profile(v.c);
  p.*Field = Value;
  v.c.knobs = p;
}
template <auto Field, auto Value>
bool knob_differs(const Case& c) {
  return cases::case_profile(c).*Field != Value;
}

void set_f32(Case& c, const char* name, float v) { c.params.set(name, cases::F32Bits{bits_of(v)}); }

io::Tensor map_bytes(const io::Tensor& t, ByteMatrix (*f)(const ByteMatrix&)) {
  return io::from_byte_matrix(f(io::to_byte_matrix(t, "fault", "scale")));
}

// Swizzled scales as the kernel reads them with the plain-row formula, laid out again as specified.
ByteMatrix reread_plain_rows(const ByteMatrix& s) { return swizzle_scales(faults::unswizzle_scales_plain_rows(s)); }
ByteMatrix reswizzle_plain_rows(const ByteMatrix& s) { return faults::swizzle_scales_plain_rows(unswizzle_scales(s)); }
ByteMatrix per_32_swizzled(const ByteMatrix& s) { return swizzle_scales(faults::scales_per_32(unswizzle_scales(s))); }

void each_output(TensorMap& out, std::initializer_list<const char*> names, ByteMatrix (*f)(const ByteMatrix&)) {
  for (const char* n : names)
    if (out.count(n)) out[n] = map_bytes(out.at(n), f);
}

// ---- the patterns' functions ----

float case_alpha(const Case& c) {
  if (const auto a = c.params.f32("alpha")) return *a;
  return gemm_alpha(1.0f, io::to_float_vector(c.inputs.at("a_amax"), "fault", "a_amax")(0),
                    io::to_float_vector(c.inputs.at("b_amax"), "fault", "b_amax")(0));
}
bool per_tensor_gemm(const Case& c) { return gemm_op(c) && !row_scaled(c); }
bool gemm_alpha_from_amaxes(const Case& c) { return per_tensor_gemm(c) && !c.params.f32("alpha"); }

void nibble_swap(Variant& v) {
  if (is_quantize(v.c)) {
    v.outputs.push_back([](const Case&, TensorMap& out) { each_output(out, {"data", "data_t"}, faults::swap_nibbles); });
    return;
  }
  // dequantize reads its data swapped; a GEMM the weight's (B): with both operands swapped every
  // block's sum is the same.
  const char* name = gemm_op(v.c) ? "b_data" : "data";
  v.c.inputs[name] = map_bytes(v.c.inputs.at(name), faults::swap_nibbles);
}

// e4m3-subnormal-as-normal in a GEMM: an operand whose scales the faulty decoder reads otherwise
// (one with a byte of exponent field 0) runs exactly on bytes of twice the faulty values, which
// E4M3 holds below 256 ((8 + m) * 2^-10 doubled is byte 0x08 | m, a normal byte doubled is the
// next exponent), and alpha is halved for it: the products alpha * S are the faulty kernel's.
std::uint8_t doubled_faulty_scale(std::uint8_t b) {
  if ((b & 0x7F) == 0x7F) return b;                                         // NaN
  if ((b & 0x78) == 0) return std::uint8_t((b & 0x80) | 0x08 | (b & 0x7));  // exponent field 0, zero included
  return std::uint8_t(b + 8);
}
struct ScaleBytesRead {
  bool exponent_zero = false;  // the faulty decoder reads some byte otherwise
  bool doubles = true;         // every byte is below 256 or NaN
};
ScaleBytesRead scale_bytes_read(const Case& c, const char* data, const char* scale) {
  ScaleBytesRead out;
  const ByteMatrix s = io::to_byte_matrix(c.inputs.at(scale), "fault", scale);
  if (s.shape(0) % 128 || s.shape(1) % 4) return {false, false};  // the reference rejects it
  const ByteMatrix compact = swizzled(c) ? unswizzle_scales(s) : s;
  const auto& d = c.inputs.at(data).shape;
  for (std::size_t r = 0; r < std::min<std::size_t>(std::size_t(d.at(0)), compact.shape(0)); ++r)
    for (std::size_t j = 0; j < std::min<std::size_t>(std::size_t(d.at(1)) / 8, compact.shape(1)); ++j) {
      const std::uint8_t b = compact(r, j);
      out.exponent_zero |= (b & 0x78) == 0;
      out.doubles &= (b & 0x78) != 0x78 || (b & 0x7F) == 0x7F;
    }
  return out;
}
constexpr std::pair<const char*, const char*> kGemmOperands[] = {{"a_data", "a_scale"}, {"b_data", "b_scale"}};
bool gemm_scales_double(const Case& c) {
  if (!per_tensor_gemm(c)) return false;
  bool any = false;
  for (const auto& [data, scale] : kGemmOperands) {
    const ScaleBytesRead s = scale_bytes_read(c, data, scale);
    if (s.exponent_zero && !s.doubles) return false;
    any |= s.exponent_zero;
  }
  return any;
}
void subnormal_as_normal(Variant& v) {
  if (dequantize_op(v.c)) {
    v.dequantize.scale_decode = faults::e4m3_decode_subnormal_as_normal;
    return;
  }
  float alpha = case_alpha(v.c);
  for (const auto& [data, scale] : kGemmOperands) {
    if (!scale_bytes_read(v.c, data, scale).exponent_zero) continue;
    alpha /= 2.0f;  // exact: a power of two
    for (std::uint8_t& b : v.c.inputs[scale].bytes) b = doubled_faulty_scale(b);
  }
  set_f32(v.c, "alpha", alpha);
}

void swizzle_row_order(Variant& v) {
  if (v.c.op == "swizzle") {
    v.outputs.push_back(
        [](const Case& c, TensorMap& out) { out["scale"] = map_bytes(c.inputs.at("scale"), faults::swizzle_scales_plain_rows); });
  } else if (v.c.op == "unswizzle") {
    v.outputs.push_back([](const Case& c, TensorMap& out) {
      out["scale"] = map_bytes(c.inputs.at("scale"), faults::unswizzle_scales_plain_rows);
    });
  } else if (gemm_op(v.c)) {
    for (const char* n : {"a_scale", "b_scale"}) v.c.inputs[n] = map_bytes(v.c.inputs.at(n), reread_plain_rows);
  } else {
    v.outputs.push_back([](const Case&, TensorMap& out) { each_output(out, {"scale", "scale_t"}, reswizzle_plain_rows); });
  }
}

void layout_swap(Variant& v) {
  if (gemm_op(v.c)) {  // the bytes read as the other layout
    v.c.params.set("scale_layout", std::string(swizzled(v.c) ? "compact" : "swizzled"));
    return;
  }
  if (swizzled(v.c))
    v.outputs.push_back([](const Case&, TensorMap& out) { each_output(out, {"scale", "scale_t"}, unswizzle_scales); });
  else
    v.outputs.push_back([](const Case&, TensorMap& out) { each_output(out, {"scale", "scale_t"}, swizzle_scales); });
}

// The scale tensors cut to the data's rows.
void unpadded_rows(Variant& v) {
  v.outputs.push_back([](const Case&, TensorMap& out) {
    for (const auto& [scale, data] : {std::pair{"scale", "data"}, std::pair{"scale_t", "data_t"}}) {
      if (!out.count(scale)) continue;
      io::Tensor& s = out[scale];
      s.shape[0] = out.at(data).shape[0];
      s.bytes.resize(std::size_t(s.shape[0] * s.shape[1]));
    }
  });
}

void tile_amax_1x16(Variant& v) { v.c.params.set("block", std::string("1d")); }

// Row-scaled outputs computed with the tensor's amax, stored once per row (and per column).
void row_amax_global(Variant& v) {
  v.c.params.set("row_scaled", false);
  v.outputs.push_back([](const Case& c, TensorMap& out) {
    const io::Tensor& x = c.inputs.at("x");
    for (const auto& [name, n] : {std::pair{"amax", x.shape[0]}, std::pair{"amax_t", x.shape[1]}})
      if (out.count(name)) {
        FloatVector a = xt::empty<float>({std::size_t(n)});
        a.fill(io::to_float_vector(out.at(name), "fault", name)(0));
        out[name] = io::from_float_vector(a);
      }
    out.erase("global_scale");  // a row-scaled quantization exports none
  });
}

void reverse_mask(Variant& v) {
  v.c.params.set("rht_mask", std::uint64_t(faults::reverse_mask_bits(cases::rht_mask_param(v.c))));
}
bool mask_not_palindrome(const Case& c) {
  if (c.op != "rht" && !with_rht(c)) return false;
  const std::uint16_t m = cases::rht_mask_param(c);
  return faults::reverse_mask_bits(m) != m;
}

void missing_norm(Variant& v) {
  if (is_quantize(v.c)) {
    v.quantize.rht = faults::rht_without_norm;
    return;
  }
  FloatMatrix x = io::to_float_matrix(v.c.inputs.at("x"), "fault", "x");
  for (float& e : x) e = mul_rn(e, 4.0f);  // the rht of 4x is the sum without 1/4 (exact below 2^126)
  v.c.inputs["x"] = io::from_float_matrix(x, io::FloatType::BF16);
}

void scales_per_32(Variant& v) {
  for (const char* n : {"a_scale", "b_scale"})
    v.c.inputs[n] = map_bytes(v.c.inputs.at(n), swizzled(v.c) ? per_32_swizzled : faults::scales_per_32);
}

// ---- detectors ----

bool only_kind(const Explanation& x, MismatchKind k) {
  return !x.kind_counts.empty() &&
         std::all_of(x.kind_counts.begin(), x.kind_counts.end(), [&](const auto& kn) { return kn.first == k; });
}
bool only_root(const Explanation& x, std::initializer_list<MismatchKind> ks) {
  return !x.root_kinds.empty() && std::all_of(x.root_kinds.begin(), x.root_kinds.end(),
                                              [&](MismatchKind k) { return std::find(ks.begin(), ks.end(), k) != ks.end(); });
}

#define VARIANT(body) [](Variant& v) { body; }

constexpr FaultPattern kPatterns[] = {
    {"e2m1-ties-away",
     "E2M1 ties rounded away from zero instead of to even",
     "ROCm aiter #3992",
     "quantize",
     {},
     nearest,
     VARIANT(v.quantize.e2m1 = faults::e2m1_ties_away),
     nullptr},
    {"e2m1-toward-zero",
     "E2M1 rounding toward zero instead of to nearest",
     "tilelang #1580",
     "quantize",
     {},
     nearest,
     VARIANT(v.quantize.e2m1 = faults::e2m1_toward_zero),
     nullptr},
    {"e2m1-no-saturation",
     "E2M1 encoder without saturation: |y| > 6 encodes as zero",
     "threshold-table encoders",
     "quantize",
     {},
     nearest,
     VARIANT(v.quantize.e2m1 = faults::e2m1_no_saturation),
     nullptr},
    {"e4m3-ties-up",
     "block scale's E4M3 ties rounded up instead of to even",
     "hand-written E4M3 casts",
     "quantize",
     {},
     quantize_op,
     VARIANT(v.quantize.e4m3_cast = faults::e4m3_ties_up),
     nullptr},
    {"e4m3-overflow-nan", "block scale above 464 cast to NaN (0x7F) instead of saturating to 448 (E4M3=TORCH)",
     "ModelOpt <= 0.44", "quantize", "E4M3=TORCH",
     [](const Case& c) { return is_quantize(c) && knob_differs<&Profile::e4m3, E4M3Cast::TORCH>(c); },
     knob<&Profile::e4m3, E4M3Cast::TORCH>, nullptr},
    {"e4m3-subnormal-as-normal",
     "subnormal E4M3 scales decoded as if normal",
     "FlashInfer #3932",
     "dequantize, gemm",
     {},
     [](const Case& c) { return dequantize_op(c) || gemm_scales_double(c); },
     subnormal_as_normal,
     nullptr},
    {"amax-signed-max",
     "global amax taken as max(x) instead of max(|x|)",
     "TensorRT-LLM #6523",
     "quantize",
     {},
     [](const Case& c) { return is_quantize(c) && !c.params.f32("amax"); },
     VARIANT(v.quantize.amax_step = faults::amax_signed_step),
     nullptr},
    {"gs-no-zero-guard",
     "global scale without its guard for amax 0",
     "TE PyTorch reference",
     "quantize",
     {},
     [](const Case& c) { return is_quantize(c) && cases::case_profile(c).gs == GlobalScaleRule::TE; },
     VARIANT(v.quantize.global_scale = faults::global_scale_no_zero_guard),
     nullptr},
    {"gs-reciprocal",
     "encode and decode global scales exchanged (amax/2688 read as 2688/amax)",
     "modular #6600, vLLM #55643",
     "quantize",
     {},
     [](const Case& c) { return is_quantize(c) && cases::case_profile(c).gs != GlobalScaleRule::NONE; },
     VARIANT(v.quantize.global_scale = faults::global_scale_reciprocal),
     nullptr},
    {"dq-senc-for-sdec",
     "dequantize multiplies by the encode scale S_enc where S_dec belongs",
     "checkpoint loaders",
     "dequantize",
     {},
     dequantize_op,
     VARIANT(v.dequantize.encode_scale = true),
     nullptr},
    {"dq-drops-global", "dequantize leaves out the global scale (DQ=SF_ONLY)", "single-level dequantizers", "dequantize",
     "DQ=SF_ONLY", [](const Case& c) { return dequantize_op(c) && knob_differs<&Profile::dq, DequantRule::SF_ONLY>(c); },
     knob<&Profile::dq, DequantRule::SF_ONLY>, nullptr},
    {"enc-unrounded-scale",
     "codes encoded with the unrounded FP32 block scale instead of the E4M3 one",
     "FBGEMM #4884",
     "quantize",
     {},
     quantize_op,
     VARIANT(v.quantize.encode_from_precast = true),
     nullptr},
    {"enc-s-div-sf", "encode factor S/sf instead of 1/(sf*S_dec) (ENC=S_DIV_SF)", "TransformerEngine #2639", "quantize",
     "ENC=S_DIV_SF", [](const Case& c) { return is_quantize(c) && knob_differs<&Profile::enc, EncodeRule::S_DIV_SF>(c); },
     knob<&Profile::enc, EncodeRule::S_DIV_SF>, nullptr},
    {"nibble-order-swapped",
     "the odd element in the low nibble",
     "torchao #2939, sglang #23625",
     "quantize, dequantize, gemm",
     {},
     [](const Case& c) { return is_quantize(c) || dequantize_op(c) || gemm_op(c); },
     nibble_swap,
     nullptr},
    {"swizzle-row-order",
     "128x4 scale swizzle with the rows of a tile in plain order",
     "nvFuser #4745",
     "quantize, gemm, swizzle, unswizzle",
     {},
     [](const Case& c) { return c.op == "swizzle" || c.op == "unswizzle" || ((is_quantize(c) || gemm_op(c)) && swizzled(c)); },
     swizzle_row_order,
     nullptr},
    {"scale-layout-swapped",
     "scales in the other layout (compact where swizzled belongs, or the reverse)",
     "exporters and loaders",
     "quantize, gemm",
     {},
     [](const Case& c) { return is_quantize(c) || gemm_op(c); },
     layout_swap,
     nullptr},
    {"scale-padding-unzeroed",
     "padding entries of the scale tensor left unzeroed",
     "vLLM #45741",
     "quantize",
     {},
     quantize_op,
     nullptr,
     [](const Case&, const Explanation& x) { return only_kind(x, MismatchKind::kPadding); }},
    {"scale-rows-unpadded",
     "scale tensor not padded to a multiple of 128 rows",
     "kernels sizing scales by the data",
     "quantize",
     {},
     [](const Case& c) { return is_quantize(c) && !swizzled(c); },
     unpadded_rows,
     nullptr},
    {"tile-amax-1x16",
     "2D (16x16) quantization with 1x16 block amaxes",
     "2D recipes on 1D kernels",
     "quantize",
     {},
     [](const Case& c) { return is_quantize(c) && c.params.text("block") == "2d"; },
     tile_amax_1x16,
     nullptr},
    {"block-amax-span-32",
     "block amax over 32 elements instead of 16",
     "MXFP4 code reused for NVFP4",
     "quantize",
     {},
     quantize_op,
     VARIANT(v.quantize.block_amax = faults::block_amax_span_32),
     nullptr},
    {"row-amax-global",
     "row-scaled quantization with the tensor's amax in every row",
     "row-scaled paths",
     "quantize",
     {},
     [](const Case& c) { return is_quantize(c) && row_scaled(c); },
     row_amax_global,
     nullptr},
    {"rht-fp32-output",
     "RHT output kept in FP32 instead of rounded to BF16 before quantization",
     "TE fused RHT cast",
     "quantize",
     {},
     with_rht,
     VARIANT(v.quantize.rht = faults::rht_binary32),
     nullptr},
    {"rht-mask-bit-order",
     "RHT sign mask read with its bit order reversed",
     "sign vectors packed MSB first",
     "rht, quantize",
     {},
     mask_not_palindrome,
     reverse_mask,
     nullptr},
    {"rht-missing-norm",
     "RHT without its 1/4 normalisation",
     "Hadamard kernels",
     "rht, quantize",
     {},
     [](const Case& c) { return c.op == "rht" || with_rht(c); },
     missing_norm,
     nullptr},
    {"sr-bits-reused-blocks",
     "stochastic rounding reuses block 0's random bits in every block",
     "unadvanced Philox streams",
     "quantize",
     {},
     stochastic,
     VARIANT(v.quantize.sr_reuse_block_bits = true),
     nullptr},
    {"sr-bits-reused-copies",
     "stochastic rounding reuses the rowwise copy's random bits for the columnwise copy",
     "one generator state for both copies",
     "quantize",
     {},
     [](const Case& c) { return stochastic(c) && c.params.text("direction") != "rowwise"; },
     VARIANT(v.quantize.sr_reuse_copy_bits = true),
     nullptr},
    {"gemm-scale-per-32",
     "GEMM applies each scale to 32 elements instead of 16",
     "MXFP4 scale indexing",
     "gemm",
     {},
     gemm_op,
     scales_per_32,
     nullptr},
    {"gemm-alpha-missing",
     "GEMM without the global scales' product (alpha)",
     "GEMM wrappers",
     "gemm",
     {},
     gemm_alpha_from_amaxes,
     VARIANT(set_f32(v.c, "alpha", 1.0f)),
     nullptr},
    {"gemm-alpha-inverted",
     "GEMM alpha applied as its reciprocal",
     "per-tensor scale stored inverted",
     "gemm",
     {},
     per_tensor_gemm,
     VARIANT(set_f32(v.c, "alpha", div_rn(1.0f, case_alpha(v.c)))),
     nullptr},
    {"partial-cast-shard-shift",
     "a rank starting at an odd element writes its element pairs one byte low (§5.1)",
     "TransformerEngine nvfp4_2d_partial_cast_kernel",
     "cast_master_weights",
     {},
     master_weights_op,
     nullptr,
     [](const Case&, const Explanation& x) {
       return only_root(x, {MismatchKind::kShardByteShift, MismatchKind::kShiftOrSharedNibble});
     }},
    {"partial-cast-shared-nibble",
     "a byte shared by two ranks keeps one rank's nibble (§5.3)",
     "TransformerEngine byte all-gather",
     "cast_master_weights",
     {},
     master_weights_op,
     nullptr,
     [](const Case&, const Explanation& x) {
       return only_root(x, {MismatchKind::kSharedByteNibble, MismatchKind::kShiftOrSharedNibble});
     }},
    {"fused-scale-row-pitch",
     "expanded rowwise scales written at row pitch K/16 (§5.2)",
     "TransformerEngine nvfp4_fused_scale_kernel",
     "cast_master_weights",
     {},
     master_weights_op,
     nullptr,
     [](const Case&, const Explanation& x) { return only_root(x, {MismatchKind::kScaleRowPitch}); }},
};

#undef VARIANT

}  // namespace

std::span<const FaultPattern> fault_patterns() { return kPatterns; }

const FaultPattern* find_fault_pattern(std::string_view name) {
  for (const FaultPattern& p : kPatterns)
    if (p.name == name) return &p;
  return nullptr;
}

TensorMap run_variant(const Variant& v, const Case& original) {
  TensorMap out = v.c.op == "quantize"     ? cases::reference_quantize(v.c, v.quantize)
                  : v.c.op == "dequantize" ? cases::reference_dequantize(v.c, v.dequantize)
                                           : cases::ReferenceBackend().run(v.c);
  for (const auto& f : v.outputs) f(original, out);
  return out;
}

}  // namespace nvfp4::compare
