#include "reference/hadamard.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <boost/multiprecision/cpp_int.hpp>

#include "reference/arith.h"
#include "reference/error.h"
#include "reference/half_float.h"
#include "reference/mma.h"

namespace nvfp4 {
namespace {

using Fixed = boost::multiprecision::int512_t;  // the exact sum, in units of 2^-135

// When the nonzero inputs' grid exponents (below) span at most this many binades, every product is
// an integer multiple of the smallest input's unit below 2^(8 + 48), and 16 of them sum exactly in
// an int64: the common case, far quicker than the 512-bit sum that any span needs.
constexpr int kInt64Span = 48;

// Every product s * H * 0.25 * x of a finite BF16 x is an integer multiple of 2^-135 (the BF16
// subnormal step 2^-133 times 0.25) below 2^126 in magnitude: 16 of them sum exactly in 265 bits.
constexpr int kFixedLsbExponent = -135;

// The BF16 exponent field with subnormals counted as 1: a value of field E is a multiple of the
// product unit 2^(E - 136) (its 8-bit significand times 2^(E - 134), times 0.25).
int grid_exponent(float x) { return std::max(int((bits_of(x) >> 23) & 0xFFu), 1); }
std::int64_t significand(float x) {
  const std::uint32_t b = bits_of(x) >> 16, e = (b >> 7) & 0xFFu, f = b & 0x7Fu;
  return e == 0 ? f : (f | 0x80u);
}

// |x| / 2^-135 for a finite BF16 value x: its significand times 2^(E - 136) in units of 2^-135.
Fixed fixed_magnitude(float x) { return Fixed(significand(x)) << (grid_exponent(x) - 1); }

// RN(N * 2^-135) to a format with `precision` significant bits whose subnormal step is
// 2^(min_shift - 135), ties to even; overflow gives infinity. binary32: (24, 0), every N below 2^24
// is exact (binary32's subnormal step 2^-149 divides 2^-135). BF16: (8, 2), its step is 2^-133.
float round_fixed(const Fixed& n, int precision, int min_shift) {
  if (n == 0) return 0.0f;
  const bool negative = n < 0;
  Fixed mag = negative ? Fixed(-n) : n;
  const int shift = std::max(int(boost::multiprecision::msb(mag)) - (precision - 1), min_shift);
  if (shift > 0) {
    const Fixed rest = mag & ((Fixed(1) << shift) - 1), half = Fixed(1) << (shift - 1);
    mag >>= shift;
    if (rest > half || (rest == half && boost::multiprecision::bit_test(mag, 0))) mag += 1;
  }
  const float v = std::ldexp(float(mag.convert_to<std::uint32_t>()), shift + kFixedLsbExponent);  // exact, or inf
  return negative ? -v : v;
}

// H16[k][n] * s_k: the sign of input k's product in output n.
bool negative_coefficient(unsigned k, unsigned n, std::uint16_t mask) {
  return ((std::popcount(k & n) & 1) != 0) != (((mask >> k) & 1u) != 0);
}

float to_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }  // RNE, NaN kept a NaN

// The sign of an exact-zero sum: -0.0 only when every product is -0.0, as the IEEE sum of the 16
// products gives in any order.
float zero_sum(const std::array<float, 16>& x, std::uint16_t mask, unsigned n) {
  bool all_negative_zero = true;
  for (unsigned k = 0; k < 16; ++k)
    all_negative_zero = all_negative_zero && x[k] == 0.0f && negative_coefficient(k, n, mask) != sign_bit(x[k]);
  return all_negative_zero ? -0.0f : 0.0f;
}

// The IEEE value of output n's sum when an input is NaN or infinite: NaN for a NaN or for +inf and
// -inf together, else the infinity; nullopt when every input is finite.
std::optional<float> nonfinite_sum(const std::array<float, 16>& x, std::uint16_t mask, unsigned n) {
  bool plus_inf = false, minus_inf = false;
  for (unsigned k = 0; k < 16; ++k) {
    if (is_nan(x[k])) return canonical_nan();
    if (std::isinf(x[k])) (negative_coefficient(k, n, mask) != sign_bit(x[k]) ? minus_inf : plus_inf) = true;
  }
  if (plus_inf && minus_inf) return canonical_nan();
  if (plus_inf || minus_inf) return plus_inf ? INFINITY : -INFINITY;
  return std::nullopt;
}

// Output n's sum: N * 2^-135 exactly, or its IEEE value where that is NaN, infinite or an exact
// zero (whose sign IEEE fixes: -0.0 only when every product is -0.0).
struct ExactSum {
  Fixed n = 0;
  std::optional<float> ieee;
};

// `magnitude[k]` = |x[k]| in units of 2^-135 (finite x[k]), computed once for the 16 outputs.
ExactSum exact_sum(const std::array<float, 16>& x, const std::array<Fixed, 16>& magnitude, std::uint16_t mask, unsigned n) {
  ExactSum s;
  s.ieee = nonfinite_sum(x, mask, n);
  if (s.ieee) return s;
  for (unsigned k = 0; k < 16; ++k) {
    const bool negative = negative_coefficient(k, n, mask) != sign_bit(x[k]);  // the product's sign
    if (x[k] != 0.0f) negative ? s.n -= magnitude[k] : s.n += magnitude[k];
  }
  if (s.n == 0) s.ieee = zero_sum(x, mask, n);
  return s;
}

// [knob RHT] MMA_SM90: MMA-Sim 2.1.1's model of a BF16 MMA with an F32 accumulator on sm_90
// (mma.sync m16n8k16, wgmma k16; its sm_100 and sm_120 models are the same): one fused dot-add of
// the 16 products and the accumulator with 25 fraction bits, rounded toward zero.
constexpr int kMmaFractionBits = 25;
constexpr int kMmaZeroExponent = -999;  // MMA-Sim's exponent of a zero operand, below every other
constexpr int kBf16Fraction = 7;

// Output n with MMA_SM90. Product k is x[k] times the BF16 coefficient +-0.25, which MMA-Sim
// normalises as the significand m / 2^7 (m: the 8-bit significand, the implicit bit included) at
// the exponent (G - 127) + (-2), G the grid exponent (subnormals at G = 1); the accumulator, +0.0,
// is a zero term and adds nothing.
// Every shifted term is below 2^(8 + 25 - 7).
float mma_sum(const std::array<float, 16>& x, std::uint16_t mask, unsigned n) {
  if (const std::optional<float> special = nonfinite_sum(x, mask, n)) return *special;
  std::array<FusedTerm, 16> terms;
  for (unsigned k = 0; k < 16; ++k) {
    const bool negative = negative_coefficient(k, n, mask) != sign_bit(x[k]);
    terms[k] = x[k] == 0.0f
                   ? FusedTerm{0, kMmaZeroExponent, kBf16Fraction}
                   : FusedTerm{negative ? -significand(x[k]) : significand(x[k]), grid_exponent(x[k]) - 129, kBf16Fraction};
  }
  return fused_sum_toward_zero(terms.data(), terms.size(), kMmaFractionBits);
}

// rht16 when every input is finite and their grids span at most kInt64Span binades: the exact sums
// in units of 2^(lo - 136). float(int64) rounds once to binary32 (correctly, to nearest even), and
// the scaling by a power of two is exact: a sum below 2^-126 is a multiple of 2^-135 with at most
// 9 significant bits, and an overflow gives infinity as RN does.
std::array<float, 16> rht16_int64(const std::array<float, 16>& x, std::uint16_t mask, int lo) {
  std::array<std::int64_t, 16> product;  // |x[k]| / 4 in units of 2^(lo - 136), signed by x[k]
  for (unsigned k = 0; k < 16; ++k) {
    const std::int64_t m = x[k] == 0.0f ? 0 : significand(x[k]) << (grid_exponent(x[k]) - lo);
    product[k] = sign_bit(x[k]) ? -m : m;
  }
  std::array<float, 16> y;
  for (unsigned n = 0; n < 16; ++n) {
    std::int64_t sum = 0;
    for (unsigned k = 0; k < 16; ++k) sum += negative_coefficient(k, n, mask) ? -product[k] : product[k];
    const float s = sum == 0 ? zero_sum(x, mask, n) : std::ldexp(static_cast<float>(sum), lo - 136);
    y[n] = to_bf16(s);
  }
  return y;
}

std::array<Fixed, 16> magnitudes(const std::array<float, 16>& x) {
  std::array<Fixed, 16> m;
  for (unsigned k = 0; k < 16; ++k)
    if (std::isfinite(x[k])) m[k] = fixed_magnitude(x[k]);
  return m;
}

float to_binary32(const ExactSum& s) { return s.ieee ? *s.ieee : round_fixed(s.n, 24, 0); }

// N * 2^-135 as an exact hexadecimal float: 0x1.<fraction>p<exponent>.
std::string hex_text(const Fixed& n) {
  Fixed mag = n < 0 ? Fixed(-n) : n;
  const int top = int(boost::multiprecision::msb(mag));
  const int digits = (top + 3) / 4;
  const Fixed fraction = (mag - (Fixed(1) << top)) << (4 * digits - top);
  std::string f = digits ? fraction.str(0, std::ios_base::hex) : "";
  f.insert(0, std::size_t(digits) - f.size(), '0');
  while (!f.empty() && f.back() == '0') f.pop_back();
  return fmt::format("{}0x1{}{}p{}", n < 0 ? "-" : "", f.empty() ? "" : ".", f, top + kFixedLsbExponent);
}

}  // namespace

