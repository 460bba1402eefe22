#include "reference/profiles.h"

#include <algorithm>

namespace nvfp4 {
namespace {

using A = AmaxRule;
using GS = GlobalScaleRule;
using BS = BlockScaleRule;
using Z = ZeroBlockRule;
using LO = LowerClamp;
using CAP = CapRule;
using E4 = E4M3Cast;
using ENC = EncodeRule;
using EC = EncodeCap;
using YC = YClamp;
using E2 = E2M1Encoder;
using DQ = DequantRule;
using ZG = ZeroGlobalRule;
using EX = ExportedGlobal;
using CA = CandidateRule;
using RH = RhtSum;

// clang-format off
//  AMAX          GS                BS                     ZERO     LO                    CAP                         E4M3       ENC                      ECAP       YCLAMP        E2M1               DQ                  ZG         EXPORTED  CAND  RHT
constexpr NamedProfile kProfiles[] = {
  {"te",         te_knobs(),  // its knob values: reference/profile.h (the kernels specialise on them)
   "TransformerEngine >= 2.14 kernels (tuned 1D, generic 2D, fallback, unfused RHT); FlashInfer exact path with G = S_enc; torchao NVFP4 training kernels",
   "IGNORE NaN rule of the BF16 block amax (max.xorsign.abs.bf16x2); -0.0 -> 0x8 on hardware"},
  {"te-2.13",    {A::IGNORE,    GS::TE,           BS::A_DIV6_MUL_S,      Z::NONE, LO::NONE,            CAP::FMINF_FLTMAX,         E4::SAT,   ENC::TE,                 EC::FMINF, YC::NONE,     E2::HW,            DQ::TE,             ZG::NONE,  EX::NONE, CA::NONE, RH::EXACT},
   "TransformerEngine v2.10-v2.13: every kernel reachable from the dispatch; the v2.13 PyTorch reference for finite inputs",
   ""},
  {"te-2.13-1d", {A::IGNORE,    GS::TE,           BS::A_MUL_R6_MUL_S,    Z::NONE, LO::NONE,            CAP::NONE,                 E4::SAT,   ENC::S_DIV_SF,           EC::NONE,  YC::NONE,     E2::HW,            DQ::TE,             ZG::NONE,  EX::NONE, CA::NONE, RH::EXACT},
   "TransformerEngine <= 2.13 non-transpose kernel (quantization_SF, __fdiv_rn(S_enc, sf)); scale order of FlashInfer's fast path with G = S; no TE release emits these bits (scale-order coverage)",
   ""},
  {"te-pyref",   {A::PROPAGATE_BF16, GS::TE_PYREF,     BS::A_MUL_SR6,         Z::NONE, LO::NONE,            CAP::TMIN_FLTMAX_CLAMP448, E4::TORCH, ENC::TE,                 EC::TMIN,  YC::TCLAMP6,  E2::TABLE_TE,      DQ::TE,             ZG::NONE,  EX::NONE, CA::NONE, RH::MMA_SM90},
   "TransformerEngine NVFP4QuantizerRef (PyTorch reference, current)",
   "dequantization chain TE"},
  {"torchao",    {A::PROPAGATE, GS::PTS,          BS::A_MUL_R6_DIV_PTS,  Z::NONE, LO::TWO_POW_MINUS_6, CAP::CLAMP,                E4::TORCH, ENC::RECIP_PTS_DIV_SF,   EC::NONE,  YC::TCLAMP6,  E2::TORCHAO_INT,   DQ::PTS,            ZG::NONE,  EX::PTS, CA::NONE, RH::EXACT},
   "torchao v0.17-v0.18 NVFP4Tensor / nvfp4_quantize reference, two-level (with per_tensor_scale), as run on CUDA",
   "NaN codes of the integer E2M1 emulation"},
  {"torchao-1lvl", {A::PROPAGATE, GS::NONE,       BS::A_MUL_R6,          Z::NONE, LO::TWO_POW_MINUS_6, CAP::CLAMP,                E4::TORCH, ENC::RECIP_SF,           EC::NONE,  YC::TCLAMP6,  E2::TORCHAO_INT,   DQ::SF_ONLY,        ZG::NONE,  EX::NONE, CA::NONE, RH::EXACT},
   "torchao v0.18 nvfp4_quantize single-level (no per-tensor scale), as run on CUDA; v0.13-v0.17 divide x by sf instead",
   "NaN codes of the integer E2M1 emulation"},
  {"mslk",       {A::IGNORE,    GS::GS_RECIP_PTS, BS::A_DIV6_MUL_GS,     Z::NONE, LO::TWO_POW_MINUS_16, CAP::FCLAMP,              E4::SAT,   ENC::GS_DIV_SF,          EC::NONE,  YC::NONE,     E2::HW,            DQ::PTS,            ZG::NONE,  EX::NONE, CA::NONE, RH::EXACT},
   "MSLK 1.1.0 Triton triton_quantize_nvfp4 with use_precise_math=True (the torchao >= 0.17 kernel path): lower clamp 2^-16, tl.clamp's NaN -> 2^-16",
   "NaN rule of the caller's global amax (torch.max propagates where the block amax ignores), dequantization chain PTS"},
  {"modelopt",   {A::PROPAGATE, GS::PTS,          BS::A_DIV_6W2,         Z::ONE,  LO::TWO_POW_MINUS_9, CAP::CLAMP,                E4::TORCH, ENC::X_DIV_SF_W2,        EC::NONE,  YC::NONE,     E2::SEARCHSORTED,  DQ::PTS,            ZG::NONE,  EX::PTS, CA::NONE, RH::EXACT},
   "NVIDIA Model Optimizer >= 0.45 export path (NVFP4QTensor.quantize, dynamic block scales), as run on CUDA",
   "NaN rule of the amax (PROPAGATE)"},
  {"miles",      {A::PROPAGATE, GS::TE_PYREF,     BS::A_DIV6_MUL_S,      Z::NONE, LO::NONE,            CAP::CLAMP,                E4::TORCH, ENC::TE,                 EC::NONE,  YC::TCLAMP6,  E2::TABLE_TE,      DQ::PTS,            ZG::MILES, EX::RECIP_S, CA::NONE, RH::EXACT},
   "radixark/miles PR #546 quantizer (landed as #907); gate/up amax sharing and per-expert 3-D weights are the caller's business",
   "consumer-side dequantization with weight_scale_2 = RN(1/S)"},
  {"vllm-emul",  {A::PROPAGATE, GS::G_CALLER,     BS::G_MUL_A_MUL_R6,    Z::NONE, LO::NONE,            CAP::CLAMP,                E4::TORCH, ENC::VLLM_RECIP,         EC::NONE,  YC::TCLAMP6,  E2::VALUE_TABLE,   DQ::SF_DIV_G,       ZG::NONE,  EX::NONE, CA::NONE, RH::EXACT},
   "vLLM ref_nvfp4_quant (PyTorch emulation for non-CUDA platforms) with G = RN(1/RN(g*r2688)) (ModelOpt checkpoint input_scale_inv)",
   "the harness default for the caller-supplied G; codes compared in value space upstream (NaN -> 0x0, -0 -> 0x0 here)"},
  {"compressed-tensors", {A::PROPAGATE, GS::G_CT, BS::A_DIV6_MUL_S,     Z::EPS_F8, LO::NONE,          CAP::CLAMP,                E4::TORCH, ENC::X_DIV_SF_DIV_G,     EC::NONE,  YC::FCLAMP6,  E2::TABLE_TE,      DQ::SF_DIV_G,       ZG::NONE,  EX::G, CA::NONE, RH::EXACT},
   "compressed-tensors 0.20 NVFP4 weights of an F32 model on CUDA (llm-compressor's observer amax, generate_gparam, "
   "calculate_qparams, NVFP4PackedCompressor.compress with its Triton quantize_and_pack_fp4)",
   ""},
  {"compressed-tensors-bf16", {A::PROPAGATE_BF16, GS::G_CT_BF16, BS::A_DIV6_BF16_MUL_S, Z::EPS_F8, LO::NONE, CAP::CLAMP,       E4::TORCH, ENC::X_DIV_SF_DIV_G,     EC::NONE,  YC::FCLAMP6,  E2::TABLE_TE,      DQ::SF_DIV_G,       ZG::NONE,  EX::G, CA::NONE, RH::EXACT},
   "compressed-tensors 0.20 NVFP4 weights of a BF16 model on CUDA: compressed-tensors, with the global scale and A / 6 "
   "computed in the weight's BF16 (what llm-compressor's oneshot exports with it)",
   ""},
  {"compressed-tensors-0.18", {A::PROPAGATE, GS::G_CT, BS::A_DIV6_MUL_S, Z::EPS_F8, LO::NONE,          CAP::CLAMP,                E4::TORCH, ENC::X_DIV_SF_DIV_G,     EC::NONE,  YC::TCLAMP6,  E2::TABLE_TE,      DQ::SF_DIV_G,       ZG::NONE,  EX::G, CA::NONE, RH::EXACT},
   "compressed-tensors 0.15-0.18 NVFP4 weights of an F32 model on CUDA: compressed-tensors, with the codes from quantize() "
   "(torch.clamp, which keeps NaN, then cast_to_fp4) and pack_fp4_to_uint8; 0.19.0 takes the same path (read, not run)",
   ""},
  {"compressed-tensors-bf16-0.18", {A::PROPAGATE_BF16, GS::G_CT_BF16, BS::A_DIV6_BF16_MUL_S, Z::EPS_F8, LO::NONE, CAP::CLAMP,  E4::TORCH, ENC::X_DIV_SF_DIV_G,     EC::NONE,  YC::TCLAMP6,  E2::TABLE_TE,      DQ::SF_DIV_G,       ZG::NONE,  EX::G, CA::NONE, RH::EXACT},
   "compressed-tensors 0.15-0.18 NVFP4 weights of a BF16 model on CUDA: compressed-tensors-bf16, with the codes of "
   "compressed-tensors-0.18",
   ""},
  {"te-4over6-mae", {A::PROPAGATE_BF16, GS::TE_PYREF_256, BS::A_DIV6_MUL_S,    Z::NONE, LO::NONE,            CAP::TMIN_FLTMAX_CLAMP448, E4::TORCH, ENC::TE,                 EC::TMIN,  YC::TCLAMP6,  E2::TABLE_TE,      DQ::SF_AMAX_DIV_1536, ZG::NONE, EX::NONE, CA::FOUR_OVER_SIX_MAE, RH::EXACT},
   "TransformerEngine 2.20 NVFP4QuantizerRef with the 4over6 recipe (nvfp4_4over6, E4M3 bound 256, MAE, exact error path)",
   "dequantization chain SF_AMAX_DIV_1536 (TE's 4over6 error formula; TE dequantizes in its compiled extension)"},
  {"te-4over6-mse", {A::PROPAGATE_BF16, GS::TE_PYREF_256, BS::A_DIV6_MUL_S,    Z::NONE, LO::NONE,            CAP::TMIN_FLTMAX_CLAMP448, E4::TORCH, ENC::TE,                 EC::TMIN,  YC::TCLAMP6,  E2::TABLE_TE,      DQ::SF_AMAX_DIV_1536, ZG::NONE, EX::NONE, CA::FOUR_OVER_SIX_MSE, RH::EXACT},
   "TransformerEngine 2.20 NVFP4QuantizerRef with the 4over6 recipe (nvfp4_4over6, E4M3 bound 256, MSE, exact error path)",
   "dequantization chain SF_AMAX_DIV_1536 (TE's 4over6 error formula; TE dequantizes in its compiled extension)"},
  {"ggml",       {A::IGNORE,    GS::NONE,         BS::A_DIV6_MUL_S,      Z::NONE, LO::NONE,            CAP::NONE,                 E4::GGML,  ENC::ARGMIN,             EC::NONE,  YC::NONE,     E2::HW,            DQ::SF_ONLY_SIGNLESS_ZERO, ZG::NONE, EX::NONE, CA::NONE, RH::EXACT},
   "ggml 0.25.3 (llama.cpp) GGML_TYPE_NVFP4: quantize_row_nvfp4_ref and dequantize_row_nvfp4, single-level, ggml-base "
   "compiled as its CMake does (no FMA contraction)",
   ""},
};
// clang-format on

// One knob: its name, the names of its values in enumerator order (profile.h), and how to
// read and write it in a Profile. A new enumerator needs its name here.
struct Knob {
  std::string_view name;
  std::vector<std::string_view> values;
  int (*get)(const Profile&);
  void (*set)(Profile&, int);
};

#define NVFP4_KNOB(NAME, FIELD, ...)                                                 \
  Knob {                                                                             \
    NAME, {__VA_ARGS__}, [](const Profile& p) { return static_cast<int>(p.FIELD); }, \
        [](Profile& p, int v) { p.FIELD = static_cast<decltype(p.FIELD)>(v); }       \
  }

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> k = {
      NVFP4_KNOB("AMAX", amax, "IGNORE", "PROPAGATE", "PROPAGATE_BF16"),
      NVFP4_KNOB("GS", gs, "TE", "TE_PYREF", "TE_HELPER", "TE_RHT_FUSED", "PTS", "PTS_CPU", "GS_RECIP_PTS", "G_CALLER", "NONE",
                 "G_CT", "G_CT_BF16", "TE_PYREF_256"),
      NVFP4_KNOB("BS", bs, "A_MUL_SR6", "A_DIV6_MUL_S", "A_MUL_R6_MUL_S", "A_MUL_R6_DIV_PTS", "A_MUL_R6", "A_DIV6_MUL_GS",
                 "A_DIV_6W2", "G_MUL_A_MUL_R6", "A_DIV6_BF16_MUL_S"),
      NVFP4_KNOB("ZERO", zero, "NONE", "ONE", "EPS_F8"),
      NVFP4_KNOB("LO", lo, "NONE", "2^-6", "2^-9", "2^-16"),
      NVFP4_KNOB("CAP", cap, "FMINF_FLTMAX", "TMIN_FLTMAX_CLAMP448", "CLAMP", "NONE", "FCLAMP"),
      NVFP4_KNOB("E4M3", e4m3, "SAT", "TORCH", "GGML"),
      NVFP4_KNOB("ENC", enc, "TE", "S_DIV_SF", "RECIP_PTS_DIV_SF", "X_DIV_PTS_SF", "RECIP_SF", "X_DIV_SF", "GS_DIV_SF",
                 "X_DIV_SF_W2", "VLLM_RECIP", "FI_EXACT", "TE_FASTMATH_BF16", "X_DIV_SF_DIV_G", "ARGMIN"),
      NVFP4_KNOB("ECAP", ecap, "FMINF", "TMIN", "NONE"),
      NVFP4_KNOB("YCLAMP", yclamp, "NONE", "TCLAMP6", "FCLAMP6"),
      NVFP4_KNOB("E2M1", e2m1, "HW", "TABLE_TE", "SEARCHSORTED", "TORCHAO_INT", "MLDTYPES", "VALUE_TABLE", "BF16_TORCH"),
      NVFP4_KNOB("DQ", dq, "TE", "PTS", "SF_ONLY", "SF_DIV_G", "SF_MUL_RECIP_S", "SF_AMAX_DIV_1536", "SF_ONLY_SIGNLESS_ZERO"),
      NVFP4_KNOB("ZG", zg, "NONE", "MILES"),
      NVFP4_KNOB("EXPORTED", exported, "NONE", "PTS", "RECIP_S", "G"),
      NVFP4_KNOB("CAND", cand, "NONE", "FOUR_OVER_SIX_MAE", "FOUR_OVER_SIX_MSE"),
      NVFP4_KNOB("RHT", rht, "EXACT", "MMA_SM90"),
  };
  return k;
}

#undef NVFP4_KNOB

}  // namespace

