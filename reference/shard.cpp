#include "reference/shard.h"

#include "reference/error.h"

namespace nvfp4 {

void validate_shard(std::string_view op, std::int64_t M, std::int64_t K, const Shard& s) {
  if (M < 0 || M % 16 != 0) fail(op, ErrorCode::E_DIM16_M, "M={} is not a multiple of 16", M);
  if (K < 0 || K % 16 != 0) fail(op, ErrorCode::E_DIM16_K, "K={} is not a multiple of 16", K);
  if (s.start < 0 || s.length < 0 || s.end() > M * K)
    fail(op, ErrorCode::E_SHARD, "shard [{}, {}) is not inside the {} elements of a {}x{} weight", s.start,
         s.start + s.length, M * K, M, K);
}

}  // namespace nvfp4
