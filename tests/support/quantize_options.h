// QuantizeOptions in one expression, for tests.
#pragma once

#include "reference/quantize.h"

namespace nvfp4::test_support {

inline QuantizeOptions opts(const Profile& p, BlockShape b = BlockShape::k1D, Direction d = Direction::kBoth,
                            bool row_scaled = false) {
  QuantizeOptions o;
  o.profile = p;
  o.block = b;
  o.direction = d;
  o.row_scaled = row_scaled;
  return o;
}

}  // namespace nvfp4::test_support
