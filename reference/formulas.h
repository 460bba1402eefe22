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
    case GlobalScaleRule::TE_PYREF: {
      float S = tmin(div_rn(kFp4TimesFp8Max, g), flt_max());  // torch.min keeps NaN; 0 -> inf -> FLT_MAX
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

// t: the block decode scale before the E4M3 cast, from the block amax A.
NVFP4_HD float block_scale_precast(const Profile& p, const GlobalScale& gs, float A) {
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

NVFP4_HD std::uint8_t e4m3_cast(E4M3Cast variant, float t) { return variant == E4M3Cast::SAT ? e4m3sat(t) : e4m3torch(t); }

// ---- element encoding (§3.7, §3.8, §4.2.5, §4.2.6) -------------------------------------------

// How one block turns x into y: a per-block factor and the operation that applies it.
struct ElementEncoder {
  enum class Op : std::uint8_t {
    MUL,            // y = RN(x * factor)
    DIV,            // y = RN(x / factor)
    MUL_PLUS_ZERO,  // y = RN(x * factor) + 0.0 (turns -0 into +0)
    ALL_ZERO,       // every code 0x0 (miles zero-global rule)
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
  }
  return {};
}

NVFP4_HD ElementEncoder element_encoder(const Profile& p, const GlobalScale& gs, float A, std::uint8_t scale_byte) {
  return element_encoder_of(p, gs, A, e4m3_decode(scale_byte));
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

NVFP4_HD BlockEncoding encode_block(const Profile& p, const GlobalScale& gs, float g, float A) {
  if (p.zg == ZeroGlobalRule::MILES && g == 0.0f) return {0.0f, 0x00, {ElementEncoder::Op::ALL_ZERO, 0.0f}};
  const float t = block_scale_precast(p, gs, A);
  const std::uint8_t sb = block_scale_byte(p, t);
  return {t, sb, element_encoder(p, gs, A, sb)};
}

// ---- dequantization (§3.13) ------------------------------------------------------------------

// The stored second-level scale (the `global_scale` output), when the profile stores one.
NVFP4_HD float exported_global(const Profile& p, const GlobalScale& gs, float g) {
  switch (p.exported) {
    case ExportedGlobal::PTS:
      return gs.pts;
    case ExportedGlobal::RECIP_S:
      return (p.zg == ZeroGlobalRule::MILES && g == 0.0f) ? 1.0f : div_rn(1.0f, gs.S);
    case ExportedGlobal::NONE:
      return 1.0f;
    case ExportedGlobal::G:
      return gs.G;
  }
  return 1.0f;
}

// How one block turns codes into binary32 values: RN(f4 * factor), or for SF_MUL_RECIP_S the
// two roundings RN(RN(f4 * factor) * second).
struct BlockDecoder {
  float factor = 1.0f;
  float second = 1.0f;
  bool two_step = false;
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
      return {sf, div_rn(1.0f, gs.S), true};
  }
  return {};
}

NVFP4_HD BlockDecoder block_decoder(const Profile& p, const GlobalScale& gs, float amax, std::uint8_t scale_byte) {
  return block_decoder_of(p, gs, amax, e4m3_decode(scale_byte));
}

// The binary32 value of one element, before the output dtype's rounding.
// One element from its code's value f4 (kernels compute it as e2m1_decode_by_bits).
NVFP4_HD float decode_value(const BlockDecoder& d, float f4) {
  const float v = mul_rn(f4, d.factor);
  return d.two_step ? mul_rn(v, d.second) : v;
}
NVFP4_HD float decode_element(const BlockDecoder& d, std::uint8_t code) { return decode_value(d, e2m1_decode(code)); }

NVFP4_HD float dequantize_element(const Profile& p, const GlobalScale& gs, float amax, std::uint8_t scale_byte,
                                  std::uint8_t code) {
  return decode_element(block_decoder(p, gs, amax, scale_byte), code);
}

}  // namespace nvfp4
