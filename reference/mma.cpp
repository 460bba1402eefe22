#include "reference/mma.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "reference/arith.h"

namespace nvfp4 {
namespace {

// MMA-Sim 2.1.1 gives tcgen05.mma (sm_100) and mma.sync (sm_120) one arithmetic for this kind:
// MMA_GST_FDPA(G = 16, F = 35, rho = RZ-FP32, L_max = 64, e_zero = -139). Two rows, so that a
// user names the GPU they compare with, and a later model of either changes one row.
constexpr std::array<MmaModel, 2> kModels = {{
    {GemmAccumulation::MMA_SM100, "mma-sm100", "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 (m128nNk64, ue4m3)",
     64, 35, -139},
    {GemmAccumulation::MMA_SM120, "mma-sm120", "mma.sync.aligned.m16n8k64.kind::mxf4nvf4.block_scale.scale_vec::4X (ue4m3)", 64,
     35, -139},
}};
// The adder's sum stays in 64 bits: group terms below 2^(19 + F - 8), c's below 2^(24 + F - 23).
static_assert(kModels[0].fraction_bits <= 40 && kModels[1].fraction_bits <= 40, "64-bit fused sum");

constexpr int kGroup = 16;         // one NVFP4 block per scale pair
constexpr int kGroupFraction = 8;  // a group term's significand is N / 2^8 (below)
constexpr int kBinary32Fraction = 23;

// A UE4M3 scale byte as the model normalises it: significand m/8 (m < 16) and exponent e, with
// subnormals at e = -6 (MMA-Sim's frexp_and_normalize). Bit 7 is not read: the scale is unsigned.
struct Ue4m3 {
  int m = 0, e = 0;
  bool nan = false;
};
Ue4m3 ue4m3(std::uint8_t byte) {
  const int b = byte & 0x7F, e = b >> 3, m = b & 7;
  if (b == 0x7F) return {0, 0, true};
  return e == 0 ? Ue4m3{m, -6} : Ue4m3{8 + m, e - 7};
}

// trunc(n · 2^shift): toward zero, as the adder drops the bits below its F fraction bits.
std::int64_t truncated(std::int64_t n, int shift) {
  if (shift >= 0) return n << shift;  // the callers keep this below 2^62
  if (shift <= -63) return 0;
  const std::int64_t m = (n < 0 ? -n : n) >> -shift;
  return n < 0 ? -m : m;
}

// s · 2^exponent rounded toward zero to binary32, gradual underflow, ±inf past the largest
// finite value (MMA-Sim's RZ-FP32 normalisation); an exact or truncated zero is +0.0.
float round_toward_zero(std::int64_t s, int exponent) {
  if (s == 0) return 0.0f;
  const std::uint32_t sign = s < 0 ? 0x80000000u : 0u;
  const std::uint64_t u = s < 0 ? std::uint64_t(0) - std::uint64_t(s) : std::uint64_t(s);
  const int msb = 63 - std::countl_zero(u);
  const int e = msb + exponent;  // u · 2^exponent lies in [2^e, 2^(e+1))
  if (e > 127) return float_of(sign | 0x7F800000u);
  std::uint64_t bits;
  if (e >= -126) {
    const std::uint64_t m = msb > 23 ? u >> (msb - 23) : u << (23 - msb);
    bits = (std::uint64_t(e + 127) << 23) | (m & 0x7FFFFFu);
  } else {
    const int shift = exponent + 149;  // to units of 2^-149
    bits = shift >= 0 ? u << shift : (-shift >= 64 ? 0 : u >> -shift);
    if (bits == 0) return 0.0f;
  }
  return float_of(sign | std::uint32_t(bits));
}

}  // namespace

float fused_sum_toward_zero(const FusedTerm* terms, std::size_t count, int fraction_bits) {
  int e_max = terms[0].e;
  for (std::size_t i = 1; i < count; ++i) e_max = std::max(e_max, terms[i].e);
  std::int64_t sum = 0;  // units of 2^(e_max - F)
  for (std::size_t i = 0; i < count; ++i) sum += truncated(terms[i].n, terms[i].e - e_max + fraction_bits - terms[i].fraction);
  return round_toward_zero(sum, e_max - fraction_bits);
}

const std::vector<MmaModel>& mma_models() {
  static const std::vector<MmaModel> models(kModels.begin(), kModels.end());
  return models;
}

const MmaModel& mma_model(GemmAccumulation mode) {
  for (const MmaModel& m : kModels)
    if (m.mode == mode) return m;
  throw std::logic_error("mma_model: EXACT has no instruction model");
}

std::optional<GemmAccumulation> accumulation_of(std::string_view name) {
  if (name == "exact") return GemmAccumulation::EXACT;
  for (const MmaModel& m : kModels)
    if (m.name == name) return m.mode;
  return std::nullopt;
}

std::string_view accumulation_name(GemmAccumulation mode) {
  return mode == GemmAccumulation::EXACT ? std::string_view("exact") : mma_model(mode).name;
}

float mma_fused_dot_add(const MmaModel& model, float c, const std::int8_t* twice_a, const std::int8_t* twice_b,
                        const std::uint8_t* sa, const std::uint8_t* sb, int groups) {
  constexpr int kMaxGroups = 16;
  if (groups < 1 || groups > model.chunk / kGroup || groups > kMaxGroups)
    throw std::invalid_argument("mma_fused_dot_add: groups outside [1, chunk/16]");
  std::array<FusedTerm, kMaxGroups + 1> terms;
  bool nan = is_nan(c);
  for (int g = 0; g < groups; ++g) {
    const Ue4m3 x = ue4m3(sa[g]), y = ue4m3(sb[g]);
    nan |= x.nan || y.nan;
    std::int64_t p = 0;  // Σ (2a)(2b): four times the exact group sum, |p| ≤ 2304
    bool any_product = false;
    for (int i = 0; i < kGroup; ++i) {
      const int q = twice_a[kGroup * g + i] * twice_b[kGroup * g + i];
      p += q;
      any_product |= q != 0;
    }
    // The group's term: (p/4)·(x.m/8)·(y.m/8) · 2^(x.e + y.e). A group whose products are all zero,
    // or whose scales multiply to zero, takes the zero exponent; a sum that cancels to zero does not.
    const bool zero = !any_product || x.m * y.m == 0;
    terms[std::size_t(g)] = {p * x.m * y.m, zero ? model.zero_exponent : x.e + y.e, kGroupFraction};
  }
  if (nan) return canonical_nan();
  if (std::isinf(c)) return c;  // the group terms are finite
  // c as m · 2^(e - 23), normalised like the scales (subnormals at e = -126); a zero takes e_zero.
  const std::uint32_t cb = bits_of(c);
  const int biased = int(cb >> 23) & 0xFF;
  const std::int64_t cm = std::int64_t(biased ? (cb & 0x7FFFFFu) | 0x800000u : cb & 0x7FFFFFu);
  const int ce = cm == 0 ? model.zero_exponent : biased ? biased - 127 : -126;
  terms[std::size_t(groups)] = {sign_bit(c) ? -cm : cm, ce, kBinary32Fraction};

  // Group terms stay below 2^(19 + F - 8) after the shift, c's below 2^(24 + F - 23).
  return fused_sum_toward_zero(terms.data(), std::size_t(groups) + 1, model.fraction_bits);
}

}  // namespace nvfp4
