// The NVFP4 GEMM in EXACT mode (docs/NUMERICS.md §3.20): the correctly rounded scaled product of
// two K-major NVFP4 operands, per-tensor or row-scaled.
#include <algorithm>
#include <utility>

#include "cases/gemm_case.h"
#include "cases/ops/families.h"
#include "cases/ops/param_specs.h"
#include "io/tensor_convert.h"
#include "reference/e2m1.h"
#include "reference/layout.h"

#include <xtensor/xview.hpp>

namespace nvfp4::cases {
namespace {

TensorMap output(const Case& c, const FloatMatrix& d) {
  TensorMap out;
  out["d"] = io::from_float_matrix(d, io::float_type_of(gemm_output_dtype(c), c.op));
  return out;
}

TensorMap run_gemm(const Case& c) {
  GemmInputs in;
  read_gemm_inputs(c, in);
  return output(c, gemm(in.a, in.b, in.options));
}

// ---- the metamorphic relations -------------------------------------------------------------
// An operand as one E2M1 code per element and one scale byte per block, without padding.
struct Blocks {
  std::int64_t rows = 0, blocks = 0;
  std::vector<std::uint8_t> code, scale;  // [rows, 16·blocks], [rows, blocks]
  std::uint8_t& at(std::int64_t r, std::int64_t k) { return code[std::size_t(r * 16 * blocks + k)]; }
  std::uint8_t& scale_at(std::int64_t r, std::int64_t j) { return scale[std::size_t(r * blocks + j)]; }
};

Blocks blocks_of(const GemmOperand& x) {
  Blocks b{std::int64_t(x.data.shape(0)), std::int64_t(x.data.shape(1)) / 8, {}, {}};
  b.code.resize(std::size_t(b.rows * b.blocks * 16));
  b.scale.resize(std::size_t(b.rows * b.blocks));
  for (std::int64_t r = 0; r < b.rows; ++r) {
    for (std::int64_t k = 0; k < 16 * b.blocks; ++k) b.at(r, k) = nibble_at(x.data(r, k / 2), int(k % 2));
    for (std::int64_t j = 0; j < b.blocks; ++j) b.scale_at(r, j) = x.scale(r, j);
  }
  return b;
}

GemmOperand operand_of(Blocks b, const FloatVector& amax) {
  GemmOperand x;
  x.data = xt::zeros<std::uint8_t>({std::size_t(b.rows), std::size_t(8 * b.blocks)});
  x.scale = xt::zeros<std::uint8_t>({std::size_t(scale_rows(b.rows)), std::size_t(scale_cols(16 * b.blocks))});
  for (std::int64_t r = 0; r < b.rows; ++r) {
    for (std::int64_t k = 0; k < 8 * b.blocks; ++k) x.data(r, k) = pack_nibbles(b.at(r, 2 * k), b.at(r, 2 * k + 1));
    for (std::int64_t j = 0; j < b.blocks; ++j) x.scale(r, j) = b.scale_at(r, j);
  }
  x.amax = amax;
  return x;
}

// Σ over blocks is order-free: reversing the K blocks of both operands changes nothing.
void reverse_blocks(Blocks& x) {
  for (std::int64_t r = 0; r < x.rows; ++r)
    for (std::int64_t j = 0; j < x.blocks / 2; ++j) {
      const std::int64_t o = x.blocks - 1 - j;
      std::swap(x.scale_at(r, j), x.scale_at(r, o));
      for (int i = 0; i < 16; ++i) std::swap(x.at(r, 16 * j + i), x.at(r, 16 * o + i));
    }
}

// The E4M3 byte of half the value of b, when that half is exactly an E4M3 value.
std::optional<std::uint8_t> halved(std::uint8_t b) {
  const std::uint8_t sign = b & 0x80, e = (b >> 3) & 0xF, m = b & 0x7;
  if (e == 0xF && m == 0x7) return std::nullopt;               // NaN
  if (e >= 2) return std::uint8_t(sign | ((e - 1) << 3) | m);  // one binade down
  const std::uint8_t n = e == 0 ? m : std::uint8_t(8 + m);     // the value in units of 2^-9
  if (n % 2) return std::nullopt;
  return std::uint8_t(sign | (n / 2));
}

// Block j of A with every scale halved, and a copy of block j appended to both operands: the two
// halves sum exactly to the original contribution (EXACT accumulates in integers).
bool split_a_block(Blocks& a, Blocks& b) {
  for (std::int64_t j = 0; j < a.blocks; ++j) {
    bool all = true;
    for (std::int64_t r = 0; r < a.rows && all; ++r) all = halved(a.scale_at(r, j)).has_value();
    if (!all) continue;
    for (Blocks* x : {&a, &b}) {
      Blocks y{x->rows, x->blocks + 1, std::vector<std::uint8_t>(std::size_t(x->rows * 16 * (x->blocks + 1))),
               std::vector<std::uint8_t>(std::size_t(x->rows * (x->blocks + 1)))};
      for (std::int64_t r = 0; r < x->rows; ++r) {
        for (std::int64_t k = 0; k < 16 * x->blocks; ++k) y.at(r, k) = x->at(r, k);
        for (int i = 0; i < 16; ++i) y.at(r, 16 * x->blocks + i) = x->at(r, 16 * j + i);
        for (std::int64_t jj = 0; jj < x->blocks; ++jj) y.scale_at(r, jj) = x->scale_at(r, jj);
        y.scale_at(r, x->blocks) = x->scale_at(r, j);
        if (x == &a) y.scale_at(r, j) = y.scale_at(r, x->blocks) = *halved(x->scale_at(r, j));
      }
      *x = std::move(y);
    }
    return true;
  }
  return false;
}

// MMA modes sum K in order, chunk by chunk: blocks may not move, but K padded to whole chunks
// and one more chunk, all codes zero (scales copied from block 0), adds nothing (§3.20.6: a group
// whose products are all zero is a zero term at the zero exponent).
void append_zero_chunk(Blocks& x, std::int64_t per_chunk) {
  const std::int64_t blocks = (x.blocks + per_chunk - 1) / per_chunk * per_chunk + per_chunk;
  Blocks y{x.rows, blocks, std::vector<std::uint8_t>(std::size_t(x.rows * 16 * blocks), 0),
           std::vector<std::uint8_t>(std::size_t(x.rows * blocks))};
  for (std::int64_t r = 0; r < x.rows; ++r) {
    for (std::int64_t k = 0; k < 16 * x.blocks; ++k) y.at(r, k) = x.at(r, k);
    for (std::int64_t j = 0; j < blocks; ++j) y.scale_at(r, j) = x.scale_at(r, j < x.blocks ? j : 0);
  }
  x = std::move(y);
}

// The relations, composed: EXACT: K blocks reversed; one block of A split into two halves (above);
// MMA modes: a zero chunk appended instead; both:
// operands swapped, D^T = D(B, A), unless a bias or two-step row scaling makes the result
// asymmetric; row 0 of A (and of C) negated, negating row 0 of D, unless a bias or row scaling.
TensorMap gemm_via_relations(const Case& c) {
  GemmInputs in;
  read_gemm_inputs(c, in);
  const GemmOptions& o = in.options;
  validate_gemm(in.a, in.b, o);  // the reference's errors, before blocks_of reads the scales by the data's shape
  Blocks a = blocks_of(in.a), b = blocks_of(in.b);
  if (o.accumulation == GemmAccumulation::EXACT) {
    reverse_blocks(a);
    reverse_blocks(b);
    split_a_block(a, b);
  } else {
    const std::int64_t per_chunk = mma_model(o.accumulation).chunk / 16;
    append_zero_chunk(a, per_chunk);
    append_zero_chunk(b, per_chunk);
  }
  FloatMatrix cm = in.c;
  GemmOptions t = o;
  if (o.c) t.c = &cm;
  const bool negate = !o.bias && !o.row_scaled && a.rows > 0;
  if (negate) {
    for (std::int64_t k = 0; k < 16 * a.blocks; ++k) a.at(0, k) ^= 0x8;
    if (o.c) xt::row(cm, 0) = -xt::row(cm, 0);
  }
  const bool swap = !o.bias && !(o.row_scaled && in.a.amax.size() > 1 && in.b.amax.size() > 1);
  FloatMatrix ct;
  FloatMatrix d;
  if (swap) {
    if (o.c) {
      ct = xt::transpose(cm);
      t.c = &ct;
    }
    d = xt::transpose(gemm(operand_of(b, in.b.amax), operand_of(a, in.a.amax), t));
  } else {
    d = gemm(operand_of(a, in.a.amax), operand_of(b, in.b.amax), t);
  }
  if (negate) {
    // A zero of the negated row is +0.0 when exact (§3.20.3) and of the other sign when it
    // underflowed: row 0 of the original, alone, tells which.
    FloatMatrix row0;
    for (std::size_t n = 0; n < d.shape(1); ++n) {
      float& v = d(0, n);
      if (is_nan(v)) continue;
      if (v != 0.0f)
        v = -v;
      else {
        if (row0.size() == 0) {
          GemmOperand a0 = operand_of(blocks_of(in.a), in.a.amax);
          a0.data = xt::view(a0.data, xt::range(0, 1), xt::all());
          a0.scale = xt::view(a0.scale, xt::range(0, 128), xt::all());
          FloatMatrix c0 = o.c ? FloatMatrix(xt::view(in.c, xt::range(0, 1), xt::all())) : FloatMatrix();
          GemmOptions o0 = o;
          if (o.c) o0.c = &c0;
          row0 = gemm(a0, in.b, o0);
        }
        v = row0(0, n);
      }
    }
  }
  return output(c, d);
}

}  // namespace

std::vector<OperationSpec> gemm_operations() {
  const std::vector<io::DType> outs = {io::DType::F32, io::DType::BF16, io::DType::F16};
  OperationSpec g;
  g.name = "gemm";
  g.family = "gemm";
  g.summary =
      "D = alpha * sum of NVFP4 block products + beta * C: one rounding of the exact result (EXACT), or as a chain of "
      "Blackwell's block-scaled MMA instructions (mma-sm100, mma-sm120)";
  g.section = "§3.20.1, §3.20.3, §3.20.4, §3.20.6";
  g.params = {
      enum_param("output_dtype", {"F32", "BF16", "F16"}, "dtype of d: the exact FP32 result, rounded again for BF16/F16"),
      enum_param("scale_layout", {"compact", "swizzled"}, "both operands' scales: compact or GEMM-swizzled (128x4)"),
      {"alpha", ParamType::kF32Bits, {}, F32Bits{}, "alpha itself; null: from the amaxes by §3.20.1"},
      {"beta", ParamType::kF32Bits, {}, F32Bits{}, "beta, with tensor c; null: no C term (C is never read when beta = 0)"},
      {"with_bias",
       ParamType::kBool,
       {},
       false,
       "add tensor bias[n] to the FP32 result (an FP32 add) before the output rounding"},
      {"row_scaled", ParamType::kBool, {}, false, "per-row amaxes: alpha from amaxes of 1, then the post-scale of §3.20.4"},
      {"accumulate", ParamType::kBool, {}, false, "row_scaled only: d = RNout(c + RNout(out)), c of the output dtype"},
      accumulation_param(),
  };
  const std::string_view scales = "[roundup(rows, 128), roundup(K/16, 4)], compact or swizzled";
  g.inputs = {{.name = "a_data", .dtypes = {io::DType::U8}, .shape = "[M, K/2]", .ranks = {2}},
              {.name = "a_scale", .dtypes = {io::DType::U8}, .shape = scales, .ranks = {2}},
              {.name = "a_amax", .dtypes = {io::DType::F32}, .shape = "[1], or [M] when row_scaled", .ranks = {1}},
              {.name = "b_data", .dtypes = {io::DType::U8}, .shape = "[N, K/2]", .ranks = {2}},
              {.name = "b_scale", .dtypes = {io::DType::U8}, .shape = scales, .ranks = {2}},
              {.name = "b_amax", .dtypes = {io::DType::F32}, .shape = "[1], or [N] when row_scaled", .ranks = {1}},
              {.name = "c",
               .dtypes = outs,
               .shape = "[M, N]: F32, or of output_dtype when accumulate",
               .optional = true,
               .when = "beta != null or accumulate",
               .ranks = {2}},
              {.name = "bias", .dtypes = {io::DType::F32}, .shape = "[N]", .optional = true, .when = "with_bias", .ranks = {1}}};
  g.outputs = {{"d", outs, "[M, N] of output_dtype"}};
  g.reference = run_gemm;
  g.metamorphic = gemm_via_relations;
  g.relation =
      "exact: order-free blocks: K blocks reversed, one block of A split into two halves of its scale; mma-*: a chunk of zero "
      "codes appended after K padded to whole chunks; both: D^T = D(B, A); row 0 of A negated negates row 0 of D";
  return {g};
}

}  // namespace nvfp4::cases
