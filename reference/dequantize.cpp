#include "reference/dequantize.h"

#include "reference/error.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4 {

FloatMatrix dequantize(const ByteMatrix& data, const ByteMatrix& scale, const FloatVector& amax, const Profile& p,
                       const DequantizeSteps& steps) {
  const std::size_t M = data.shape(0), K = 2 * data.shape(1);
  if (K % 16) fail("dequantize", ErrorCode::E_DIM16_K, "K={} is not a multiple of 16", K);
  if (scale.shape(0) != std::size_t(scale_rows(M)) || scale.shape(1) != std::size_t(scale_cols(K)))
    fail("dequantize", ErrorCode::E_SCALE_SHAPE, "scale is [{}, {}], expected [{}, {}] for data [{}, {}]", scale.shape(0),
         scale.shape(1), scale_rows(M), scale_cols(K), M, K / 2);
  if (amax.size() != 1 && amax.size() != M)
    fail("dequantize", ErrorCode::E_AMAX_SHAPE, "amax has {} values, expected 1 or M={}", amax.size(), M);
  FloatMatrix out = xt::empty<float>({M, K});
  for (std::size_t r = 0; r < M; ++r) {
    const float g = amax.size() == 1 ? amax(0) : amax(r);
    const GlobalScale gs = global_scale(p.gs, g);
    for (std::size_t j = 0; j < K / 16; ++j) {
      const float sf = steps.scale_decode ? steps.scale_decode(scale(r, j)) : scale_value(p, scale(r, j));
      const BlockDecoder d = steps.encode_scale ? BlockDecoder{mul_rn(sf, gs.S)} : block_decoder_of(p, gs, g, sf);
      for (std::size_t c = 16 * j; c < 16 * j + 16; ++c) out(r, c) = decode_element(d, nibble_at(data(r, c / 2), c % 2));
    }
  }
  return out;
}

}  // namespace nvfp4
