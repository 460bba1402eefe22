#include "reference/scale_layout.h"

#include "reference/error.h"
#include "reference/layout.h"

namespace nvfp4 {
namespace {

void check_padded(const ByteMatrix& s, const char* op) {
  if (s.shape(0) % 128 || s.shape(1) % 4)
    fail(op, ErrorCode::E_SCALE_SHAPE, "scale matrix [{}, {}] is not padded to [multiple of 128, multiple of 4]", s.shape(0),
         s.shape(1));
}

}  // namespace

ByteMatrix swizzle_scales(const ByteMatrix& compact) {
  check_padded(compact, "swizzle");
  ByteMatrix out = xt::empty<std::uint8_t>(compact.shape());
  const std::int64_t cols = compact.shape(1);
  for (std::size_t r = 0; r < compact.shape(0); ++r)
    for (std::size_t c = 0; c < compact.shape(1); ++c) out.data()[swizzled_offset(r, c, cols)] = compact(r, c);
  return out;
}

ByteMatrix unswizzle_scales(const ByteMatrix& swizzled) {
  check_padded(swizzled, "unswizzle");
  ByteMatrix out = xt::empty<std::uint8_t>(swizzled.shape());
  const std::int64_t cols = swizzled.shape(1);
  for (std::size_t r = 0; r < swizzled.shape(0); ++r)
    for (std::size_t c = 0; c < swizzled.shape(1); ++c) out(r, c) = swizzled.data()[swizzled_offset(r, c, cols)];
  return out;
}

}  // namespace nvfp4
