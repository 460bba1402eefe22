// The formula steps of the fault catalogue (docs/spec/faults.md): each is one step of the
// specification done the way a shipped kernel did it wrong. Host only: the catalogue
// (cases/fault_catalogue.cpp) plugs them into the reference's QuantizeSteps and DequantizeSteps.
#pragma once

#include <cstdint>

#include "reference/formulas.h"
#include "reference/tensor.h"

namespace nvfp4::faults {

// ---- E2M1 rounding of y (each keeps the profile's encoder `e` wherever it does not deviate) ----

// e2m1-ties-away: the seven ties go to the neighbour away from zero.
std::uint8_t e2m1_ties_away(E2M1Encoder e, float y);
// e2m1-toward-zero: the largest grid value not above |y| (6 at and above 6).
std::uint8_t e2m1_toward_zero(E2M1Encoder e, float y);
// e2m1-no-saturation: no bin above 6, so |y| > 6 takes the code of a zero of y's sign.
std::uint8_t e2m1_no_saturation(E2M1Encoder e, float y);

// ---- E4M3 ----

// e4m3-ties-up: the profile's cast, except that a tie goes to the larger magnitude.
std::uint8_t e4m3_ties_up(E4M3Cast cast, float t);
// e4m3-subnormal-as-normal: a decoder without the exponent-0 branch: a byte with exponent field
// 0 (zero included) decodes as (1 + m/8) * 2^-7.
float e4m3_decode_subnormal_as_normal(std::uint8_t b);

// ---- global amax and scale ----

// amax-signed-max: the reduction step of max(0, max x); NaN elements follow the amax rule.
float amax_signed_step(AmaxRule rule, float acc, float x);
// gs-no-zero-guard: the profile's global scale, except that g == 0 keeps RN(2688/g) capped.
GlobalScale global_scale_no_zero_guard(GlobalScaleRule rule, float g);
// gs-reciprocal: the encode and decode global scales exchanged.
GlobalScale global_scale_reciprocal(GlobalScaleRule rule, float g);

// ---- blocks ----

// block-amax-span-32: each block amax of a [rows, K/16] matrix becomes the larger of its aligned
// pair's (blocks 2i and 2i + 1; a last odd block keeps its own).
void block_amax_span_32(AmaxRule rule, FloatMatrix& block_amax);

// ---- layout ----

// swizzle-row-order: the 128x4 layout with the rows of each 128-row tile in plain order.
ByteMatrix swizzle_scales_plain_rows(const ByteMatrix& compact);
ByteMatrix unswizzle_scales_plain_rows(const ByteMatrix& swizzled);
// nibble-order-swapped: every byte with its two nibbles exchanged.
ByteMatrix swap_nibbles(const ByteMatrix& data);
// gemm-scale-per-32: compact scales whose odd columns repeat the even column before them.
ByteMatrix scales_per_32(const ByteMatrix& compact);

// ---- Hadamard transform ----

// rht-mask-bit-order: the 16-bit sign mask with its bits reversed.
std::uint16_t reverse_mask_bits(std::uint16_t mask);
// rht-missing-norm: the transform without its 1/4: the transform of 4x with the sum rule `sum`
// (exact for every input below 2^126 in magnitude; larger ones overflow to infinity either way).
FloatMatrix rht_without_norm(const FloatMatrix& x, std::uint16_t mask, RhtSum sum);
// rht-fp32-output: the binary32 sums (RN(exact), or the tensor-core model's), not rounded on to BF16.
FloatMatrix rht_binary32(const FloatMatrix& x, std::uint16_t mask, RhtSum sum);

}  // namespace nvfp4::faults
