// Host tensor types of the reference: thin names over xtensor containers.
#pragma once

#include <cstdint>

#include <xtensor/xtensor.hpp>

namespace nvfp4 {

using FloatMatrix = xt::xtensor<float, 2>;        // high-precision values, exact binary32
using ByteMatrix = xt::xtensor<std::uint8_t, 2>;  // packed E2M1 data or E4M3 scale bytes
using FloatVector = xt::xtensor<float, 1>;        // amax values

}  // namespace nvfp4
