/* An example nvfp4-verify plugin in plain C99: the global amax of an F32 matrix under the `te`
 * profile (docs/NUMERICS.md §3.1, NaN rule IGNORE). Copy it, replace run_amax_global with your
 * kernel's host wrapper, and list what it runs in the declaration. Build and run it against the
 * reference (docs/spec/plugin-abi.md):
 *
 *   cc -std=c99 -O2 -shared -fPIC -I PREFIX/include amax_plugin.c -o libamax_plugin.so -lm
 *   nvfp4-verify fuzz --backends reference,plugin --plugin ./libamax_plugin.so --time 10s
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nvfp4_verify/plugin.h"

/* The harness sends only cases inside this declaration: amax_global with profile "te" and an F32
 * input. It still rejects anything else cleanly, as a plugin must. */
static const char kDeclaration[] =
    "{\"worker\": \"example amax_global (C)\","
    " \"implements\": [{\"op\": \"amax_global\", \"params\": {\"profile\": [\"te\"]}, \"dtype\": [\"F32\"]}]}";

int nvfp4_plugin_abi_version(void) { return NVFP4_PLUGIN_ABI_VERSION; }

const char* nvfp4_plugin_declaration(void) { return kDeclaration; }

static int reject(nvfp4_plugin_error* error, const char* code, const char* message) {
  snprintf(error->code, sizeof error->code, "%s", code);
  snprintf(error->message, sizeof error->message, "%s", message);
  return NVFP4_PLUGIN_REJECTED;
}

/* True when params_json's "profile" is "te". The host writes every parameter as JSON; this
 * operation has only "profile", whose value is a plain string. */
static int profile_is_te(const char* params_json) {
  const char* p = strstr(params_json, "\"profile\"");
  if (!p) return 0;
  p += strlen("\"profile\"");
  while (*p == ' ' || *p == ':') ++p;
  return strncmp(p, "\"te\"", 4) == 0;
}

/* max |x| over the matrix, NaN elements ignored, +0 when there is no other element. */
static float run_amax_global(const float* x, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float a = fabsf(x[i]);
    if (a > amax) amax = a; /* false for NaN, so a NaN never contributes */
  }
  return amax;
}

int nvfp4_plugin_run(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs,
                     nvfp4_output_allocator allocate, void* allocator_ctx, nvfp4_plugin_error* error) {
  if (strcmp(op, "amax_global") != 0) return reject(error, "E_UNSUPPORTED", "this plugin runs amax_global only");
  if (!profile_is_te(params_json)) return reject(error, "E_UNSUPPORTED", "this plugin runs the te profile only");
  const nvfp4_tensor* x = NULL;
  for (int i = 0; i < n_inputs; ++i)
    if (strcmp(inputs[i].name, "x") == 0) x = &inputs[i];
  if (!x) return reject(error, "E_UNSUPPORTED", "no input x");
  /* The reference's order of checks: the rank first, then the dtype. */
  if (x->tensor.ndim != 2) return reject(error, "E_RANK", "x must be a matrix");
  if (strcmp(x->dtype, "F32") != 0) return reject(error, "E_DTYPE", "this plugin reads F32 only");

  const int64_t n = x->tensor.shape[0] * x->tensor.shape[1];
  const float amax = run_amax_global((const float*)((const char*)x->tensor.data + x->tensor.byte_offset), n);

  const int64_t shape[1] = {1};
  float* out = (float*)allocate(allocator_ctx, "amax", "F32", 1, shape);
  if (!out) {
    snprintf(error->message, sizeof error->message, "the host refused the output");
    return NVFP4_PLUGIN_FAILED;
  }
  out[0] = amax;
  return NVFP4_PLUGIN_OK;
}