std::optional<RhtSum> rht_sum_of(std::string_view name) {
  if (name == "exact") return RhtSum::EXACT;
  if (name == "mma-sm90") return RhtSum::MMA_SM90;
  return std::nullopt;
}

std::string_view rht_sum_name(RhtSum sum) { return sum == RhtSum::EXACT ? "exact" : "mma-sm90"; }

std::array<float, 16> rht16(const std::array<float, 16>& x, std::uint16_t mask, RhtSum sum) {
  std::array<float, 16> y;
  if (sum == RhtSum::MMA_SM90) {
    for (unsigned n = 0; n < 16; ++n) y[n] = to_bf16(mma_sum(x, mask, n));
    return y;
  }
  int lo = 0xFF, hi = 1;
  bool finite = true;
  for (const float v : x) {
    finite = finite && std::isfinite(v);
    if (v != 0.0f) lo = std::min(lo, grid_exponent(v)), hi = std::max(hi, grid_exponent(v));
  }
  if (finite && hi - lo <= kInt64Span) return rht16_int64(x, mask, std::min(lo, hi));
  const std::array<Fixed, 16> m = magnitudes(x);
  for (unsigned n = 0; n < 16; ++n) y[n] = to_bf16(to_binary32(exact_sum(x, m, mask, n)));  // the double rounding
  return y;
}

