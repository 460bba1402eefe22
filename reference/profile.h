// A numerics profile is a record of knob values (NUMERICS.md §4.2): data, not code. Every
// formula of the per-block algorithm (§4.1) switches on one knob, in reference/formulas.h.
// Enumerator names are the knob values' names in NUMERICS.md, so a reader can grep for them.
#pragma once

#include <cstdint>

#include "reference/e2m1.h"

namespace nvfp4 {

enum class AmaxRule : std::uint8_t {  // [knob AMAX] §3.1
  IGNORE,                             // NaN elements do not contribute (fmaxf semantics)
  PROPAGATE,                          // any NaN makes the amax NaN (torch.amax)
  PROPAGATE_BF16,                     // PROPAGATE, reduced in BF16 for a BF16 input: a NaN amax is stored as 0x7FFF0000
};

enum class GlobalScaleRule : std::uint8_t {  // [knob GS] §4.2.1
  TE,                                        // S = fminf(RN(2688/g), FLT_MAX); g == 0 || S == 0 -> 1
  TE_PYREF,                                  // S = tmin(RN(2688/g), FLT_MAX); S == 0 -> 1 (no g == 0 test)
  TE_HELPER,                                 // S = g > 0 ? fminf(RN(2688/fmaxf(g, FLT_MIN)), FLT_MAX) : 1
  TE_RHT_FUSED,                              // S = g > 0 ? nanmin(RN(2688/g), FLT_MAX) : 1
  PTS,                                       // pts = RN(g * r2688) (PyTorch CUDA `g / 2688.0`), w2 = pts
  PTS_CPU,                                   // pts = RN(g / 2688) (PyTorch CPU true division)
  GS_RECIP_PTS,                              // pts as PTS, gs = RN(1/pts)
  G_CALLER,                                  // G = RN(1/RN(g * r2688)) (vLLM with a ModelOpt checkpoint)
  NONE,                                      // single-level: no global scale
  G_CT,          // G = RN(RN(1/max(g, FLT_MIN)) * 2688), non-finite -> 1 (compressed-tensors generate_gparam)
  G_CT_BF16,     // G_CT computed in BF16: G = RNbf16(RNbf16(1/max(g, FLT_MIN)) * 2688), non-finite -> 1
  TE_PYREF_256,  // TE_PYREF under the global E4M3 bound 256 (TE's 4over6): S = tmin(RN(1536/g), FLT_MAX); S == 0 -> 1
};

enum class BlockScaleRule : std::uint8_t {  // [knob BS] §4.2.2: pre-cast block scale t
  A_MUL_SR6,                                // RN(A * RN(S * r6))
  A_DIV6_MUL_S,                             // RN(RN(A / 6) * S)
  A_MUL_R6_MUL_S,                           // RN(RN(A * r6) * S)
  A_MUL_R6_DIV_PTS,                         // RN(RN(A * r6) / pts)
  A_MUL_R6,                                 // RN(A * r6)
  A_DIV6_MUL_GS,                            // RN(RN(A / 6) * gs)
  A_DIV_6W2,                                // RN(A / RN(6 * w2))
  G_MUL_A_MUL_R6,                           // RN(G * RN(A * r6))
  A_DIV6_BF16_MUL_S,                        // RN(RNbf16(RN(A / 6)) * S): A / 6 in BF16, then an F32 product
};

// [knob ZERO] §4.2.3: ONE: t == 0 -> 1 before the cast; EPS_F8: a stored scale of 0 (either
// sign) -> 0x20 (0.125, the eps compressed-tensors substitutes) after the cast.
enum class ZeroBlockRule : std::uint8_t { NONE, ONE, EPS_F8 };

enum class LowerClamp : std::uint8_t {  // [knob LO] §4.2.3, used by CAP = CLAMP
  NONE,
  TWO_POW_MINUS_6,
  TWO_POW_MINUS_9,
  TWO_POW_MINUS_16,
};

enum class CapRule : std::uint8_t {  // [knob CAP] §4.2.3
  FMINF_FLTMAX,                      // fminf(t, FLT_MAX): NaN -> FLT_MAX
  TMIN_FLTMAX_CLAMP448,              // tclamp(tmin(t, FLT_MAX), -448, 448): NaN stays NaN
  CLAMP,                             // tclamp(t, LO, 448), LO = -448 when LO = NONE
  NONE,
  FCLAMP,  // fminf(fmaxf(t, LO), 448): NaN -> LO (Triton tl.clamp, max.f32/min.f32)
};

// [knob E4M3] §2.2: the scale byte's codec. SAT and TORCH cast to E4M3 and decode it as f8;
// GGML is ggml's unsigned UE4M3 (§2.2.4): its cast e4m3ggml and its decoder e4m3ggml_decode.
enum class E4M3Cast : std::uint8_t { SAT, TORCH, GGML };

enum class EncodeRule : std::uint8_t {  // [knob ENC] §4.2.5: y from x
  TE,                                   // RN(x * cap(RN(1 / RN(sf * Sd))))
  S_DIV_SF,                             // RN(x * RN(S / sf))
  RECIP_PTS_DIV_SF,                     // RN(x * RN(RN(1 / pts) / sf))
  X_DIV_PTS_SF,                         // RN(x / RN(pts * sf))
  RECIP_SF,                             // RN(x * RN(1 / sf))
  X_DIV_SF,                             // RN(x / sf)
  GS_DIV_SF,                            // RN(x * RN(gs / sf))
  X_DIV_SF_W2,                          // RN(x / RN(sf * w2))
  VLLM_RECIP,                           // vLLM get_reciprocal chain, 1e8 guards
  FI_EXACT,                             // FlashInfer exact: A != 0 ? fminf(RN(1/RN(sf*RN(1/G))), FLT_MAX) : 0
  TE_FASTMATH_BF16,                     // RN(x * RNbf16(fminf(RN(S/sf), BF16_MAX))) + 0
  X_DIV_SF_DIV_G,                       // RN(x / RN(sf / G)) (compressed-tensors)
  ARGMIN,                               // the first code c minimising |RN(RN(f4(c) * sf) - x)| (ggml); [knob E2M1] unused
};

enum class EncodeCap : std::uint8_t { FMINF, TMIN, NONE };  // [knob ECAP], TE chain only

// [knob YCLAMP]: TCLAMP6 = tclamp(y, -6, 6) (torch.clamp keeps NaN); FCLAMP6 = fmaxf(fminf(y, 6), -6)
// (compressed-tensors' Triton tl.clamp on an H200: NaN -> +6).
enum class YClamp : std::uint8_t { NONE, TCLAMP6, FCLAMP6 };

enum class DequantRule : std::uint8_t {  // [knob DQ] §3.13
  TE,                                    // RN(f4 * RN(RN(sf * amax) * r2688))
  PTS,                                   // RN(f4 * RN(pts * sf)), pts = the stored second-level decode scale
  SF_ONLY,                               // RN(f4 * sf)
  SF_DIV_G,                              // RN(f4 * RN(sf / G))
  SF_MUL_RECIP_S,                        // RN(RN(f4 * sf) * RN(1 / S))
  SF_AMAX_DIV_1536,                      // RN(RN(RN(f4 * sf) * amax) / 1536) (TE 4over6: the E4M3 bound 256)
  SF_ONLY_SIGNLESS_ZERO,                 // RN(f4 * sf) with code 0x8 as +0 (ggml's integer E2M1 values have no -0)
};

// [knob CAND] §4.2.7: which scale candidates a block (1x16) or tile (16x16) chooses from.
// FOUR_OVER_SIX_*: TE's 4over6 recipe. The map-to-6 candidate is the profile's block; the map-to-4
// one has the precast scale RN(t * 1.5) before [knob CAP]. Each is encoded, its error summed over
// the elements in order (a tile: its rows' errors summed in TE's warp-reduction tree), and map-to-4
// is kept only when its error is strictly smaller (ties and NaN keep map-to-6). The error of one
// element is d = RN(dq - x), dq its value under [knob DQ]: MAE adds |d|, MSE adds RN(d * d).
enum class CandidateRule : std::uint8_t { NONE, FOUR_OVER_SIX_MAE, FOUR_OVER_SIX_MSE };

// [knob RHT] §3.19: how the 16-term sums of the Hadamard transform are rounded to binary32.
// EXACT: the exact sum rounded to nearest (the canonical definition). MMA_SM90: as one BF16
// tensor-core instruction with a zero accumulator sums them on sm_90 (also sm_100 and sm_120):
// MMA-Sim's fused adder with 25 fraction bits, rounded toward zero (a framework's `x @ H` in BF16).
enum class RhtSum : std::uint8_t { EXACT, MMA_SM90 };

enum class ZeroGlobalRule : std::uint8_t { NONE, MILES };  // [knob ZG]: g == 0 -> all zero

enum class ExportedGlobal : std::uint8_t {  // the second-level scale a framework stores
  NONE,                                     // only the amax (te*) or nothing (single-level)
  PTS,                                      // torchao per_tensor_scale, ModelOpt weight_scale_2 = pts
  RECIP_S,                                  // miles weight_scale_2 = RN(1/S) (1.0 when g == 0)
  G,                                        // compressed-tensors weight_global_scale = G, the encode scale
};

struct Profile {
  AmaxRule amax;
  GlobalScaleRule gs;
  BlockScaleRule bs;
  ZeroBlockRule zero;
  LowerClamp lo;
  CapRule cap;
  E4M3Cast e4m3;
  EncodeRule enc;
  EncodeCap ecap;
  YClamp yclamp;
  E2M1Encoder e2m1;
  DequantRule dq;
  ZeroGlobalRule zg;
  ExportedGlobal exported;
  CandidateRule cand;
  RhtSum rht;
};

// The knobs of profile `te`, the default: its row in profiles.cpp, and the kernels' specialisation
// (with these values constant, every knob switch of the formulas folds away).
NVFP4_HD constexpr Profile te_knobs() {
  return {AmaxRule::IGNORE,     GlobalScaleRule::TE,  BlockScaleRule::A_MUL_SR6,
          ZeroBlockRule::NONE,  LowerClamp::NONE,     CapRule::FMINF_FLTMAX,
          E4M3Cast::SAT,        EncodeRule::TE,       EncodeCap::FMINF,
          YClamp::NONE,         E2M1Encoder::HW,      DequantRule::TE,
          ZeroGlobalRule::NONE, ExportedGlobal::NONE, CandidateRule::NONE,
          RhtSum::EXACT};
}

// Every knob is one byte: a new knob changes the size, and must be compared here too.
static_assert(sizeof(Profile) == 16, "a new knob: compare it in same_knobs");
NVFP4_HD constexpr bool same_knobs(const Profile& a, const Profile& b) {
  return a.amax == b.amax && a.gs == b.gs && a.bs == b.bs && a.zero == b.zero && a.lo == b.lo && a.cap == b.cap &&
         a.e4m3 == b.e4m3 && a.enc == b.enc && a.ecap == b.ecap && a.yclamp == b.yclamp && a.e2m1 == b.e2m1 && a.dq == b.dq &&
         a.zg == b.zg && a.exported == b.exported && a.cand == b.cand && a.rht == b.rht;
}

}  // namespace nvfp4
