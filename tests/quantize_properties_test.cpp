// Property tests of quantization (NUMERICS.md §2.3-§2.4, §3.9-§3.14, §3.21, §4.3), RapidCheck
// with RC_ASSERT only (tests/main.cpp installs the gmock listener, docs/design/toolchain.md). Shapes up to
// 256x256, default 100 cases per property. Generators: fuzz/generators.h.
#include <gtest/gtest.h>

#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include "tests/support/quantize_options.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/generators.h"
#include "reference/amax.h"
#include "reference/dequantize.h"
#include "reference/e2m1.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "reference/scale_layout.h"
#include "reference/transpose.h"

namespace nvfp4 {
namespace {

constexpr std::size_t kMaxDim = 256;

std::uint32_t ubits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float fbits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// "" when equal, else where they first differ (printed by RC_ASSERT on failure).
std::string byte_diff(const ByteMatrix& a, const ByteMatrix& b) {
  std::ostringstream os;
  if (a.shape(0) != b.shape(0) || a.shape(1) != b.shape(1)) {
    os << "shape [" << a.shape(0) << "," << a.shape(1) << "] vs [" << b.shape(0) << "," << b.shape(1) << "]";
    return os.str();
  }
  for (std::size_t r = 0; r < a.shape(0); ++r)
    for (std::size_t c = 0; c < a.shape(1); ++c)
      if (a(r, c) != b(r, c)) {
        os << "(" << r << "," << c << "): 0x" << std::hex << int(a(r, c)) << " vs 0x" << int(b(r, c));
        return os.str();
      }
  return "";
}

// Bitwise, except that any NaN equals any NaN (the contract's only relaxation).
bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || ubits(a) == ubits(b); }

std::string float_diff(const FloatVector& a, const FloatVector& b) {
  std::ostringstream os;
  if (a.size() != b.size()) return "length " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_float(a(i), b(i))) {
      os << "[" << i << "]: 0x" << std::hex << ubits(a(i)) << " vs 0x" << ubits(b(i));
      return os.str();
    }
  return "";
}

std::string float_diff(const FloatMatrix& a, const FloatMatrix& b) {
  std::ostringstream os;
  if (a.shape(0) != b.shape(0) || a.shape(1) != b.shape(1)) return "shape differs";
  for (std::size_t r = 0; r < a.shape(0); ++r)
    for (std::size_t c = 0; c < a.shape(1); ++c)
      if (ubits(a(r, c)) != ubits(b(r, c))) {  // strictly bitwise: no NaN here by construction
        os << "(" << r << "," << c << "): 0x" << std::hex << ubits(a(r, c)) << " vs 0x" << ubits(b(r, c));
        return os.str();
      }
  return "";
}

std::string tensor_diff(const QuantizedTensor& a, const QuantizedTensor& b) {
  if (std::string d = byte_diff(a.data, b.data); !d.empty()) return "data " + d;
  if (std::string d = byte_diff(a.scale, b.scale); !d.empty()) return "scale " + d;
  if (std::string d = float_diff(a.amax, b.amax); !d.empty()) return "amax " + d;
  return "";
}

using test_support::opts;

// A positive finite amax override 2^-40..2^40 with a random mantissa.
rc::Gen<float> positive_amax() {
  return rc::gen::map(rc::gen::tuple(rc::gen::inRange(-40, 41), rc::gen::resize(100, rc::gen::arbitrary<std::uint32_t>())),
                      [](const std::tuple<int, std::uint32_t>& t) {
                        return fbits((std::uint32_t(127 + std::get<0>(t)) << 23) | (std::get<1>(t) & 0x7FFFFFu));
                      });
}

// ---- columnwise == rowwise of the explicit transpose (§3.10, §3.12) --------------------------

