#include "reference/error.h"

namespace nvfp4 {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::E_RANK:
      return "E_RANK";
    case ErrorCode::E_DIM16_K:
      return "E_DIM16_K";
    case ErrorCode::E_DIM16_M:
      return "E_DIM16_M";
    case ErrorCode::E_EVEN:
      return "E_EVEN";
    case ErrorCode::E_DTYPE:
      return "E_DTYPE";
    case ErrorCode::E_DATA_SHAPE:
      return "E_DATA_SHAPE";
    case ErrorCode::E_SCALE_SHAPE:
      return "E_SCALE_SHAPE";
    case ErrorCode::E_AMAX_SHAPE:
      return "E_AMAX_SHAPE";
    case ErrorCode::E_SHARD:
      return "E_SHARD";
    case ErrorCode::E_GEMM_K:
      return "E_GEMM_K";
    case ErrorCode::E_GROUPS:
      return "E_GROUPS";
    case ErrorCode::E_UNSUPPORTED:
      return "E_UNSUPPORTED";
  }
  return "E_UNKNOWN";
}

}  // namespace nvfp4
