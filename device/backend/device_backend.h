// The GPU kernels as a backend: uploads a case's inputs, poisons every output buffer, runs the
// kernels and downloads the outputs.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

#include "cases/case.h"

namespace nvfp4::device {

// Why no CUDA device can be used here ("no CUDA device: ..."), or nullopt when one can.
std::optional<std::string> device_unavailable_reason();
// The number of CUDA devices (0 when none can be used).
int device_count();

// One operation's kernels: uploads the case's inputs, poisons the outputs, launches, downloads.
struct DeviceRow {
  std::string_view op;
  cases::TensorMap (*run)(const cases::Case& c, cudaStream_t stream);
};
// Every registry operation without a no_device_reason has a row (tests/registry_test.cpp).
std::span<const DeviceRow> device_runners();

class DeviceBackend : public cases::Backend {
 public:
  // Runs on GPU `device`; throws BackendUnavailable with device_unavailable_reason(), or when
  // there is no such GPU.
  explicit DeviceBackend(int device = 0);
  ~DeviceBackend() override;
  DeviceBackend(const DeviceBackend&) = delete;
  DeviceBackend& operator=(const DeviceBackend&) = delete;

  std::string_view name() const override { return "device"; }
  cases::TensorMap run(const cases::Case& c) override;

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace nvfp4::device
