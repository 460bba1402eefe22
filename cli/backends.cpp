#include "cli/backends.h"

#include <fmt/format.h>

#include "cli/commands.h"
#include "cases/metamorphic_backend.h"
#include "cases/reference_backend.h"
#if NVFP4_WITH_DEVICE
#include "device/device_backend.h"
#endif

namespace nvfp4::cli {

std::string device_unavailable() {
#if NVFP4_WITH_DEVICE
  return device::device_unavailable_reason().value_or("");
#else
  return "this build has no CUDA support (nvcc was not found or NVFP4_ENABLE_CUDA=OFF)";
#endif
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "reference") return std::make_unique<ReferenceBackend>();
  if (name == "metamorphic") return std::make_unique<MetamorphicBackend>();
  if (name == "device") {
    const std::string why = device_unavailable();
    if (!why.empty()) throw BackendUnavailable(why);
#if NVFP4_WITH_DEVICE
    return std::make_unique<device::DeviceBackend>();
#endif
  }
  throw UsageError(fmt::format("unknown backend '{}' (known: reference, metamorphic, device)", name));
}

std::pair<std::string, std::string> default_backends() {
  return {"reference", device_unavailable().empty() ? "device" : "metamorphic"};
}

std::pair<std::string, std::string> parse_backends(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos)
    throw UsageError(fmt::format("--backends '{}': expected two names separated by a comma, e.g. reference,device", text));
  std::pair<std::string, std::string> b{text.substr(0, comma), text.substr(comma + 1)};
  for (const std::string& n : {b.first, b.second})
    if (n != "reference" && n != "metamorphic" && n != "device")
      throw UsageError(fmt::format("--backends: unknown backend '{}' (known: reference, metamorphic, device)", n));
  return b;
}

}  // namespace nvfp4::cli
