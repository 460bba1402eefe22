// The plugin side of the ABI (include/nvfp4_verify/plugin.h) for the project's C++ plugins: a case
// from nvfp4_plugin_run's arguments, its outputs handed to the host's allocator, and every
// exception turned into an NVFP4_PLUGIN_* result (no exception may leave a C entry point).
#pragma once

#include <functional>

#include "cases/case.h"
#include "nvfp4_verify/plugin.h"

namespace nvfp4::device::plugin {

// The case the arguments describe, read as a worker's run request is (external/wire.h): a
// parameter the host leaves out keeps its default. Throws nvfp4::Error, io::FormatError or a JSON
// exception for malformed arguments.
cases::Case case_of(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs);

// Runs `run` on the case and writes its outputs through the allocator: NVFP4_PLUGIN_OK, or the
// result its exception maps to, with `error` filled (BackendUnavailable: UNAVAILABLE;
// nvfp4::Error: REJECTED with its code; io::FormatError, UncodedRejection, a JSON error: REJECTED
// without one; anything else: FAILED).
int run_case(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs, nvfp4_output_allocator allocate,
             void* allocator_ctx, nvfp4_plugin_error* error, const std::function<cases::TensorMap(const cases::Case&)>& run);

}  // namespace nvfp4::device::plugin
