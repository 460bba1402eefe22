#include "reference/transpose.h"

#include "reference/e2m1.h"
#include "reference/error.h"
#include "reference/layout.h"

namespace nvfp4 {

ByteMatrix transpose_packed(const ByteMatrix& in) {
  const std::size_t M = in.shape(0), K = 2 * in.shape(1);
  if (M % 2) fail("transpose_packed", ErrorCode::E_EVEN, "M={} is odd", M);
  ByteMatrix out = xt::empty<std::uint8_t>({K, M / 2});
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t j = 0; j < M / 2; ++j)
      out(k, j) = pack_nibbles(nibble_at(in(2 * j, k / 2), k % 2), nibble_at(in(2 * j + 1, k / 2), k % 2));
  return out;
}

ByteMatrix transpose_scales_2d(const ByteMatrix& in, std::size_t M, std::size_t K) {
  const std::size_t rows = scale_rows(M), cols = scale_cols(K);
  if (in.shape(0) != rows || in.shape(1) != cols)
    fail("transpose_scales_2d", ErrorCode::E_SCALE_SHAPE, "scale is [{}, {}], expected [{}, {}] for M={}, K={}", in.shape(0),
         in.shape(1), rows, cols, M, K);
  ByteMatrix out = xt::zeros<std::uint8_t>({std::size_t(scale_rows(K)), std::size_t(scale_cols(M))});
  for (std::size_t k = 0; k < K / 16 * 16; ++k)  // rows of a partial last tile stay 0x00 (§3.14)
    for (std::size_t i = 0; i < M / 16; ++i) out(k, i) = in(16 * i, k / 16);
  return out;
}

}  // namespace nvfp4
