// The GPU kernels as a backend: uploads a case's inputs, poisons every output buffer, runs the
// kernels and downloads the outputs.
#pragma once

#include <optional>
#include <string>

#include <cuda_runtime_api.h>

#include "fuzz/case.h"

namespace nvfp4::device {

// Why no CUDA device can be used here ("no CUDA device: ..."), or nullopt when one can.
std::optional<std::string> device_unavailable_reason();

class DeviceBackend : public Backend {
 public:
  DeviceBackend();  // throws BackendUnavailable with device_unavailable_reason()
  ~DeviceBackend() override;
  DeviceBackend(const DeviceBackend&) = delete;
  DeviceBackend& operator=(const DeviceBackend&) = delete;

  std::string_view name() const override { return "device"; }
  TensorMap run(const Case& c) override;

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace nvfp4::device
