#include "reference/amax.h"

#include "reference/error.h"
#include "reference/formulas.h"
#include "reference/row_threads.h"

namespace nvfp4 {
namespace {

// Max of |x| over the rectangle [r0, r0+nr) x [c0, c0+nc); an empty rectangle gives +0. This is
// amax_step folded over the elements from +0 (§3.1), computed on the bits of |x|, where binary32
// order is integer order: the maximum does not depend on the order, a NaN is left out (IGNORE) or
// makes the result the canonical NaN (PROPAGATE, PROPAGATE_BF16). Branch-free, so the compiler
// vectorizes it; tests/amax_fold_test.cpp checks it against the fold.
template <AmaxRule kRule>
float amax_rect(const FloatMatrix& x, std::size_t r0, std::size_t nr, std::size_t c0, std::size_t nc) {
  constexpr std::uint32_t kInfBits = 0x7F800000u;
  std::uint32_t max_bits = 0, nan = 0;
  for (std::size_t r = r0; r < r0 + nr; ++r) {
    const float* row = x.data() + r * x.shape(1);
    for (std::size_t c = c0; c < c0 + nc; ++c) {
      const std::uint32_t u = bits_of(row[c]) & 0x7FFFFFFFu;
      const bool is_nan_bits = u > kInfBits;
      nan |= std::uint32_t(is_nan_bits);
      max_bits = std::max(max_bits, is_nan_bits ? 0u : u);
    }
  }
  if (kRule != AmaxRule::IGNORE && nan) return canonical_nan();
  return float_of(max_bits);
}

// f.template operator()<kRule>() for the rule: the rule fixed once, outside the loops.
template <class F>
auto with_rule(AmaxRule rule, F f) {
  switch (rule) {
    case AmaxRule::IGNORE:
      return f.template operator()<AmaxRule::IGNORE>();
    case AmaxRule::PROPAGATE:
      return f.template operator()<AmaxRule::PROPAGATE>();
    case AmaxRule::PROPAGATE_BF16:
      return f.template operator()<AmaxRule::PROPAGATE_BF16>();
  }
  return f.template operator()<AmaxRule::PROPAGATE>();
}

float amax_rect(const FloatMatrix& x, AmaxRule rule, std::size_t r0, std::size_t nr, std::size_t c0, std::size_t nc) {
  return with_rule(rule, [&]<AmaxRule kRule>() { return amax_rect<kRule>(x, r0, nr, c0, nc); });
}

// One amax per (bh x bw) block; the matrix dimensions must be multiples of the block. Rows of
// blocks are independent: large matrices use every core.
FloatMatrix amax_blocks(const FloatMatrix& x, AmaxRule rule, std::size_t bh, std::size_t bw, const char* op) {
  const std::size_t M = x.shape(0), K = x.shape(1);
  if (K % bw) fail(op, ErrorCode::E_DIM16_K, "K={} is not a multiple of {}", K, bw);
  if (M % bh) fail(op, ErrorCode::E_DIM16_M, "M={} is not a multiple of {}", M, bh);
  FloatMatrix out = xt::empty<float>({M / bh, K / bw});
  with_rule(rule, [&]<AmaxRule kRule>() {
    for_each_row(std::int64_t(M / bh), std::int64_t(bh * K), kRowElementsPerThread, [&](std::int64_t i) {
      for (std::size_t j = 0; j < K / bw; ++j) out(i, j) = amax_rect<kRule>(x, std::size_t(i) * bh, bh, j * bw, bw);
    });
    return 0;
  });
  return out;
}

// Row and column amaxes serve row-scaled quantization and share its K contract (§3.3).
void check_k(const FloatMatrix& x, const char* op) {
  if (x.shape(1) % 16) fail(op, ErrorCode::E_DIM16_K, "K={} is not a multiple of 16", x.shape(1));
}

}  // namespace

float amax_global(const FloatMatrix& x, AmaxRule rule) { return amax_rect(x, rule, 0, x.shape(0), 0, x.shape(1)); }

FloatVector amax_rows(const FloatMatrix& x, AmaxRule rule) {
  check_k(x, "amax_rows");
  FloatVector out = xt::empty<float>({x.shape(0)});
  for (std::size_t r = 0; r < x.shape(0); ++r) out(r) = amax_rect(x, rule, r, 1, 0, x.shape(1));
  return out;
}

FloatVector amax_cols(const FloatMatrix& x, AmaxRule rule) {
  check_k(x, "amax_cols");
  FloatVector out = xt::zeros<float>({x.shape(1)});
  for (std::size_t r = 0; r < x.shape(0); ++r)
    for (std::size_t c = 0; c < x.shape(1); ++c) out(c) = amax_step(rule, out(c), x(r, c));
  return out;
}

FloatMatrix amax_blocks_1x16(const FloatMatrix& x, AmaxRule rule) { return amax_blocks(x, rule, 1, 16, "amax_block_1x16"); }
FloatMatrix amax_blocks_16x1(const FloatMatrix& x, AmaxRule rule) { return amax_blocks(x, rule, 16, 1, "amax_block_16x1"); }
FloatMatrix amax_tiles_16x16(const FloatMatrix& x, AmaxRule rule) { return amax_blocks(x, rule, 16, 16, "amax_block_16x16"); }

}  // namespace nvfp4