std::span<const NamedProfile> all_profiles() { return kProfiles; }

const NamedProfile* find_profile(std::string_view name) {
  const auto it = std::find_if(std::begin(kProfiles), std::end(kProfiles), [&](const NamedProfile& p) { return p.name == name; });
  return it == std::end(kProfiles) ? nullptr : &*it;
}

const NamedProfile& default_profile() { return kProfiles[0]; }

std::string profile_names(std::string_view separator) {
  std::string out;
  for (const NamedProfile& p : kProfiles) {
    if (!out.empty()) out += separator;
    out += p.name;
  }
  return out;
}

std::vector<std::pair<std::string_view, std::string_view>> knob_values(const Profile& p) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  for (const Knob& k : knobs()) out.emplace_back(k.name, k.values.at(k.get(p)));
  return out;
}

std::vector<std::pair<std::string, Profile>> single_knob_variants(const Profile& p) {
  std::vector<std::pair<std::string, Profile>> out;
  for (const Knob& k : knobs())
    for (int v = 0; v < int(k.values.size()); ++v) {
      if (v == k.get(p)) continue;
      Profile q = p;
      k.set(q, v);
      out.emplace_back(std::string(k.name) + "=" + std::string(k.values[v]), q);
    }
  return out;
}

}  // namespace nvfp4
