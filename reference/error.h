// Errors of NUMERICS.md §3.22. Messages name the operation, the code and the offending values,
// e.g. "quantize_1d: E_DIM16_K: K=100 is not a multiple of 16".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "reference/exception.h"

namespace nvfp4 {

enum class ErrorCode {
  E_RANK,
  E_DIM16_K,
  E_DIM16_M,
  E_EVEN,
  E_DTYPE,
  E_DATA_SHAPE,
  E_SCALE_SHAPE,
  E_AMAX_SHAPE,
  E_SHARD,
  E_GEMM_K,
  E_GROUPS,
  E_UNSUPPORTED,
};

std::string_view error_code_name(ErrorCode code);

// A contract rejection: an input the operation does not accept.
class Error : public InputError {
 public:
  Error(std::string_view op, ErrorCode code, std::string_view detail)
      : InputError(fmt::format("{}: {}: {}", op, error_code_name(code), detail)), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

template <class... Args>
[[noreturn]] void fail(std::string_view op, ErrorCode code, fmt::format_string<Args...> detail, Args&&... args) {
  throw Error(op, code, fmt::format(detail, std::forward<Args>(args)...));
}

}  // namespace nvfp4
