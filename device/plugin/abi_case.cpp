#include "device/plugin/abi_case.h"

#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cases/registry.h"
#include "reference/error.h"

namespace nvfp4::device::plugin {
namespace {

using nlohmann::json;

// Copies s into one of nvfp4_plugin_error's fields, truncated and NUL-terminated.
void put(char* field, std::size_t size, std::string_view s) {
  const std::size_t n = std::min(s.size(), size - 1);
  std::memcpy(field, s.data(), n);
  field[n] = '\0';
}

// A copy of one input (host memory, row-major; strides NULL or those of a contiguous tensor).
io::Tensor tensor_of(const nvfp4_tensor& v) {
  const char* name = v.name ? v.name : "(unnamed)";
  const std::optional<io::DType> dtype = io::dtype_from_name(v.dtype ? v.dtype : "");
  if (!dtype) throw io::FormatError(fmt::format("input '{}' has unknown dtype '{}'", name, v.dtype ? v.dtype : "NULL"));
  const DLTensor& t = v.tensor;
  if (t.device.device_type != kDLCPU) throw io::FormatError(fmt::format("input '{}' is not in host memory", name));
  io::Tensor out{*dtype, std::vector<std::int64_t>(t.shape, t.shape + t.ndim), {}};
  std::int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (out.shape[i] < 0) throw io::FormatError(fmt::format("input '{}' has a negative dimension", name));
    if (t.strides && out.shape[i] > 1 && t.strides[i] != stride)
      throw io::FormatError(fmt::format("input '{}' is not contiguous and row-major", name));
    stride *= out.shape[i];
  }
  const auto* data = static_cast<const std::uint8_t*>(t.data) + t.byte_offset;
  return io::make_tensor(*dtype, out.shape, {data, std::size_t(out.numel()) * io::dtype_size(*dtype)});
}

void write_outputs(const cases::TensorMap& outputs, nvfp4_output_allocator allocate, void* ctx) {
  for (const auto& [name, t] : outputs) {
    const std::string dtype(io::dtype_name(t.dtype));
    void* p = allocate(ctx, name.c_str(), dtype.c_str(), int(t.shape.size()), t.shape.data());
    // The host has recorded why, and reports it whatever run returns.
    if (!p) throw std::runtime_error(fmt::format("the host refused output '{}'", name));
    if (!t.bytes.empty()) std::memcpy(p, t.bytes.data(), t.bytes.size());
  }
}

// e.what() without the "op: CODE: " that nvfp4::Error puts first (the host puts it back).
std::string detail(const Error& e, const char* op) {
  const std::string what = e.what();
  const std::string prefix = fmt::format("{}: {}: ", op, error_code_name(e.code()));
  return what.starts_with(prefix) ? what.substr(prefix.size()) : what;
}

}  // namespace

cases::Case case_of(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs) {
  cases::Case c = cases::make_case(op);
  const cases::OperationSpec& spec = cases::operation(op);
  const json params = json::parse(params_json);  // named: items() refers into it
  for (const auto& [name, value] : params.items()) {
    const cases::ParamSpec* p = spec.param(name);
    if (!p) fail(op, ErrorCode::E_UNSUPPORTED, "no parameter '{}'", name);
    c.params.set(name, cases::param_from_json(spec, *p, value));
  }
  for (int i = 0; i < n_inputs; ++i) c.inputs[inputs[i].name ? inputs[i].name : ""] = tensor_of(inputs[i]);
  return c;
}

int run_case(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs, nvfp4_output_allocator allocate,
             void* allocator_ctx, nvfp4_plugin_error* error, const std::function<cases::TensorMap(const cases::Case&)>& run) {
  try {
    write_outputs(run(case_of(op, params_json, inputs, n_inputs)), allocate, allocator_ctx);
    return NVFP4_PLUGIN_OK;
  } catch (const cases::BackendUnavailable& e) {
    put(error->message, sizeof error->message, e.what());
    return NVFP4_PLUGIN_UNAVAILABLE;
  } catch (const Error& e) {
    put(error->code, sizeof error->code, error_code_name(e.code()));
    put(error->message, sizeof error->message, detail(e, op));
    return NVFP4_PLUGIN_REJECTED;
  } catch (const io::FormatError& e) {  // a malformed input: rejected, as the backends would
    put(error->message, sizeof error->message, e.what());
    return NVFP4_PLUGIN_REJECTED;
  } catch (const cases::UncodedRejection& e) {  // a case this plugin cannot take: agrees with any rejection
    put(error->message, sizeof error->message, e.what());
    return NVFP4_PLUGIN_REJECTED;
  } catch (const nlohmann::json::exception& e) {
    put(error->message, sizeof error->message, fmt::format("params_json: {}", e.what()));
    return NVFP4_PLUGIN_REJECTED;
  } catch (const std::exception& e) {  // a CUDA error, a refused output: no answer for this case
    put(error->message, sizeof error->message, e.what());
    return NVFP4_PLUGIN_FAILED;
  } catch (...) {
    put(error->message, sizeof error->message, "an unknown exception");
    return NVFP4_PLUGIN_FAILED;
  }
}

}  // namespace nvfp4::device::plugin
