// Profile te's block encoding with its element factor read from a per-CTA table. Under te's knobs
// (EncodeRule::TE) the factor RN(1 / RN(sf * Sd)) depends only on the scale byte and the tensor's
// global scale, so a CTA computes the 256 possible factors once (256 divisions) instead of one
// division per block. The values are encode_block's (reference/formulas.h).
#pragma once

#include <cstdint>

#include "reference/formulas.h"
#include "reference/profile.h"

namespace nvfp4::device {

static_assert(te_knobs().enc == EncodeRule::TE && te_knobs().zg == ZeroGlobalRule::NONE,
              "te's factor depends on the scale byte and the global scale only");

// Fills table[0..255] (shared memory) with te's factor for each scale byte; `lane`/`lanes`: this
// thread's share. The caller synchronises before reading it.
__device__ __forceinline__ void fill_te_factor_table(float* table, const GlobalScale& gs, int lane, int lanes) {
  for (int sb = lane; sb < 256; sb += lanes) table[sb] = element_encoder(te_knobs(), gs, 0.0f, std::uint8_t(sb)).factor;
}

// encode_block(te_knobs(), gs, g, A) with the factor from the table.
__device__ __forceinline__ BlockEncoding te_block_encoding(const float* table, const GlobalScale& gs, float A) {
  const float t = block_scale_precast(te_knobs(), gs, A);
  const std::uint8_t sb = block_scale_byte(te_knobs(), t);
  return {t, sb, {ElementEncoder::Op::MUL, table[sb]}};
}

}  // namespace nvfp4::device
