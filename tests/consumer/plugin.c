/* A plugin built against the installed package (nvfp4verify::plugin_abi): the ABI's header
 * compiles as C99 with the installed dlpack. It declares amax_global and rejects every case. */
#include <stdio.h>

#include "nvfp4_verify/plugin.h"

int nvfp4_plugin_abi_version(void) { return NVFP4_PLUGIN_ABI_VERSION; }

const char* nvfp4_plugin_declaration(void) { return "{\"worker\": \"consumer\", \"implements\": [{\"op\": \"amax_global\"}]}"; }

int nvfp4_plugin_run(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs,
                     nvfp4_output_allocator allocate, void* allocator_ctx, nvfp4_plugin_error* error) {
  (void)params_json, (void)inputs, (void)n_inputs, (void)allocate, (void)allocator_ctx;
  snprintf(error->code, sizeof error->code, "E_UNSUPPORTED");
  snprintf(error->message, sizeof error->message, "%s: the consumer's plugin runs nothing", op);
  return NVFP4_PLUGIN_REJECTED;
}
