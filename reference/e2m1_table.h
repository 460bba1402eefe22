// e2m1_hw as a host lookup table over e2m1_table_index (reference/e2m1.h), built once from one
// representative input per entry. The CPU reference's block encoder reads it, and the exhaustive
// test (tests/formats_exhaustive_test.cpp) checks this very table on all 2^32 inputs; the kernels
// fill their device copies from the same representatives (device/kernels/e2m1_codes.cuh).
#pragma once

#include <array>
#include <cstdint>

#include "reference/e2m1.h"

namespace nvfp4 {

inline const std::array<std::uint8_t, kE2M1TableSize>& e2m1_hw_codes() {
  static const std::array<std::uint8_t, kE2M1TableSize> table = [] {
    std::array<std::uint8_t, kE2M1TableSize> t{};
    for (std::uint32_t i = 0; i < kE2M1TableSize; ++i) t[i] = e2m1_hw(e2m1_table_representative(i));
    return t;
  }();
  return table;
}

}  // namespace nvfp4
