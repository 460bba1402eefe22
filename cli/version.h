// What `nvfp4-verify --version` prints: the version (the one of CMakeLists.txt's project(), shared
// by the Python package, the CMake package and the wheel), the git revision or "release", and the
// CUDA architectures the device code was compiled for.
#pragma once

#include <string>

namespace nvfp4::cli {

// "nvfp4-verify 0.1.0 (git 2b0e995e1f2a, CUDA sm_90 sm_100a sm_120)"
std::string version_line();

}  // namespace nvfp4::cli