RC_GTEST_PROP(QuantizePropertyColumnwise, EqualsRowwiseOfTranspose1D, ()) {
  const auto p = *fuzz::profile();
  const auto d = *fuzz::data_matrix(kMaxDim);
  QuantizeOptions o = opts(p.knobs(), BlockShape::k1D, Direction::kColumnwise);
  if (*rc::gen::arbitrary<bool>()) o.amax = *positive_amax();
  const FloatMatrix xt_ = xt::transpose(d.x);
  QuantizeOptions ot = o;
  ot.direction = Direction::kRowwise;
  const Quantization col = quantize(d.x, o);
  const Quantization ref = quantize(xt_, ot);
  RC_ASSERT(col.columnwise.has_value() && !col.rowwise.has_value());
  RC_ASSERT(tensor_diff(*col.columnwise, *ref.rowwise) == "");
  // kBoth is the two single-direction results side by side.
  QuantizeOptions ob = o, orow = o;
  ob.direction = Direction::kBoth;
  orow.direction = Direction::kRowwise;
  const Quantization both = quantize(d.x, ob);
  RC_ASSERT(tensor_diff(*both.columnwise, *col.columnwise) == "");
  RC_ASSERT(tensor_diff(*both.rowwise, *quantize(d.x, orow).rowwise) == "");
  // Without row scaling amax_col = amax_row (§2.5).
  RC_ASSERT(float_diff(both.columnwise->amax, both.rowwise->amax) == "");
}

RC_GTEST_PROP(QuantizePropertyColumnwise, EqualsRowwiseOfTransposeRowScaled, ()) {
  const auto p = *fuzz::profile();
  const auto d = *fuzz::data_matrix(kMaxDim);
  const FloatMatrix xt_ = xt::transpose(d.x);
  const Quantization both = quantize(d.x, opts(p.knobs(), BlockShape::k1D, Direction::kBoth, true));
  const Quantization col = quantize(d.x, opts(p.knobs(), BlockShape::k1D, Direction::kColumnwise, true));
  const Quantization ref = quantize(xt_, opts(p.knobs(), BlockShape::k1D, Direction::kRowwise, true));
  RC_ASSERT(tensor_diff(*col.columnwise, *ref.rowwise) == "");
  RC_ASSERT(tensor_diff(*both.columnwise, *col.columnwise) == "");
  // amax_col[c] = max_r |x[r][c]| under the profile's NaN rule (§3.3), computed here directly.
  const std::size_t M = d.x.shape(0), K = d.x.shape(1);
  RC_ASSERT(both.columnwise->amax.size() == K);
  RC_ASSERT(both.rowwise->amax.size() == M);
  for (std::size_t c = 0; c < K; ++c) {
    float m = 0.0f;
    bool nan = false;
    for (std::size_t r = 0; r < M; ++r) {
      if (std::isnan(d.x(r, c)))
        nan = true;
      else
        m = std::max(m, std::fabs(d.x(r, c)));
    }
    if (nan && p.knobs().amax != AmaxRule::IGNORE)
      RC_ASSERT(std::isnan(both.columnwise->amax(c)));
    else
      RC_ASSERT(ubits(both.columnwise->amax(c)) == ubits(m));
  }
}

// ---- 2D (§3.11) ----------------------------------------------------------------------------

RC_GTEST_PROP(QuantizeProperty2D, ColumnwiseIsTransposeOfRowwise, ()) {
  const auto p = *fuzz::profile();
  const auto d = *fuzz::data_matrix(kMaxDim);
  QuantizeOptions o = opts(p.knobs(), BlockShape::k2D, Direction::kBoth);
  if (*rc::gen::arbitrary<bool>()) o.amax = *positive_amax();
  const Quantization q = quantize(d.x, o);
  const std::size_t M = d.x.shape(0), K = d.x.shape(1);
  RC_ASSERT(byte_diff(q.columnwise->data, transpose_packed(q.rowwise->data)) == "");
  RC_ASSERT(byte_diff(q.columnwise->scale, transpose_scales_2d(q.rowwise->scale, M, K)) == "");
  RC_ASSERT(float_diff(q.columnwise->amax, q.rowwise->amax) == "");
}