Rht16Sum rht16_sum(const std::array<float, 16>& x, std::uint16_t mask, unsigned n) {
  const ExactSum s = exact_sum(x, magnitudes(x), mask, n);
  Rht16Sum out;
  out.binary32 = to_binary32(s);
  out.bf16 = to_bf16(out.binary32);
  out.mma = mma_sum(x, mask, n);
  out.bf16_mma = to_bf16(out.mma);
  if (s.ieee) {
    out.exact = is_nan(*s.ieee) ? "NaN" : fmt::format("{}{}", sign_bit(*s.ieee) ? "-" : "+", std::isinf(*s.ieee) ? "inf" : "0");
    out.bf16_single = out.bf16;
  } else {
    out.exact = hex_text(s.n);
    out.bf16_single = round_fixed(s.n, 8, 2);
  }
  return out;
}

FloatMatrix rht(const FloatMatrix& x, std::uint16_t mask, RhtSum sum) {
  const std::size_t M = x.shape(0), N = x.shape(1);
  if (M % 16) fail("rht", ErrorCode::E_DIM16_M, "M={} is not a multiple of 16", M);
  if (N % 16) fail("rht", ErrorCode::E_DIM16_K, "N={} is not a multiple of 16", N);
  FloatMatrix out = xt::empty<float>({N, M});
  std::array<float, 16> v;
  for (std::size_t c = 0; c < N; ++c)
    for (std::size_t b = 0; b < M / 16; ++b) {
      for (std::size_t k = 0; k < 16; ++k) v[k] = x(16 * b + k, c);
      const std::array<float, 16> y = rht16(v, mask, sum);
      for (std::size_t n = 0; n < 16; ++n) out(c, 16 * b + n) = y[n];
    }
  return out;
}

}  // namespace nvfp4
