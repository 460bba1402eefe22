// Backends by name, for the commands that compare two of them (replay, fuzz, gate).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cases/case.h"

namespace nvfp4::cli {

// "reference", "metamorphic", or "device" (throws BackendUnavailable without a usable GPU, or
// when this build has no CUDA). Throws UsageError for an unknown name.
std::unique_ptr<Backend> make_backend(std::string_view name);

// Why the device backend cannot run here, or "" when it can.
std::string device_unavailable();

// reference vs device when a GPU is usable, else reference vs metamorphic.
std::pair<std::string, std::string> default_backends();

// "A,B" -> {A, B}; throws UsageError unless exactly two known names.
std::pair<std::string, std::string> parse_backends(const std::string& text);

}  // namespace nvfp4::cli