RC_GTEST_PROP(QuantizeProperty2D, ColumnwiseOnlyEqualsColumnwiseHalfOfBoth, ()) {
  const auto p = *fuzz::profile();
  const auto d = *fuzz::data_matrix(kMaxDim);
  QuantizeOptions o = opts(p.knobs(), BlockShape::k2D, Direction::kColumnwise);
  if (*rc::gen::arbitrary<bool>()) o.amax = *positive_amax();
  if (*rc::gen::arbitrary<bool>()) o.scale_layout = ScaleLayout::kSwizzled;
  const Quantization col = quantize(d.x, o);
  o.direction = Direction::kBoth;
  const Quantization both = quantize(d.x, o);
  RC_ASSERT(!col.rowwise.has_value());
  RC_ASSERT(tensor_diff(*col.columnwise, *both.columnwise) == "");
}

// ---- dequantize(quantize(x)) == x on the grid ---------------------------------------------

// §2.2.1 / §2.1.1, written out here (not reference/e4m3.h, e2m1.h).
float f8_ref(std::uint8_t b) {
  const int e = (b >> 3) & 0xF, m = b & 7;
  const double mag = e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
  return float((b & 0x80) ? -mag : mag);
}
constexpr std::array<float, 16> kF4 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                       -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
const float kR2688 = fbits(0x39C30C31u);
const float kFltMax = std::numeric_limits<float>::max();

// Which grid points each profile reproduces exactly, and why the others are excluded:
//  * min_sb: torchao and torchao-1lvl clamp the block scale below at 2^-6 (LO, §4.2.3, §5.10), so
//    a block whose scale byte is < 0x08 is re-encoded with scale 0x08 and loses its codes.
//    Scale byte 0x00 (an all-zero block) is excluded everywhere: zero blocks have their own
//    documented per-profile behaviour (te-2.13-1d turns zeros into 0x7 via 0*inf, §4.3 notes).
//  * neg_zero: TABLE_TE (te-pyref, miles), SEARCHSORTED (modelopt) and VALUE_TABLE (vllm-emul)
//    encode -0.0 as 0x0 (§4.2.6, §6.3), so code 0x8 does not survive the round trip there.
struct RoundTripClass {
  std::string_view name;
  std::uint8_t min_sb;
  bool neg_zero;
};
constexpr RoundTripClass kRoundTrip[] = {
    {"te", 0x01, true},      {"te-2.13", 0x01, true},      {"te-2.13-1d", 0x01, true}, {"te-pyref", 0x01, false},
    {"torchao", 0x08, true}, {"torchao-1lvl", 0x08, true}, {"mslk", 0x01, true},       {"modelopt", 0x01, false},
    {"miles", 0x01, false},  {"vllm-emul", 0x01, false},
};
static_assert(std::size(kRoundTrip) == 10);

// The dequantization factor of the profile's DQ chain (§3.13, §4.3 row DQ), from g and the
// scale byte, written out from the spec: out = RN(f4(q) * factor).
float dq_factor(std::string_view name, std::uint8_t sb, float g) {
  const float sf = f8_ref(sb);
  if (name == "te" || name == "te-2.13" || name == "te-2.13-1d" || name == "te-pyref")
    return (sf * g) * kR2688;                                                               // TE: RN(RN(sf * amax) * r2688)
  if (name == "torchao" || name == "mslk" || name == "modelopt") return (g * kR2688) * sf;  // PTS, pts = RN(g*r2688)
  if (name == "torchao-1lvl") return sf;                                                    // SF_ONLY
  if (name == "miles") {  // PTS with w2 = RN(1/S), S = TE_PYREF(g) (finite g > 0 here)
    float S = std::min(2688.0f / g, kFltMax);
    if (S == 0.0f) S = 1.0f;
    return (1.0f / S) * sf;
  }
  if (name == "vllm-emul") return sf / (1.0f / (g * kR2688));  // SF_DIV_G, G = RN(1/RN(g*r2688))
  return std::numeric_limits<float>::quiet_NaN();
}

