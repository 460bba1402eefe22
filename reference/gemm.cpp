#include "reference/gemm.h"

#include <algorithm>
#include <array>

#include "reference/e2m1.h"
#include "reference/e4m3.h"
#include "reference/error.h"
#include "reference/exact_round.h"
#include "reference/half_float.h"
#include "reference/layout.h"
#include "reference/row_threads.h"

namespace nvfp4 {
namespace {

constexpr std::string_view kOp = "gemm";
// Rows of a GEMM get threads of their own from this many block products on.
constexpr std::int64_t kBlockProductsPerThread = 1 << 16;
// The largest D the reference computes (4 GiB of binary32): A and B come from files whose size
// bounds M and N, but not their product.
constexpr std::int64_t kMaxOutputElements = std::int64_t{1} << 30;

// An operand in the integers of §3.20.3: 2·f4(code) per element, f8(scale)·2^9 per block.
struct IntegerOperand {
  std::int64_t rows = 0, K = 0, blocks = 0;
  std::vector<std::int8_t> twice_code;  // [rows, K]: 2·f4, in [-12, 12]
  std::vector<std::int64_t> scale;      // [rows, blocks]: n = f8·2^9, |n| < 2^18
  std::vector<bool> nan_row;            // a NaN scale byte among the row's blocks
};

// 2·f4 of the low and the high nibble of every byte: the operand's codes decoded a byte at a time.
const std::array<std::array<std::int8_t, 2>, 256>& twice_codes_of_byte() {
  static const auto table = [] {
    std::array<std::array<std::int8_t, 2>, 256> t{};
    for (int b = 0; b < 256; ++b)
      for (int half = 0; half < 2; ++half) t[b][half] = std::int8_t(2.0f * e2m1_decode(nibble_at(std::uint8_t(b), half)));
    return t;
  }();
  return table;
}

IntegerOperand integers_of(const GemmOperand& x) {
  IntegerOperand o;
  o.rows = std::int64_t(x.data.shape(0));
  o.K = 2 * std::int64_t(x.data.shape(1));
  o.blocks = o.K / 16;
  o.twice_code.resize(std::size_t(o.rows * o.K));
  o.scale.resize(std::size_t(o.rows * o.blocks));
  o.nan_row.assign(std::size_t(o.rows), false);
  const auto& twice = twice_codes_of_byte();
  const std::uint8_t* data = x.data.data();  // row-major [rows, K/2]
  for (std::int64_t r = 0; r < o.rows; ++r) {
    for (std::int64_t b = 0; b < o.K / 2; ++b) {
      const auto& pair = twice[data[r * (o.K / 2) + b]];
      o.twice_code[std::size_t(r * o.K + 2 * b)] = pair[0];
      o.twice_code[std::size_t(r * o.K + 2 * b + 1)] = pair[1];
    }
    for (std::int64_t j = 0; j < o.blocks; ++j) {
      const float s = e4m3_decode(x.scale(r, j));
      if (is_nan(s))
        o.nan_row[std::size_t(r)] = true;
      else
        o.scale[std::size_t(r * o.blocks + j)] = std::int64_t(s * 512.0f);  // exact: s is a multiple of 2^-9
    }
  }
  return o;
}

// T = Σ_j P_j · n_a · n_b: S_exact in units of 2^-20. |T_j| < 2^47, so 128 bits hold any K.
__int128 exact_sum_of_blocks(const IntegerOperand& a, std::int64_t m, const IntegerOperand& b, std::int64_t n) {
  const std::int8_t* qa = &a.twice_code[std::size_t(m * a.K)];
  const std::int8_t* qb = &b.twice_code[std::size_t(n * b.K)];
  const std::int64_t* sa = &a.scale[std::size_t(m * a.blocks)];
  const std::int64_t* sb = &b.scale[std::size_t(n * b.blocks)];
  __int128 t = 0;
  for (std::int64_t j = 0; j < a.blocks; ++j) {
    std::int32_t p = 0;  // P_j, |P_j| <= 2304
    for (int i = 0; i < 16; ++i) p += std::int32_t(qa[16 * j + i]) * std::int32_t(qb[16 * j + i]);
    t += __int128(std::int64_t(p) * (sa[j] * sb[j]));
  }
  return t;
}

// §3.20.6: the chain of one modelled instruction per chunk of K, in increasing K, from +0.0.
// Scale bytes as stored (the model reads them as UE4M3); the last chunk may hold fewer groups.
float mma_accumulator(const MmaModel& model, const IntegerOperand& a, const ByteMatrix& a_scale, std::int64_t m,
                      const IntegerOperand& b, const ByteMatrix& b_scale, std::int64_t n) {
  const std::int64_t per_chunk = model.chunk / 16;
  std::vector<std::uint8_t> sa(static_cast<std::size_t>(per_chunk)), sb(static_cast<std::size_t>(per_chunk));
  float acc = 0.0f;
  for (std::int64_t j0 = 0; j0 < a.blocks; j0 += per_chunk) {
    const int groups = int(std::min(per_chunk, a.blocks - j0));
    for (int g = 0; g < groups; ++g) {
      sa[std::size_t(g)] = a_scale(m, j0 + g);
      sb[std::size_t(g)] = b_scale(n, j0 + g);
    }
    acc = mma_fused_dot_add(model, acc, &a.twice_code[std::size_t(m * a.K + 16 * j0)],
                            &b.twice_code[std::size_t(n * b.K + 16 * j0)], sa.data(), sb.data(), groups);
  }
  return acc;
}

// The MMA modes' epilogue, CUTLASS's linear combination: RN(α·acc), then fma32(β, C, ·) when
// C is read. IEEE special values throughout; NaN canonical.
float mma_element(float acc, float alpha, std::optional<float> beta, float c) {
  const float t = mul_rn(alpha, acc);
  return beta && *beta != 0.0f ? fma_rn(*beta, c, t) : t;
}

// RN(α·S_exact + β·C) with the special values of §3.20.3. `bc` is β·C[m][n] when β ≠ 0.
float exact_element(bool nan_operand, float alpha, __int128 t, std::optional<float> beta, float c) {
  if (nan_operand || is_nan(alpha)) return canonical_nan();
  const bool has_c = beta && *beta != 0.0f;
  float special = 0.0f;  // an infinite or NaN term, IEEE rules
  bool is_special = false;
  if (std::isinf(alpha)) {
    if (t == 0) return canonical_nan();
    special = (sign_bit(alpha) != (t < 0)) ? -INFINITY : INFINITY;
    is_special = true;
  }
  if (has_c && (!std::isfinite(*beta) || !std::isfinite(c))) {
    if (is_nan(*beta) || is_nan(c) || *beta == 0.0f || c == 0.0f) return canonical_nan();  // inf·0, NaN
    const float bc = (sign_bit(*beta) != sign_bit(c)) ? -INFINITY : INFINITY;
    if (is_special && bc != special) return canonical_nan();  // inf − inf
    special = bc;
    is_special = true;
  }
  if (is_special) return special;
  constexpr __int128 kProductFits = __int128(1) << 103;   // |α's significand · T| < 2^127
  if (!has_c && t > -kProductFits && t < kProductFits) {  // the usual case, without cpp_int
    const SmallDyadic a = small_dyadic_of(alpha);
    return round_to_binary32(__int128(a.n) * t, a.exponent - 20);
  }
  Dyadic product = dyadic_of(alpha);  // α·T·2^-20
  product.n *= big_of(t);
  product.exponent -= 20;
  if (!has_c) return round_to_binary32(product);
  Dyadic bc = dyadic_of(*beta), cd = dyadic_of(c);
  bc.n *= cd.n;
  bc.exponent += cd.exponent;
  return round_to_binary32(exact_sum(product, bc));
}

float round_output(float v, GemmOutput out) {
  switch (out) {
    case GemmOutput::F32:
      return canonicalize_nan(v);
    case GemmOutput::BF16:
      return bf16_to_float(float_to_bf16(v));
    case GemmOutput::F16:
      return half_to_float(float_to_half(v));
  }
  return v;
}

void require_scale_shape(const GemmOperand& x, std::string_view name) {
  const std::int64_t rows = std::int64_t(x.data.shape(0)), K = 2 * std::int64_t(x.data.shape(1));
  if (std::int64_t(x.scale.shape(0)) != scale_rows(rows) || std::int64_t(x.scale.shape(1)) != scale_cols(K))
    fail(kOp, ErrorCode::E_SCALE_SHAPE, "{}_scale is [{}, {}], expected [{}, {}] for {} rows and K={}", name, x.scale.shape(0),
         x.scale.shape(1), scale_rows(rows), scale_cols(K), rows, K);
}

void require_amax(const GemmOperand& x, std::string_view name, std::int64_t rows, bool row_scaled) {
  const std::int64_t n = std::int64_t(x.amax.size());
  if (n != 1 && !(row_scaled && n == rows))
    fail(kOp, ErrorCode::E_AMAX_SHAPE, "{}_amax has {} values, expected 1{}", name, n,
         row_scaled ? fmt::format(" or {} (one per row)", rows) : "");
}

void require_matrix(const FloatMatrix* x, std::string_view name, std::int64_t M, std::int64_t N) {
  if (std::int64_t(x->shape(0)) != M || std::int64_t(x->shape(1)) != N)
    fail(kOp, ErrorCode::E_DATA_SHAPE, "{} is [{}, {}], expected [{}, {}]", name, x->shape(0), x->shape(1), M, N);
}

// §3.20.4: the per-row amaxes cannot enter α; the FP32 product is scaled afterwards.
float post_scale(float d0, float row, float col, bool row_scalar, bool col_scalar) {
  if (col_scalar) return mul_rn(d0, mul_rn(row, col));  // folded product
  if (row_scalar) return mul_rn(d0, mul_rn(col, row));  // folded product
  return mul_rn(mul_rn(d0, row), col);                  // bilateral: two steps
}

}  // namespace

void validate_gemm(const GemmOperand& a, const GemmOperand& b, const GemmOptions& o) {
  const std::int64_t M = std::int64_t(a.data.shape(0)), N = std::int64_t(b.data.shape(0));
  const std::int64_t K = 2 * std::int64_t(a.data.shape(1)), Kb = 2 * std::int64_t(b.data.shape(1));
  if (K != Kb) fail(kOp, ErrorCode::E_GEMM_K, "A has K={} and B has K={}", K, Kb);
  if (K == 0 || K % 16) fail(kOp, ErrorCode::E_GEMM_K, "K={} is not a positive multiple of 16", K);
  // Each factor first, so that the product cannot overflow.
  if (M > kMaxOutputElements || N > kMaxOutputElements || M * N > kMaxOutputElements)
    fail(kOp, ErrorCode::E_DATA_SHAPE, "D would be [{}, {}]: above the limit of 2^30 elements", M, N);
  if (o.row_scaled && (o.alpha || o.beta))
    fail(kOp, ErrorCode::E_UNSUPPORTED,
         "row_scaled takes neither alpha nor beta: α comes from amaxes of 1 and the result is post-scaled");
  if (o.accumulate && !o.row_scaled)
    fail(kOp, ErrorCode::E_UNSUPPORTED, "accumulate is the row-scaled path's; use beta otherwise");
  require_amax(a, "a", M, o.row_scaled);
  require_amax(b, "b", N, o.row_scaled);
  const bool reads_c = (o.beta && *o.beta != 0.0f) || o.accumulate;
  if (reads_c || o.beta) {
    if (!o.c) fail(kOp, ErrorCode::E_UNSUPPORTED, "beta or accumulate given without the tensor c");
    require_matrix(o.c, "c", M, N);
  }
  if (o.bias && std::int64_t(o.bias->size()) != N)
    fail(kOp, ErrorCode::E_DATA_SHAPE, "bias has {} values, expected N={}", o.bias->size(), N);
  require_scale_shape(a, "a");
  require_scale_shape(b, "b");
}

FloatMatrix gemm(const GemmOperand& a, const GemmOperand& b, const GemmOptions& o) {
  validate_gemm(a, b, o);
  const std::int64_t M = std::int64_t(a.data.shape(0)), N = std::int64_t(b.data.shape(0)), K = 2 * std::int64_t(a.data.shape(1));
  const IntegerOperand ia = integers_of(a), ib = integers_of(b);

  // α: given, from the amaxes (§3.20.1), or for row scaling from amaxes of 1 (§3.20.4).
  const float alpha = o.alpha ? *o.alpha : o.row_scaled ? gemm_alpha(1.0f, 1.0f, 1.0f) : gemm_alpha(1.0f, a.amax(0), b.amax(0));
  const std::optional<float> beta = o.row_scaled ? std::nullopt : o.beta;
  const bool row_scalar = a.amax.size() == 1, col_scalar = b.amax.size() == 1;
  const MmaModel* model = o.accumulation == GemmAccumulation::EXACT ? nullptr : &mma_model(o.accumulation);
  FloatMatrix d = xt::zeros<float>({std::size_t(M), std::size_t(N)});
  for_each_row(M, N * (K / 16), kBlockProductsPerThread, [&](std::int64_t m) {
    for (std::int64_t n = 0; n < N; ++n) {
      const bool nan_operand = ia.nan_row[std::size_t(m)] || ib.nan_row[std::size_t(n)];
      const float c = beta && *beta != 0.0f ? (*o.c)(m, n) : 0.0f;  // C is never read when β = 0
      float v = o.accumulation == GemmAccumulation::EXACT
                    ? exact_element(nan_operand, alpha, exact_sum_of_blocks(ia, m, ib, n), beta, c)
                    : mma_element(mma_accumulator(*model, ia, a.scale, m, ib, b.scale, n), alpha, beta, c);
      if (o.row_scaled) v = post_scale(v, a.amax(row_scalar ? 0 : m), b.amax(col_scalar ? 0 : n), row_scalar, col_scalar);
      if (o.bias) v = add_rn(v, (*o.bias)(n));  // after the product, an FP32 add
      v = round_output(v, o.output);
      if (o.accumulate) v = round_output(add_rn((*o.c)(m, n), v), o.output);
      d(m, n) = v;
    }
  });
  return d;
}

}  // namespace nvfp4
