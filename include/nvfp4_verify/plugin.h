/* The nvfp4-verify plugin ABI, version 1: a shared library that runs NVFP4 operations for the
 * harness (`--backends reference,plugin --plugin ./libmine.so`), loaded with dlopen. It is the
 * in-process twin of the worker protocol (docs/spec/worker-protocol.md): the same declaration, the same
 * parameter encoding, the same rejections. The whole contract is in docs/spec/plugin-abi.md.
 *
 * Pure C99; tensors are DLPack `DLTensor`s over host buffers (dlpack 0.6, Debian's libdlpack-dev),
 * each with its safetensors dtype name beside it, which is authoritative (dlpack 0.6 has no
 * float8 or bool codes). A plugin exports the three functions declared at the end. */
#ifndef NVFP4_VERIFY_PLUGIN_H_
#define NVFP4_VERIFY_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What nvfp4_plugin_abi_version() returns; the host loads only plugins of its own version. */
#define NVFP4_PLUGIN_ABI_VERSION 1

/* Exports an entry point even from a library built with -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define NVFP4_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define NVFP4_PLUGIN_EXPORT
#endif

/* One input tensor of a case, owned by the host and valid until nvfp4_plugin_run returns. */
typedef struct nvfp4_tensor {
  const char* name;  /* the registry's name: "x", "data", "scale", "w0", ... */
  const char* dtype; /* the safetensors dtype: "F32", "F16", "BF16", "U8", "I64", "F8_E4M3", ... */
  /* Read-only view: device kDLCPU, little-endian, row-major and contiguous (strides NULL),
   * byte_offset 0, data 256-byte aligned and never NULL (also for empty tensors). dtype.code and
   * .bits follow `dtype` (docs/spec/plugin-abi.md): F8_E4M3 and BOOL appear as kDLUInt, 8 bits. */
  DLTensor tensor;
} nvfp4_tensor;

/* Asks the host for an output tensor `name` of safetensors dtype `dtype` and shape
 * shape[0..ndim-1] (ndim 0: a scalar). Returns a host buffer of exactly numel * element-size
 * bytes to fill (row-major, little-endian, 256-byte aligned, non-NULL, pre-filled with 0xA5 so
 * that bytes left unwritten show), owned by the host and valid until nvfp4_plugin_run returns.
 * Returns NULL for a bad request (unknown dtype, a name asked for twice, a negative dimension):
 * the host then treats the case as a protocol fault whatever the plugin returns. */
typedef void* (*nvfp4_output_allocator)(void* allocator_ctx, const char* name, const char* dtype, int ndim, const int64_t* shape);

#define NVFP4_PLUGIN_CODE_SIZE 32
#define NVFP4_PLUGIN_MESSAGE_SIZE 1024

/* Why a run did not succeed. The host zero-fills it before each call; the plugin writes
 * NUL-terminated strings (truncated to fit). */
typedef struct nvfp4_plugin_error {
  /* NVFP4_PLUGIN_REJECTED only: "" or one of `nvfp4-verify ops --json`'s error_codes, e.g.
   * "E_DIM16_K". With a code the rejection agrees only with a reference rejection of that code;
   * without one it agrees with any reference rejection. */
  char code[NVFP4_PLUGIN_CODE_SIZE];
  char message[NVFP4_PLUGIN_MESSAGE_SIZE]; /* one line for people: "K=100 is not a multiple of 16" */
} nvfp4_plugin_error;

/* nvfp4_plugin_run's results. */
enum {
  NVFP4_PLUGIN_OK = 0,         /* every output was allocated and written */
  NVFP4_PLUGIN_REJECTED = 1,   /* the case is invalid for the operation (a worker's "ok": false) */
  NVFP4_PLUGIN_FAILED = 2,     /* this case failed without an answer (a kernel fault): a crash */
  NVFP4_PLUGIN_UNAVAILABLE = 3 /* the plugin cannot run any case here (no GPU): the run stops */
};

typedef int (*nvfp4_plugin_abi_version_fn)(void);
typedef const char* (*nvfp4_plugin_declaration_fn)(void);
typedef int (*nvfp4_plugin_run_fn)(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs,
                                   nvfp4_output_allocator allocate, void* allocator_ctx, nvfp4_plugin_error* error);

/* NVFP4_PLUGIN_ABI_VERSION, as compiled into the plugin. Called first, before anything else. */
NVFP4_PLUGIN_EXPORT int nvfp4_plugin_abi_version(void);

/* What the plugin implements: a JSON object {"worker": NAME, "implements": [...]} with the fields
 * of a worker's hello (docs/spec/worker-protocol.md). A parameter it does not name accepts only its
 * default; "*" accepts any value. The string stays valid while the library is loaded. */
NVFP4_PLUGIN_EXPORT const char* nvfp4_plugin_declaration(void);

/* Runs one case: operation `op` (a registry name), `params_json` (a JSON object holding every
 * parameter of the operation, encoded as in a worker's `run` message) and the input tensors.
 * Outputs are requested through `allocate(allocator_ctx, ...)`, one call per output tensor.
 * Returns one of the NVFP4_PLUGIN_* results, filling `error` unless it is NVFP4_PLUGIN_OK. The
 * host calls it from one thread at a time. */
NVFP4_PLUGIN_EXPORT int nvfp4_plugin_run(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs,
                                         nvfp4_output_allocator allocate, void* allocator_ctx, nvfp4_plugin_error* error);

#ifdef __cplusplus
}
#endif

#endif /* NVFP4_VERIFY_PLUGIN_H_ */
