#include "cli/version.h"

#include <fmt/format.h>

namespace nvfp4::cli {

extern const char kRevision[];  // generated at each build by cmake/revision.cmake

std::string version_line() {
  const std::string cuda =
      *NVFP4_CUDA_ARCHITECTURES ? fmt::format("CUDA {}", NVFP4_CUDA_ARCHITECTURES) : std::string("built without CUDA");
  return fmt::format("nvfp4-verify {} ({}, {})", NVFP4_VERSION, kRevision, cuda);
}

}  // namespace nvfp4::cli
