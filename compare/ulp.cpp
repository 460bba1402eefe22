#include "compare/ulp.h"

#include <stdexcept>
#include <string>

#include "reference/arith.h"
#include "reference/half_float.h"

namespace nvfp4::compare {
namespace {

// Sign bit, and the magnitude bits of +inf (all above are NaNs).
struct Layout {
  std::uint32_t sign, inf;
};

Layout layout(io::DType dtype) {
  switch (dtype) {
    case io::DType::F32:
      return {0x80000000u, 0x7F800000u};
    case io::DType::BF16:
      return {0x8000u, 0x7F80u};
    case io::DType::F16:
      return {0x8000u, 0x7C00u};
    default:
      break;
  }
  throw std::invalid_argument("ULP distances are defined for F32, BF16 and F16, not " + std::string(io::dtype_name(dtype)));
}

}  // namespace

bool has_ulps(io::DType dtype) { return dtype == io::DType::F32 || dtype == io::DType::BF16 || dtype == io::DType::F16; }

std::optional<std::int64_t> ulp_ordinal(io::DType dtype, std::uint32_t bits) {
  const Layout l = layout(dtype);
  const std::uint32_t magnitude = bits & (l.sign - 1);
  if (magnitude > l.inf) return std::nullopt;
  return bits & l.sign ? -std::int64_t(magnitude) : std::int64_t(magnitude);
}

std::uint32_t ulp_bits(io::DType dtype, std::int64_t ordinal) {
  const Layout l = layout(dtype);
  const std::uint64_t magnitude = ordinal < 0 ? std::uint64_t(-ordinal) : std::uint64_t(ordinal);
  if (magnitude > l.inf) throw std::out_of_range("ULP ordinal " + std::to_string(ordinal) + " lies beyond infinity");
  return ordinal < 0 ? l.sign | std::uint32_t(magnitude) : std::uint32_t(magnitude);
}

std::uint64_t ulp_distance(io::DType dtype, std::uint32_t a, std::uint32_t b) {
  const std::optional<std::int64_t> x = ulp_ordinal(dtype, a), y = ulp_ordinal(dtype, b);
  if (!x || !y) return !x && !y ? 0 : kUlpNan;
  return *x > *y ? std::uint64_t(*x - *y) : std::uint64_t(*y - *x);
}

double ulp_value(io::DType dtype, std::uint32_t bits) {
  switch (dtype) {
    case io::DType::BF16:
      return bf16_to_float(std::uint16_t(bits));
    case io::DType::F16:
      return half_to_float(std::uint16_t(bits));
    default:
      layout(dtype);  // throws for the dtypes without ULPs
  }
  return float_of(bits);
}

}  // namespace nvfp4::compare
