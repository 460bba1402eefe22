// The skip guard of the GPU tests: without a usable CUDA device every test skips and says why.
#pragma once

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "device/backend/device_backend.h"

namespace nvfp4 {

// Why no CUDA device can be used here ("no CUDA device: ..."), asked once; nullopt when one can.
inline const std::optional<std::string>& gpu_unavailable_reason() {
  static const std::optional<std::string> reason = device::device_unavailable_reason();
  return reason;
}

}  // namespace nvfp4

#define REQUIRE_GPU() \
  if (const auto& gpu_reason_ = ::nvfp4::gpu_unavailable_reason()) GTEST_SKIP() << "GPU test skipped: " << *gpu_reason_
