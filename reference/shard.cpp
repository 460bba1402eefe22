#include "reference/shard.h"

#include "reference/error.h"

namespace nvfp4 {

void validate_weight_dims(std::string_view op, std::int64_t M, std::int64_t K) {
  if (M < 0 || M % 16 != 0) fail(op, ErrorCode::E_DIM16_M, "M={} is not a multiple of 16", M);
  if (K < 0 || K % 16 != 0) fail(op, ErrorCode::E_DIM16_K, "K={} is not a multiple of 16", K);
}

void validate_shard_values(std::string_view op, const Shard& s, std::size_t values) {
  if (std::int64_t(values) != s.length)
    fail(op, ErrorCode::E_DATA_SHAPE, "the shard holds {} values; its range has {}", values, s.length);
}

void validate_shard(std::string_view op, std::int64_t M, std::int64_t K, const Shard& s) {
  validate_weight_dims(op, M, K);
  // M and K are case parameters, not tensor extents: bounded so that M * K cannot overflow.
  constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;
  if (M > kMaxDim || K > kMaxDim) fail(op, ErrorCode::E_SHARD, "a {}x{} weight: M and K are limited to 2^31", M, K);
  if (s.start < 0 || s.length < 0 || s.start > M * K || s.length > M * K - s.start)  // end() could overflow
    fail(op, ErrorCode::E_SHARD, "the shard of {} elements at {} is not inside the {} elements of a {}x{} weight", s.length,
         s.start, M * K, M, K);
}

}  // namespace nvfp4