// x = RN(f4(code) * factor(sb, g)) with every 1x16 block holding at least one +-6 (so the block
// amax is 6 * factor and te's quantizer picks the same scale byte), g passed as the amax
// override. Then quantize reproduces the scale bytes and codes, and dequantize returns x bitwise.
// g is 2^-40..2^40 so every factor and element is a normal float (no subnormal rounding).
RC_GTEST_PROP(QuantizePropertyRoundTrip, GridValuesDequantizeExactly, ()) {
  const std::size_t ci = *rc::gen::elementOf(std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});  // uniform
  const RoundTripClass& cls = kRoundTrip[ci];
  const NamedProfile* np = find_profile(cls.name);
  RC_ASSERT(np != nullptr);
  RC_TAG(std::string(cls.name));
  const fuzz::Shape s = *fuzz::shape16(128);
  const bool two_d = *rc::gen::arbitrary<bool>();
  const float g = *positive_amax();
  std::mt19937 rng(*fuzz::seed());
  std::uniform_int_distribution<int> sb_dist(cls.min_sb, 0x7E), code_dist(0, 15), pos(0, 15), coin(0, 1);

  const std::size_t M = s.M, K = s.K, nb = K / 16;
  std::vector<std::uint8_t> sb(M * nb);  // per 1x16 block; 2D: equal across a tile's 16 rows
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t j = 0; j < nb; ++j)
      sb[r * nb + j] = (two_d && r % 16) ? sb[(r - r % 16) * nb + j] : std::uint8_t(sb_dist(rng));
  std::vector<std::uint8_t> codes(M * K);
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t j = 0; j < nb; ++j) {
      for (std::size_t i = 0; i < 16; ++i) {
        std::uint8_t c = std::uint8_t(code_dist(rng));
        if (c == 0x8 && !cls.neg_zero) c = 0x0;
        codes[r * K + 16 * j + i] = c;
      }
      codes[r * K + 16 * j + pos(rng)] = coin(rng) ? 0x7 : 0xF;  // block amax = 6 * factor
    }
  FloatMatrix x = xt::zeros<float>({M, K});
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t c = 0; c < K; ++c) x(r, c) = kF4[codes[r * K + c]] * dq_factor(cls.name, sb[r * nb + c / 16], g);

  QuantizeOptions o = opts(np->knobs, two_d ? BlockShape::k2D : BlockShape::k1D, Direction::kRowwise);
  o.amax = g;
  const Quantization q = quantize(x, o);
  const QuantizedTensor& t = *q.rowwise;
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t j = 0; j < nb; ++j) RC_ASSERT(int(t.scale(r, j)) == int(sb[r * nb + j]));
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t b = 0; b < K / 2; ++b)
      RC_ASSERT(int(t.data(r, b)) == int(codes[r * K + 2 * b] | (codes[r * K + 2 * b + 1] << 4)));
  const FloatMatrix back = dequantize(t.data, t.scale, t.amax, np->knobs);
  RC_ASSERT(float_diff(back, x) == "");
}

// ---- swizzle (§2.4.2, §3.21) ----------------------------------------------------------------

