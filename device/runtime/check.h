// Every CUDA call is checked; a failure throws with the call, file and line.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include "reference/exception.h"

namespace nvfp4::device {

class CudaError : public Exception {
 public:
  CudaError(cudaError_t code, const char* call, const char* file, int line)
      : Exception(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " + cudaGetErrorName(code) + " (" +
                  cudaGetErrorString(code) + ")"),
        code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

inline void check(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) throw CudaError(code, call, file, line);
}

}  // namespace nvfp4::device

#define NVFP4_CUDA_CHECK(call) ::nvfp4::device::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors surface here, execution errors at the next sync.
#define NVFP4_CUDA_CHECK_LAUNCH() NVFP4_CUDA_CHECK(cudaGetLastError())
