#include "reference/quantize.h"

#include <xtensor/xview.hpp>

#include "reference/amax.h"
#include "reference/block_encoder.h"
#include "reference/error.h"
#include "reference/formulas.h"
#include "reference/layout.h"
#include "reference/philox.h"
#include "reference/row_threads.h"
#include "reference/scale_layout.h"

namespace nvfp4 {
namespace {

const char* op_name(const QuantizeOptions& o) {
  if (o.row_scaled) return "quantize_row_scaled";
  if (o.block == BlockShape::k2D) return "quantize_2d";
  return o.direction == Direction::kColumnwise ? "quantize_1d_col" : "quantize_1d";
}

}  // namespace

void validate_quantize(std::size_t M, std::size_t K, const QuantizeOptions& o) {
  const char* op = op_name(o);
  if (K % 16) fail(op, ErrorCode::E_DIM16_K, "K={} is not a multiple of 16", K);
  if (M % 16) fail(op, ErrorCode::E_DIM16_M, "M={} is not a multiple of 16", M);
  if (o.row_scaled && o.block == BlockShape::k2D)
    fail(op, ErrorCode::E_UNSUPPORTED, "row scaling is not defined for 2D (16x16) blocks");
  if (o.row_scaled && o.amax) fail(op, ErrorCode::E_UNSUPPORTED, "an amax override is not defined for row-scaled quantization");
  if (o.rht_mask) {
    if (o.input != InputFormat::kBF16) fail(op, ErrorCode::E_DTYPE, "the Hadamard transform (rht) takes a BF16 input");
    if (o.block == BlockShape::k2D) fail(op, ErrorCode::E_UNSUPPORTED, "rht is defined for 1D blocks only");
    if (o.direction == Direction::kRowwise)
      fail(op, ErrorCode::E_UNSUPPORTED, "rht transforms the columnwise copy: direction must be columnwise or both");
    if (o.amax) fail(op, ErrorCode::E_UNSUPPORTED, "an amax override is not defined with rht (the columnwise amax is rht(x)'s)");
  }
}

float stored_amax(AmaxRule rule, InputFormat input, float g) {
  if (rule == AmaxRule::PROPAGATE_BF16 && input == InputFormat::kBF16 && is_nan(g)) return float_of(0x7FFF0000u);
  return g;
}

namespace {

// Block amaxes for the rowwise quantization of x: one per 1x16 block, or each 16x16 tile's
// amax repeated on its 16 rows (the 2D rowwise scale is replicated, §3.11).
FloatMatrix rowwise_block_amax(const FloatMatrix& x, BlockShape block, AmaxRule rule) {
  if (block == BlockShape::k1D) return amax_blocks_1x16(x, rule);
  const FloatMatrix tiles = amax_tiles_16x16(x, rule);
  FloatMatrix out = xt::empty<float>({x.shape(0), tiles.shape(1)});
  for (std::size_t r = 0; r < out.shape(0); ++r)
    for (std::size_t j = 0; j < out.shape(1); ++j) out(r, j) = tiles(r / 16, j);
  return out;
}

// The global amax of x (or of one row), through a fault variant's reduction where it has one.
float tensor_amax(const float* begin, const float* end, const QuantizeOptions& o) {
  float a = 0.0f;
  for (const float* v = begin; v != end; ++v) a = o.steps.amax_step(o.profile.amax, a, *v);
  return a;
}
float global_amax(const FloatMatrix& x, const QuantizeOptions& o) {
  return o.steps.amax_step ? tensor_amax(x.data(), x.data() + x.size(), o) : amax_global(x, o.profile.amax);
}
FloatVector row_amaxes(const FloatMatrix& x, const QuantizeOptions& o) {
  if (!o.steps.amax_step) return amax_rows(x, o.profile.amax);
  FloatVector out = xt::empty<float>({x.shape(0)});
  for (std::size_t r = 0; r < x.shape(0); ++r) out(r) = tensor_amax(&x(r, 0), &x(r, 0) + x.shape(1), o);
  return out;
}

// One direction: the rowwise quantization of `x` (x itself, or x^T for the columnwise copy).
QuantizedTensor quantize_direction(const FloatMatrix& x, const QuantizeOptions& o, float g, SrDirection dir) {
  const AmaxRule rule = o.profile.amax;
  FloatVector row_g = xt::empty<float>({x.shape(0)});
  if (o.row_scaled)
    row_g = row_amaxes(x, o);
  else
    row_g.fill(g);
  FloatMatrix block_amax = rowwise_block_amax(x, o.block, rule);
  if (o.steps.block_amax) o.steps.block_amax(rule, block_amax);
  QuantizedTensor q = quantize_rows(x, block_amax, row_g, o.profile, o.stochastic, dir, o.steps, o.block);
  if (!o.row_scaled) q.amax = FloatVector({g});
  for (float& a : q.amax) a = stored_amax(rule, o.input, a);
  if (o.scale_layout == ScaleLayout::kSwizzled) q.scale = swizzle_scales(q.scale);
  return q;
}

// A block's encoding b with the steps a fault variant replaces (QuantizeSteps).
BlockEncoding with_steps(const Profile& p, const GlobalScale& gs, float A, BlockEncoding b, const QuantizeSteps& steps) {
  if (b.encoder.op == ElementEncoder::Op::ALL_ZERO) return b;
  if (steps.e4m3_cast) b.scale_byte = zero_rule_after_cast(p, steps.e4m3_cast(p.e4m3, b.precast));
  b.encoder = element_encoder_of(p, gs, A, steps.encode_from_precast ? b.precast : scale_value(p, b.scale_byte));
  return b;
}

}  // namespace

QuantizedTensor quantize_rows(const FloatMatrix& x, const FloatMatrix& block_amax, const FloatVector& row_global_amax,
                              const Profile& profile, const std::optional<StochasticRounding>& stochastic, SrDirection dir,
                              const QuantizeSteps& steps, BlockShape block) {
  const std::size_t M = x.shape(0), K = x.shape(1), blocks = K / 16;
  QuantizedTensor q;
  q.data = xt::empty<std::uint8_t>({M, K / 2});
  q.scale = xt::zeros<std::uint8_t>({std::size_t(scale_rows(M)), std::size_t(scale_cols(K))});
  q.amax = row_global_amax;
  if (blocks == 0) return q;  // no element to encode, and no row element to point at
  // Rows are independent: large tensors are quantized in row bands on every core.
  for_each_row(std::int64_t(M), std::int64_t(K), kRowElementsPerThread, [&](std::int64_t row) {
    const std::size_t r = std::size_t(row);
    const float g = row_global_amax(r);
    // Once per tensor, or per row if row-scaled.
    const GlobalScale gs = steps.global_scale ? steps.global_scale(profile.gs, g) : global_scale(profile.gs, g);
    const float* xr = &x(r, 0);
    std::uint8_t* out = &q.data(r, 0);
    for (std::size_t j = 0; j < blocks; ++j) {
      const float A = block_amax(r, j);
      BlockEncoding b = profile.cand != CandidateRule::NONE ? chosen_candidate(profile, gs, g, A, x, r, block, j)
                                                            : encode_block(profile, gs, g, A);
      if (steps.blocks_replaced()) b = with_steps(profile, gs, A, b, steps);
      q.scale(r, j) = b.scale_byte;
      if (stochastic) {
        // The block's stored index is (r*K + 16j) / 16: one Philox draw per block (§3.18.3).
        const PhiloxCounter draw =
            sr_draw(stochastic->seed, stochastic->offset, dir, steps.sr_reuse_block_bits ? 0 : r * blocks + j);
        for (unsigned i = 0; i < 16; i += 2)
          out[8 * j + i / 2] = pack_nibbles(encode_element_sr(profile, b.encoder, xr[16 * j + i], sr_byte(draw, i)),
                                            encode_element_sr(profile, b.encoder, xr[16 * j + i + 1], sr_byte(draw, i + 1)));
        continue;
      }
      if (steps.e2m1) {  // a fault variant's rounding of y
        std::uint8_t c[16];
        for (int i = 0; i < 16; ++i)
          c[i] = b.encoder.op == ElementEncoder::Op::ALL_ZERO
                     ? 0x0
                     : steps.e2m1(profile.e2m1, scale_element(profile, b.encoder, xr[16 * j + i]));
        for (int i = 0; i < 8; ++i) out[8 * j + i] = pack_nibbles(c[2 * i], c[2 * i + 1]);
        continue;
      }
      block_codes(profile, b.encoder)(b.encoder.factor, xr + 16 * j, out + 8 * j);  // encode_element on each
    }
  });
  return q;
}

BlockEncoding chosen_candidate(const Profile& p, const GlobalScale& gs, float g, float A, const FloatMatrix& x, std::size_t r,
                               BlockShape block, std::size_t j) {
  const BlockEncoding map6 = encode_block(p, gs, g, A), map4 = encode_block_map4(p, gs, g, A);
  const std::size_t rows = block == BlockShape::k2D ? 16 : 1, r0 = r / rows * rows;
  // The error of one candidate over one row's block.
  const auto error = [&](const BlockEncoding& b, std::size_t row) {
    const float* xb = &x(row, 16 * j);
    return candidate_error(
        p.cand, block_decoder(p, gs, g, b.scale_byte), [&](int i) { return encode_element(p, b.encoder, xb[i]); },
        [xb](int i) { return xb[i]; });
  };
  if (rows == 1) return prefer_map4(error(map4, r), error(map6, r)) ? map4 : map6;
  float part4[16], part6[16];
  for (std::size_t k = 0; k < 16; ++k) part4[k] = error(map4, r0 + k), part6[k] = error(map6, r0 + k);
  return prefer_map4(tile_error(part4), tile_error(part6)) ? map4 : map6;
}

Quantization quantize(const FloatMatrix& x, const QuantizeOptions& o) {
  validate_quantize(x.shape(0), x.shape(1), o);
  Quantization out;
  const float g = o.amax ? *o.amax : global_amax(x, o);
  if (o.direction != Direction::kColumnwise) out.rowwise = quantize_direction(x, o, g, SrDirection::kRowwise);
  if (o.direction != Direction::kRowwise) {
    const SrDirection dir = o.steps.sr_reuse_copy_bits ? SrDirection::kRowwise : SrDirection::kColumnwise;
    if (o.rht_mask) {  // §3.19: the columnwise copy is rht(x) (already [K, M]) with its own amax
      const FloatMatrix y = o.steps.rht ? o.steps.rht(x, *o.rht_mask, o.profile.rht) : rht(x, *o.rht_mask, o.profile.rht);
      out.columnwise = quantize_direction(y, o, global_amax(y, o), dir);
    } else {
      const FloatMatrix x_t = xt::transpose(x);  // columnwise = the rowwise algorithm on x^T (§3.10)
      out.columnwise = quantize_direction(x_t, o, g, dir);
    }
  }
  if (!o.row_scaled && o.profile.exported != ExportedGlobal::NONE)
    out.global_scale = exported_global(
        o.profile, o.steps.global_scale ? o.steps.global_scale(o.profile.gs, g) : global_scale(o.profile.gs, g), g);
  return out;
}

}  // namespace nvfp4
