// Distances in units in the last place (ULPs) between two values of one floating-point format
// (F32, BF16, F16): the tolerance of `--compare ulp`, which only GEMM outputs get (NUMERICS.md
// §3.20.2: cuBLASLt's accumulation is unspecified, so only its distance to EXACT can be judged).
//
// Every non-NaN value has an ordinal on the format's ordered integer line: its magnitude bits,
// negated when the sign is set. Neighbouring values are one apart, +0 and -0 are both 0, and +inf
// is the next value after the largest finite one (its magnitude bits follow them). The distance is
// the difference of the ordinals; a NaN has no ordinal.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "io/safetensors.h"

namespace nvfp4::compare {

// The distance of a NaN to a non-NaN: larger than every distance between two values.
inline constexpr std::uint64_t kUlpNan = std::numeric_limits<std::uint64_t>::max();

// F32, BF16 and F16: the formats ULP distances are defined for.
bool has_ulps(io::DType dtype);

// The value's position on the ordered line, nullopt for a NaN. `bits` holds the value's bits in
// its low 16 or 32 bits. Throws std::invalid_argument for a dtype without ULPs.
std::optional<std::int64_t> ulp_ordinal(io::DType dtype, std::uint32_t bits);

// The bits of the value at `ordinal` (the inverse of ulp_ordinal; 0 gives +0). Throws
// std::out_of_range beyond ±inf.
std::uint32_t ulp_bits(io::DType dtype, std::int64_t ordinal);

// |ordinal(a) - ordinal(b)|; 0 when both are NaN, kUlpNan when exactly one is.
std::uint64_t ulp_distance(io::DType dtype, std::uint32_t a, std::uint32_t b);

// The value of `bits`, exactly, for printing.
double ulp_value(io::DType dtype, std::uint32_t bits);

}  // namespace nvfp4::compare