// Padded scale shapes of random tensors: R' = roundup(M,128), C' = roundup(K/16,4).
RC_GTEST_PROP(QuantizePropertySwizzle, UnswizzleInvertsSwizzleAndIsTheSpecPermutation, ()) {
  const fuzz::Shape s = *fuzz::shape16(512);
  const std::size_t R = (s.M + 127) / 128 * 128, C = (s.K / 16 + 3) / 4 * 4;
  const ByteMatrix m = fuzz::fill_bytes(R, C, *fuzz::seed());
  const ByteMatrix sw = swizzle_scales(m);
  RC_ASSERT(sw.shape(0) == R && sw.shape(1) == C);
  RC_ASSERT(byte_diff(unswizzle_scales(sw), m) == "");
  RC_ASSERT(byte_diff(swizzle_scales(unswizzle_scales(m)), m) == "");
  // The swizzled buffer is the row-major array [R/128][C/4][32][4][4] indexed
  // [r/128][c/4][r%32][(r%128)/32][c%4]; every offset is hit exactly once.
  std::vector<bool> seen(R * C, false);
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) {
      const std::size_t off = ((((r / 128) * (C / 4) + c / 4) * 32 + r % 32) * 4 + (r % 128) / 32) * 4 + c % 4;
      RC_ASSERT(off < R * C);
      RC_ASSERT(!seen[off]);
      seen[off] = true;
      RC_ASSERT(int(sw.data()[off]) == int(m(r, c)));
    }
}

// ---- nibble transpose (§3.14) ---------------------------------------------------------------

RC_GTEST_PROP(QuantizePropertyTranspose, TransposePackedTwiceIsIdentity, ()) {
  const std::size_t M = 2 * *rc::gen::inRange<std::size_t>(0, 129);  // any even M, 0..256
  const std::size_t Kb = *rc::gen::inRange<std::size_t>(0, 129);     // K = 2*Kb
  const ByteMatrix d = fuzz::fill_bytes(M, Kb, *fuzz::seed());
  const ByteMatrix t = transpose_packed(d);
  RC_ASSERT(t.shape(0) == 2 * Kb && t.shape(1) == M / 2);
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t c = 0; c < 2 * Kb; ++c)  // nibble (r, c) of d is nibble (c, r) of t
      RC_ASSERT(((d(r, c / 2) >> (4 * (c % 2))) & 0xF) == ((t(c, r / 2) >> (4 * (r % 2))) & 0xF));
  RC_ASSERT(byte_diff(transpose_packed(t), d) == "");
}

// ---- profile agreement classes (§4.3 profile notes, §6.20) ----------------------------------

ByteMatrix zero_sign_folded(ByteMatrix d) {  // code 0x8 (-0) -> 0x0 in both nibbles
  for (std::uint8_t& b : d) {
    if ((b & 0x0F) == 0x08) b &= 0xF0;
    if ((b & 0xF0) == 0x80) b &= 0x0F;
  }
  return d;
}

// te and te-pyref agree on finite inputs with g > 0 once -0 codes are folded to +0 (te-pyref's
// TABLE_TE encodes a -0 result as 0x0, §4.3 notes, §6.20).
RC_GTEST_PROP(QuantizePropertyProfiles, TeAndTePyrefAgreeOnFiniteUpToZeroSign, ()) {
  const auto d = *fuzz::data_matrix(kMaxDim, fuzz::DataOptions{.finite = true});
  float g = 0.0f;
  for (float v : d.x) g = std::max(g, std::fabs(v));
  RC_PRE(g > 0.0f);
  const BlockShape b = *rc::gen::arbitrary<bool>() ? BlockShape::k2D : BlockShape::k1D;
  const Quantization a = quantize(d.x, opts(find_profile("te")->knobs, b, Direction::kBoth));
  const Quantization p = quantize(d.x, opts(find_profile("te-pyref")->knobs, b, Direction::kBoth));
  for (auto [qa, qp] : {std::pair{&a.rowwise, &p.rowwise}, std::pair{&a.columnwise, &p.columnwise}}) {
    RC_ASSERT(byte_diff(zero_sign_folded((*qa)->data), zero_sign_folded((*qp)->data)) == "");
    RC_ASSERT(byte_diff((*qa)->scale, (*qp)->scale) == "");
    RC_ASSERT(float_diff((*qa)->amax, (*qp)->amax) == "");
  }
}

