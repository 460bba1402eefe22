// The per-block NVFP4 algorithm of NUMERICS.md §4.1, one function per formula step, each
// switching on exactly one profile knob. This header is the single place where the arithmetic
// lives: the CPU reference and the CUDA kernels both call it and differ only in how they walk
// the tensor.
#pragma once

#include "reference/e2m1.h"
#include "reference/e4m3.h"
#include "reference/half_float.h"
#include "reference/profile.h"
#include "reference/stochastic_rounding.h"

namespace nvfp4 {

// ---- amax (§3.1, §3.2) -------------------------------------------------------------------

// One step of an amax reduction started at +0. IGNORE is fmaxf(|x|, acc); PROPAGATE (and
// PROPAGATE_BF16, which differs only in how a NaN amax is stored) keeps NaN.
NVFP4_HD float amax_step(AmaxRule rule, float acc, float x) {
#if defined(__CUDA_ARCH__)
  if (rule == AmaxRule::IGNORE) return fmaxf(acc, fabsf(x));  // max.f32 has fmaxf's NaN rule: one instruction
#endif
  const float a = abs_f(x);
  if (rule != AmaxRule::IGNORE && (is_nan(acc) || is_nan(a))) return canonical_nan();
  return fmax_c99(acc, a);
}

// Combining two partial amaxes uses the same NaN rule as adding one element.
NVFP4_HD float amax_combine(AmaxRule rule, float a, float b) { return amax_step(rule, a, b); }

// ---- global scale (§3.5, §4.2.1) ---------------------------------------------------------

// Every quantity a GS rule can define. Rules that do not define a field leave the neutral value
// described per field, so that any knob combination has a meaning.
struct GlobalScale {
  float S = 1.0f;    // encode scale (TE family); RN(1/pts) for the pts family; G for G_CALLER
  float Sd = 1.0f;   // decode scale: RN(1/S) for TE family, pts for the pts family
  float pts = 1.0f;  // per-tensor decode scale (torchao, modelopt, mslk)
  float gs = 1.0f;   // MSLK encode scale RN(1/pts)
  float w2 = 1.0f;   // ModelOpt weight_scale_2 (= pts)
  float G = 1.0f;    // caller encode scale (vLLM, FlashInfer); S for rules that have no G
};

NVFP4_HD GlobalScale global_scale(GlobalScaleRule rule, float g) {
  using namespace constants;
  GlobalScale r;
  switch (rule) {
    case GlobalScaleRule::TE: {
      float S = fmin_c99(div_rn(kFp4TimesFp8Max, g), flt_max());  // fminf: NaN -> FLT_MAX
      if (g == 0.0f || S == 0.0f) S = 1.0f;                       // g = 0 and g = +inf -> 1
      r.S = S;
      break;
    }
    case GlobalScaleRule::TE_PYREF:
    case GlobalScaleRule::TE_PYREF_256: {
      const float bound = rule == GlobalScaleRule::TE_PYREF ? kFp4TimesFp8Max : kFp4Times256;  // 6 * 448 or 6 * 256
      float S = tmin(div_rn(bound, g), flt_max());  // torch.min keeps NaN; 0 -> inf -> FLT_MAX
      if (S == 0.0f) S = 1.0f;
      r.S = S;
      break;
    }
    case GlobalScaleRule::TE_HELPER:  // fmaxf(g, FLT_MIN) keeps subnormal g finite; inf -> 0
      r.S = g > 0.0f ? fmin_c99(div_rn(kFp4TimesFp8Max, fmax_c99(g, flt_min())), flt_max()) : 1.0f;
      break;
    case GlobalScaleRule::TE_RHT_FUSED:  // NaN-propagating min; NaN g fails `g > 0` -> 1
      r.S = g > 0.0f ? tmin(div_rn(kFp4TimesFp8Max, g), flt_max()) : 1.0f;
      break;
    case GlobalScaleRule::PTS:
    case GlobalScaleRule::PTS_CPU:
    case GlobalScaleRule::GS_RECIP_PTS:
      // PyTorch CUDA divides a tensor by a Python scalar as a multiply by its reciprocal.
      r.pts = rule == GlobalScaleRule::PTS_CPU ? div_rn(g, kFp4TimesFp8Max) : mul_rn(g, recip2688());
      r.w2 = r.pts;
      r.gs = div_rn(1.0f, r.pts);
      r.S = r.gs;
      r.G = r.gs;
      r.Sd = r.pts;
      return r;
    case GlobalScaleRule::G_CALLER:
      r.pts = mul_rn(g, recip2688());
      r.G = div_rn(1.0f, r.pts);
      r.S = r.G;
      r.Sd = r.pts;
      return r;
    case GlobalScaleRule::NONE:
      return r;
    case GlobalScaleRule::G_CT:
    case GlobalScaleRule::G_CT_BF16: {
      // 2688.0 / clamp(g, min=FLT_MIN): PyTorch evaluates scalar / tensor as reciprocal() * scalar,
      // each step rounded to the amax's dtype (G_CT_BF16: a BF16 weight's amax stays BF16); NaN
      // stays NaN through the clamp, and a non-finite result becomes 1 (nan_to_num).
      const bool bf16 = rule == GlobalScaleRule::G_CT_BF16;
      const auto in_dtype = [bf16](float v) { return bf16 ? bf16_to_float(float_to_bf16(v)) : v; };
      const float clamped = is_nan(g) || g >= flt_min() ? g : flt_min();
      const float G = in_dtype(mul_rn(in_dtype(div_rn(1.0f, clamped)), kFp4TimesFp8Max));
      r.G = is_nan(G) || abs_f(G) == float_of(0x7F800000u) ? 1.0f : G;
      r.S = r.G;
      return r;
    }
  }
  r.Sd = div_rn(1.0f, r.S);
  r.G = r.S;  // FlashInfer exact equals TE when the caller passes G = S
  return r;
}

// ---- block scale (§3.6, §4.2.2-§4.2.4) -------------------------------------------------------

NVFP4_HD float lower_clamp_value(LowerClamp lo) {
  switch (lo) {
    case LowerClamp::NONE:
      return -constants::kE4M3Max;
    case LowerClamp::TWO_POW_MINUS_6:
      return float_of(constants::kTwoPowMinus6Bits);
    case LowerClamp::TWO_POW_MINUS_9:
      return float_of(constants::kTwoPowMinus9Bits);
    case LowerClamp::TWO_POW_MINUS_16:
      return float_of(constants::kTwoPowMinus16Bits);
  }
  return -constants::kE4M3Max;
}

// t before [knob CAP]: [knob BS], then [knob ZERO]'s ONE.
NVFP4_HD float block_scale_uncapped(const Profile& p, const GlobalScale& gs, float A) {
  using namespace constants;
  float t = 0.0f;
  switch (p.bs) {
    case BlockScaleRule::A_MUL_SR6:
      t = mul_rn(A, mul_rn(gs.S, recip6()));
      break;  // one rounding on A
    case BlockScaleRule::A_DIV6_MUL_S:
      t = mul_rn(div_rn(A, 6.0f), gs.S);
      break;
    case BlockScaleRule::A_MUL_R6_MUL_S:
      t = mul_rn(mul_rn(A, recip6()), gs.S);
      break;
    case BlockScaleRule::A_MUL_R6_DIV_PTS:
      t = div_rn(mul_rn(A, recip6()), gs.pts);
      break;
    case BlockScaleRule::A_MUL_R6:
      t = mul_rn(A, recip6());
      break;
    case BlockScaleRule::A_DIV6_MUL_GS:
      t = mul_rn(div_rn(A, 6.0f), gs.gs);
      break;
    case BlockScaleRule::A_DIV_6W2:
      t = div_rn(A, mul_rn(6.0f, gs.w2));
      break;
    case BlockScaleRule::G_MUL_A_MUL_R6:
      t = mul_rn(gs.G, mul_rn(A, recip6()));
      break;
    case BlockScaleRule::A_DIV6_BF16_MUL_S:
      t = mul_rn(bf16_to_float(float_to_bf16(div_rn(A, 6.0f))), gs.S);
      break;
  }
  if (p.zero == ZeroBlockRule::ONE && t == 0.0f) t = 1.0f;  // modelopt: an all-zero block gets scale 1
  return t;
}

// [knob CAP] on an uncapped block scale t.
NVFP4_HD float cap_block_scale(const Profile& p, float t) {
  using namespace constants;
  switch (p.cap) {
    case CapRule::FMINF_FLTMAX:
      return fmin_c99(t, flt_max());
    case CapRule::TMIN_FLTMAX_CLAMP448:
      return tclamp(tmin(t, flt_max()), -kE4M3Max, kE4M3Max);
    case CapRule::CLAMP:
      return tclamp(t, lower_clamp_value(p.lo), kE4M3Max);
    case CapRule::NONE:
      return t;
    case CapRule::FCLAMP:
      return fmin_c99(fmax_c99(t, lower_clamp_value(p.lo)), kE4M3Max);
  }
  return t;
}

// t: the block decode scale before the E4M3 cast, from the block amax A.
NVFP4_HD float block_scale_precast(const Profile& p, const GlobalScale& gs, float A) {
  return cap_block_scale(p, block_scale_uncapped(p, gs, A));
}

NVFP4_HD std::uint8_t e4m3_cast(E4M3Cast variant, float t) {
  switch (variant) {
    case E4M3Cast::SAT:
      return e4m3sat(t);
    case E4M3Cast::TORCH:
      return e4m3torch(t);
    case E4M3Cast::GGML:
      return e4m3ggml(t);
  }
  return e4m3sat(t);
}

// sf: the value of a stored scale byte under the profile's codec.
NVFP4_HD float scale_value(const Profile& p, std::uint8_t b) {
  return p.e4m3 == E4M3Cast::GGML ? e4m3ggml_decode(b) : e4m3_decode(b);
}

// ---- element encoding (§3.7, §3.8, §4.2.5, §4.2.6) -------------------------------------------

// How one block turns x into y: a per-block factor and the operation that applies it.
struct ElementEncoder {
  enum class Op : std::uint8_t {
    MUL,            // y = RN(x * factor)
    DIV,            // y = RN(x / factor)
    MUL_PLUS_ZERO,  // y = RN(x * factor) + 0.0 (turns -0 into +0)
    ALL_ZERO,       // every code 0x0 (miles zero-global rule)
    ARGMIN,         // the code by e2m1_argmin with sf = factor; y = RN(x / factor) only for traces and SR
  };
  Op op = Op::MUL;
  float factor = 1.0f;
};

NVFP4_HD float encode_cap(EncodeCap cap, float v) {
  switch (cap) {
    case EncodeCap::FMINF:
      return fmin_c99(v, constants::flt_max());
    case EncodeCap::TMIN:
      return tmin(v, constants::flt_max());
    case EncodeCap::NONE:
      return v;
  }
  return v;
}

// The encoder of a block whose decoded scale is sf (f8 of the stored byte; a fault variant may
// hand it another value).
NVFP4_HD ElementEncoder element_encoder_of(const Profile& p, const GlobalScale& gs, float A, float sf) {
  using Op = ElementEncoder::Op;
  using namespace constants;
  switch (p.enc) {
    case EncodeRule::TE:
      return {Op::MUL, encode_cap(p.ecap, div_rn(1.0f, mul_rn(sf, gs.Sd)))};
    case EncodeRule::S_DIV_SF:
      return {Op::MUL, div_rn(gs.S, sf)};
    case EncodeRule::RECIP_PTS_DIV_SF:
      return {Op::MUL, div_rn(div_rn(1.0f, gs.pts), sf)};
    case EncodeRule::X_DIV_PTS_SF:
      return {Op::DIV, mul_rn(gs.pts, sf)};
    case EncodeRule::RECIP_SF:
      return {Op::MUL, div_rn(1.0f, sf)};
    case EncodeRule::X_DIV_SF:
      return {Op::DIV, sf};
    case EncodeRule::GS_DIV_SF:
      return {Op::MUL, div_rn(gs.gs, sf)};
    case EncodeRule::X_DIV_SF_W2:
      return {Op::DIV, mul_rn(sf, gs.w2)};
    case EncodeRule::VLLM_RECIP: {  // get_reciprocal guards zero with 1e8
      const float ig = gs.G == 0.0f ? recip1e8() : div_rn(1.0f, gs.G);
      const float prod = mul_rn(sf, ig);
      return {Op::MUL, prod == 0.0f ? recip1e8() : div_rn(1.0f, prod)};
    }
    case EncodeRule::FI_EXACT:  // gated on the block amax, not on the scale
      return {Op::MUL, A != 0.0f ? fmin_c99(div_rn(1.0f, mul_rn(sf, div_rn(1.0f, gs.G))), flt_max()) : 0.0f};
    case EncodeRule::TE_FASTMATH_BF16:
      return {Op::MUL_PLUS_ZERO, bf16_to_float(float_to_bf16(fmin_c99(div_rn(gs.S, sf), bf16_max())))};
    case EncodeRule::X_DIV_SF_DIV_G:
      return {Op::DIV, div_rn(sf, gs.G)};  // scale / global_scale, then x / scale
    case EncodeRule::ARGMIN:
      return {Op::ARGMIN, sf};
  }
  return {};
}

NVFP4_HD ElementEncoder element_encoder(const Profile& p, const GlobalScale& gs, float A, std::uint8_t scale_byte) {
  return element_encoder_of(p, gs, A, scale_value(p, scale_byte));
}

// ENC = ARGMIN, ggml's best_index_mxfp4: the first code c in 0..15 whose value RN(f4(c) * sf) is
// nearest x by |RN(v - x)| compared with `<`. A tie keeps the smaller code, the smaller magnitude;
// NaN and infinite x give 0x0, as do -0.0 and small negatives (code 0x8's value is code 0x0's).
NVFP4_HD std::uint8_t e2m1_argmin(float sf, float x) {
  std::uint8_t best = 0;
  float best_error = abs_f(add_rn(mul_rn(e2m1_decode(0), sf), -x));
  for (std::uint8_t c = 1; c < 16; ++c) {
    const float error = abs_f(add_rn(mul_rn(e2m1_decode(c), sf), -x));
    if (error < best_error) best = c, best_error = error;
  }
  return best;
}

// y: the scaled element handed to the E2M1 encoder (after the profile's y clamp).
NVFP4_HD float scale_element(const Profile& p, const ElementEncoder& e, float x) {
  using Op = ElementEncoder::Op;
  float y = 0.0f;
  switch (e.op) {
    case Op::MUL:
      y = mul_rn(x, e.factor);
      break;
    case Op::DIV:
      y = div_rn(x, e.factor);
      break;
    case Op::MUL_PLUS_ZERO:
      y = add_rn(mul_rn(x, e.factor), 0.0f);
      break;
    case Op::ALL_ZERO:
      return 0.0f;
    case Op::ARGMIN:
      y = div_rn(x, e.factor);
      break;
  }
  switch (p.yclamp) {
    case YClamp::NONE:
      return y;
    case YClamp::TCLAMP6:
      return tclamp(y, -constants::kE2M1Max, constants::kE2M1Max);
    case YClamp::FCLAMP6:  // the upper bound first: NaN -> +6, as measured
      return fmax_c99(fmin_c99(y, constants::kE2M1Max), -constants::kE2M1Max);
  }
  return y;
}

NVFP4_HD std::uint8_t encode_element(const Profile& p, const ElementEncoder& e, float x) {
  if (e.op == ElementEncoder::Op::ALL_ZERO) return 0x0;
  if (e.op == ElementEncoder::Op::ARGMIN) return e2m1_argmin(e.factor, x);
  return e2m1_encode(p.e2m1, scale_element(p, e, x));
}

// Under stochastic rounding (§3.18) only the final E2M1 rounding changes: y is the RN path's,
// and the profile's E2M1 encoder is replaced by TE's SR element function.
NVFP4_HD std::uint8_t encode_element_sr(const Profile& p, const ElementEncoder& e, float x, std::uint8_t r8) {
  if (e.op == ElementEncoder::Op::ALL_ZERO) return 0x0;
  return sr_e2m1(scale_element(p, e, x), r8);
}

// ---- one block: from (g, A) to its scale byte and element encoder (§4.1) ---------------------

struct BlockEncoding {
  float precast;  // t after ZERO and CAP, the value handed to the E4M3 cast
  std::uint8_t scale_byte;
  ElementEncoder encoder;
};

// [knob ZERO] after the E4M3 cast: EPS_F8 stores a zero scale as E4M3's eps.
NVFP4_HD std::uint8_t zero_rule_after_cast(const Profile& p, std::uint8_t sb) {
  if (p.zero == ZeroBlockRule::EPS_F8 && (sb & 0x7F) == 0) return 0x20;  // compressed-tensors: scale == 0 -> 0.125
  return sb;
}

// The stored scale byte of a block from its precast value t.
NVFP4_HD std::uint8_t block_scale_byte(const Profile& p, float t) { return zero_rule_after_cast(p, e4m3_cast(p.e4m3, t)); }

NVFP4_HD BlockEncoding encode_block_from_precast(const Profile& p, const GlobalScale& gs, float A, float t) {
  const std::uint8_t sb = block_scale_byte(p, t);
  return {t, sb, element_encoder(p, gs, A, sb)};
}

// [knob ZG]: the miles zero-global rule's block, every code 0x0 and scale 0x00, when it applies.
NVFP4_HD bool zero_global_block(const Profile& p, float g) { return p.zg == ZeroGlobalRule::MILES && g == 0.0f; }
NVFP4_HD BlockEncoding zero_global_encoding() { return {0.0f, 0x00, {ElementEncoder::Op::ALL_ZERO, 0.0f}}; }

NVFP4_HD BlockEncoding encode_block(const Profile& p, const GlobalScale& gs, float g, float A) {
  if (zero_global_block(p, g)) return zero_global_encoding();
  return encode_block_from_precast(p, gs, A, block_scale_precast(p, gs, A));
}

// ---- scale candidates ([knob CAND], §4.2.7) --------------------------------------------------

// The map-to-4 candidate of TE's 4over6 recipe: the block's uncapped scale times 1.5, then capped
// (encode_block is the map-to-6 candidate); under the zero-global rule both are its block.
NVFP4_HD BlockEncoding encode_block_map4(const Profile& p, const GlobalScale& gs, float g, float A) {
  if (zero_global_block(p, g)) return zero_global_encoding();
  return encode_block_from_precast(p, gs, A, cap_block_scale(p, mul_rn(block_scale_uncapped(p, gs, A), 1.5f)));
}

// A candidate's error after one more element: its decoded value dq against x, d = RN(dq - x); MAE
// adds |d|, MSE adds RN(d * d), each sum rounded (TE accumulates element by element in binary32).
NVFP4_HD float candidate_error_step(CandidateRule rule, float acc, float dq, float x) {
  const float d = add_rn(dq, -x);
  return add_rn(acc, rule == CandidateRule::FOUR_OVER_SIX_MSE ? mul_rn(d, d) : abs_f(d));
}

// A 16x16 tile's error from its 16 rows' (or columns') errors, in the order of TE's warp
// reduction: rows i and i + 8, then i and i + 4, i and i + 2, and the last pair.
NVFP4_HD float tile_error(const float (&part)[16]) {
  float e[8];
  for (int i = 0; i < 8; ++i) e[i] = add_rn(part[i], part[i + 8]);
  for (int w = 4; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) e[i] = add_rn(e[i], e[i + w]);
  return e[0];
}

// Whether map-to-4 replaces map-to-6: only a strictly smaller error (a tie or a NaN keeps map-to-6).
NVFP4_HD bool prefer_map4(float error_map4, float error_map6) { return error_map4 < error_map6; }

// ---- dequantization (§3.13) ------------------------------------------------------------------

// The stored second-level scale (the `global_scale` output), when the profile stores one.
NVFP4_HD float exported_global(const Profile& p, const GlobalScale& gs, float g) {
  switch (p.exported) {
    case ExportedGlobal::PTS:
      return gs.pts;
    case ExportedGlobal::RECIP_S:
      return zero_global_block(p, g) ? 1.0f : div_rn(1.0f, gs.S);
    case ExportedGlobal::NONE:
      return 1.0f;
    case ExportedGlobal::G:
      return gs.G;
  }
  return 1.0f;
}

// How one block turns codes into binary32 values: v = RN(f4 * factor), then by its chain.
struct BlockDecoder {
  enum class Chain : std::uint8_t {
    ONE,            // v
    TIMES,          // RN(v * second)
    TIMES_DIV,      // RN(RN(v * second) / divisor)
    SIGNLESS_ZERO,  // v, with the code value -0 taken as +0 (a negative code under a zero scale stays -0)
  };
  float factor = 1.0f;
  float second = 1.0f;
  float divisor = 1.0f;
  Chain chain = Chain::ONE;
};

// The decoder of a block whose decoded scale is sf (f8 of the stored byte; a fault variant may
// decode it otherwise).
NVFP4_HD BlockDecoder block_decoder_of(const Profile& p, const GlobalScale& gs, float amax, float sf) {
  using namespace constants;
  switch (p.dq) {
    case DequantRule::TE:
      return {mul_rn(mul_rn(sf, amax), recip2688())};  // amax * RN(1/2688), not S_dec
    // Sd is pts for the pts family and RN(1/S) (miles' weight_scale_2) for TE_PYREF.
    case DequantRule::PTS:
      return {mul_rn(gs.Sd, sf)};
    case DequantRule::SF_ONLY:
      return {sf};
    case DequantRule::SF_DIV_G:
      return {div_rn(sf, gs.G)};
    case DequantRule::SF_MUL_RECIP_S:
      return {sf, div_rn(1.0f, gs.S), 1.0f, BlockDecoder::Chain::TIMES};
    case DequantRule::SF_AMAX_DIV_1536:
      return {sf, amax, kFp4Times256, BlockDecoder::Chain::TIMES_DIV};
    case DequantRule::SF_ONLY_SIGNLESS_ZERO:
      return {sf, 1.0f, 1.0f, BlockDecoder::Chain::SIGNLESS_ZERO};
  }
  return {};
}

NVFP4_HD BlockDecoder block_decoder(const Profile& p, const GlobalScale& gs, float amax, std::uint8_t scale_byte) {
  return block_decoder_of(p, gs, amax, scale_value(p, scale_byte));
}

// The binary32 value of one element, before the output dtype's rounding.
// One element from its code's value f4 (kernels compute it as e2m1_decode_by_bits).
NVFP4_HD float decode_value(const BlockDecoder& d, float f4) {
  const float v = mul_rn(d.chain == BlockDecoder::Chain::SIGNLESS_ZERO && f4 == 0.0f ? 0.0f : f4, d.factor);
  switch (d.chain) {
    case BlockDecoder::Chain::ONE:
      return v;
    case BlockDecoder::Chain::TIMES:
      return mul_rn(v, d.second);
    case BlockDecoder::Chain::TIMES_DIV:
      return div_rn(mul_rn(v, d.second), d.divisor);
    case BlockDecoder::Chain::SIGNLESS_ZERO:
      return v;
  }
  return v;
}
NVFP4_HD float decode_element(const BlockDecoder& d, std::uint8_t code) { return decode_value(d, e2m1_decode(code)); }

// A candidate block's error ([knob CAND]): its 16 codes code(i) decoded by d, against the elements
// x(i), in element order.
template <class Code, class Value>
NVFP4_HD float candidate_error(CandidateRule rule, const BlockDecoder& d, Code code, Value x) {
  float e = 0.0f;
  for (int i = 0; i < 16; ++i) e = candidate_error_step(rule, e, decode_element(d, code(i)), x(i));
  return e;
}

NVFP4_HD float dequantize_element(const Profile& p, const GlobalScale& gs, float amax, std::uint8_t scale_byte,
                                  std::uint8_t code) {
  return decode_element(block_decoder(p, gs, amax, scale_byte), code);
}

}  // namespace nvfp4
