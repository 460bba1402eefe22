// The device backend (device/backend/device_backend.h) behind the plugin ABI (include/nvfp4_verify/plugin.h):
// libnvfp4_device_plugin.so. Loaded like any user's plugin, it checks the loader and the ABI
// against kernels already known to equal the reference: its outputs must equal DeviceBackend's
// bit for bit (tests/plugin_device_test.cpp).
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cases/declaration.h"
#include "cases/registry.h"
#include "device/backend/device_backend.h"
#include "device/plugin/abi_case.h"

namespace nvfp4::device {
namespace {

using nlohmann::json;

// Created at the first case, so that loading the plugin needs no GPU.
DeviceBackend& backend() {
  static const std::unique_ptr<DeviceBackend> b = std::make_unique<DeviceBackend>();
  return *b;
}

// Every operation the kernels run, each parameter declared "*" (any value): the plugin is built
// with the registry, so no parameter can be newer than it.
const std::string& declaration() {
  static const std::string text = [] {
    json implements = json::array();
    for (const DeviceRow& row : device_runners()) {
      json params = json::object();
      for (const cases::ParamSpec& p : cases::find_operation(row.op)->params)
        params[std::string(p.name)] = std::string(cases::Declaration::kAnyValue);
      implements.push_back({{"op", row.op}, {"params", std::move(params)}});
    }
    return json{{"worker", "nvfp4-verify " NVFP4_VERSION " device kernels"}, {"implements", implements}}.dump();
  }();
  return text;
}

}  // namespace
}  // namespace nvfp4::device

int nvfp4_plugin_abi_version(void) { return NVFP4_PLUGIN_ABI_VERSION; }

const char* nvfp4_plugin_declaration(void) { return nvfp4::device::declaration().c_str(); }

int nvfp4_plugin_run(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs,
                     nvfp4_output_allocator allocate, void* allocator_ctx, nvfp4_plugin_error* error) {
  return nvfp4::device::plugin::run_case(op, params_json, inputs, n_inputs, allocate, allocator_ctx, error,
                                         [](const nvfp4::cases::Case& c) { return nvfp4::device::backend().run(c); });
}
