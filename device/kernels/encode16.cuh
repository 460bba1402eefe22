// The 16 codes of one block under its encoding, round-to-nearest or stochastic (§3.18.3: one
// Philox draw, device/kernels/philox.cuh's, per block at its stored index), packed as the data tensor
// stores them. Shared by the quantize kernels.
#pragma once

#include "device/kernels/e2m1_arith.cuh"
#include "device/kernels/launch.h"
#include "device/kernels/philox.cuh"
#include "reference/formulas.h"

namespace nvfp4::device {

// kTe: the caller's knobs are te's, whose encoder always multiplies (EncodeRule::TE, no zero-global
// rule), so the te element path below is taken without a runtime test of the encoder, and the
// generic path is not compiled into the kernel.
static_assert(te_knobs().enc == EncodeRule::TE && te_knobs().zg == ZeroGlobalRule::NONE && te_knobs().yclamp == YClamp::NONE &&
                  te_knobs().e2m1 == E2M1Encoder::HW,
              "te's element path: y = RN(x * factor), no y clamp, the hardware encoder");

// The packed codes of 16 values (read through `value(i)`) under one block's encoding.
template <bool kTe, class Value>
__device__ __forceinline__ uint2 encode16(const Profile& p, const ElementEncoder& e, Value value) {
  std::uint32_t lo = 0, hi = 0;
  // te's element path (multiply, no y clamp, hardware encoder) is encode_element with its knob
  // switches resolved once per block instead of once per element, and e2m1_hw by binary32
  // arithmetic (device/kernels/e2m1_arith.cuh); the bits are the same. It is unrolled; the generic path
  // is not, which keeps the kernel small for the instruction cache.
  if (kTe || (e.op == ElementEncoder::Op::MUL && p.yclamp == YClamp::NONE && p.e2m1 == E2M1Encoder::HW)) {
    lo = e2m1x8_hw([&](int i) { return mul_rn(value(i), e.factor); });
    hi = e2m1x8_hw([&](int i) { return mul_rn(value(i + 8), e.factor); });
  } else {
#pragma unroll 1
    for (int i = 0; i < 8; ++i) {
      lo |= std::uint32_t(encode_element(p, e, value(i))) << (4 * i);
      hi |= std::uint32_t(encode_element(p, e, value(i + 8))) << (4 * i);
    }
  }
  return make_uint2(lo, hi);
}

// What a kernel needs of QuantizeParams' seed and offset: the round keys of the seed's key and the
// offset. The tile and rowwise kernels take it as a parameter (sr_stream on the host), so that a
// round's key is an operand from the parameter bank rather than two uniform additions.
struct SrStream {
  PhiloxRoundKeys keys;
  std::uint64_t offset = 0;
};
__host__ __device__ inline SrStream sr_stream(const QuantizeParams& q) { return {philox_round_keys(sr_key(q.seed)), q.offset}; }

// The draw of a block (§3.18.3).
__device__ __forceinline__ uint4 philox_draw(const SrStream& sr, SrDirection dir, std::uint64_t block) {
  const PhiloxCounter c = sr_counter(sr.offset, dir, block);
  return philox4x32_10_rounds(make_uint4(c.x, c.y, c.z, c.w), sr.keys);
}

// The same block under stochastic rounding: one Philox draw for the block's stored index, as
// §3.18.3 assigns it.
template <bool kTe, class Value>
__device__ __forceinline__ uint2 encode16_sr(const Profile& p, const ElementEncoder& e, Value value, const SrStream& sr,
                                             SrDirection dir, std::uint64_t block) {
  const uint4 o = philox_draw(sr, dir, block);
  // te's element path (multiply, no y clamp): sr_e2m1 by binary32 arithmetic, the same bits.
  if (kTe || (e.op == ElementEncoder::Op::MUL && p.yclamp == YClamp::NONE)) {
    return make_uint2(e2m1x8_sr([&](int i) { return mul_rn(value(i), e.factor); }, o.x, o.y),
                      e2m1x8_sr([&](int i) { return mul_rn(value(i + 8), e.factor); }, o.z, o.w));
  }
  const PhiloxCounter draw{o.x, o.y, o.z, o.w};
  std::uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    lo |= std::uint32_t(encode_element_sr(p, e, value(i), sr_byte(draw, i))) << (4 * i);
    hi |= std::uint32_t(encode_element_sr(p, e, value(i + 8), sr_byte(draw, i + 8))) << (4 * i);
  }
  return make_uint2(lo, hi);
}

// [knob CAND] (§4.2.7): a block encoded as both candidates to nearest, with each one's error over
// the block (under stochastic rounding the kept candidate is then rounded stochastically).
struct Candidates {
  BlockEncoding map4, map6;
  uint2 codes4, codes6;
  float error4, error6;  // over the block: a 16x16 tile's choice sums its 16 blocks' (tile_error_of)
};

template <class Value>
__device__ __forceinline__ Candidates encode_candidates(const Profile& p, const GlobalScale& gs, float g, float A, Value value) {
  Candidates c{encode_block_map4(p, gs, g, A), encode_block(p, gs, g, A)};
  c.codes4 = encode16<false>(p, c.map4.encoder, value);
  c.codes6 = encode16<false>(p, c.map6.encoder, value);
  const auto error = [&](const BlockEncoding& b, uint2 codes) {
    const auto code = [codes](int i) { return std::uint8_t(((i < 8 ? codes.x : codes.y) >> (4 * (i % 8))) & 0xF); };
    return candidate_error(p.cand, block_decoder(p, gs, g, b.scale_byte), code, value);
  };
  c.error4 = error(c.map4, c.codes4);
  c.error6 = error(c.map6, c.codes6);
  return c;
}

}  // namespace nvfp4::device