// ... and exactly on finite non-negative inputs without -0.0 (row scaling and g = 0 included).
RC_GTEST_PROP(QuantizePropertyProfiles, TeAndTePyrefAgreeExactlyOnNonNegative, ()) {
  const auto d = *fuzz::data_matrix(kMaxDim, fuzz::DataOptions{.finite = true, .non_negative = true});
  const BlockShape b = *rc::gen::arbitrary<bool>() ? BlockShape::k2D : BlockShape::k1D;
  const bool row_scaled = b == BlockShape::k1D && *rc::gen::arbitrary<bool>();
  const Quantization a = quantize(d.x, opts(find_profile("te")->knobs, b, Direction::kBoth, row_scaled));
  const Quantization p = quantize(d.x, opts(find_profile("te-pyref")->knobs, b, Direction::kBoth, row_scaled));
  RC_ASSERT(tensor_diff(*a.rowwise, *p.rowwise) == "");
  RC_ASSERT(tensor_diff(*a.columnwise, *p.columnwise) == "");
}

// §2.1.2 written out here, the HW encoder's definition.
std::uint8_t e2m1_spec(float v) {
  if (std::isnan(v)) return 0x7;
  const std::uint8_t s = std::signbit(v) ? 8 : 0;
  const float a = std::fabs(v);
  const std::uint8_t m = a <= 0.25f   ? 0
                         : a < 0.75f  ? 1
                         : a <= 1.25f ? 2
                         : a < 1.75f  ? 3
                         : a <= 2.5f  ? 4
                         : a < 3.5f   ? 5
                         : a <= 5.0f  ? 6
                                      : 7;
  return s | m;
}

// TORCHAO_INT is bit-identical to HW for finite inputs (§4.2.6); both follow §2.1.2.
RC_GTEST_PROP(QuantizePropertyProfiles, TorchaoIntEncoderEqualsHwOnFinite, ()) {
  const std::uint32_t u = *fuzz::finite_float_bits();
  const float v = fbits(u);
  RC_ASSERT(int(e2m1_encode(E2M1Encoder::TORCHAO_INT, v)) == int(e2m1_encode(E2M1Encoder::HW, v)));
  RC_ASSERT(int(e2m1_encode(E2M1Encoder::HW, v)) == int(e2m1_spec(v)));
}

// The same at tensor level: torchao profiles with E2M1 = HW give the same bytes when every
// scaled element y is finite. A finite x is not enough: for g below ~2^-110, pts = RN(g*r2688)
// underflows (or RN(1/pts)/sf overflows), the encode factor is +inf and a zero element gives
// y = 0*inf = NaN, which TORCHAO_INT maps to garbage (0x4) and HW to 0x7 (§4.2.6). Hence g >= 2^-100.
RC_GTEST_PROP(QuantizePropertyProfiles, TorchaoProfilesUnchangedByHwEncoderOnFinite, ()) {
  const auto name = *rc::gen::element(std::string("torchao"), std::string("torchao-1lvl"));
  const auto d = *fuzz::data_matrix(kMaxDim, fuzz::DataOptions{.finite = true});
  float g = 0.0f;
  for (float v : d.x) g = std::max(g, std::fabs(v));
  RC_PRE(g >= std::ldexp(1.0f, -100));
  Profile hw = find_profile(name)->knobs;
  hw.e2m1 = E2M1Encoder::HW;
  const BlockShape b = *rc::gen::arbitrary<bool>() ? BlockShape::k2D : BlockShape::k1D;
  const Quantization a = quantize(d.x, opts(find_profile(name)->knobs, b, Direction::kBoth));
  const Quantization h = quantize(d.x, opts(hw, b, Direction::kBoth));
  RC_ASSERT(tensor_diff(*a.rowwise, *h.rowwise) == "");
  RC_ASSERT(tensor_diff(*a.columnwise, *h.columnwise) == "");
}

}  // namespace
}  // namespace nvfp4
