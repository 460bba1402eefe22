// A plugin for the loader's tests (tests/plugin_test.cpp): its amax_global answers each profile
// with another way of failing, and built with FIXTURE_ABI_VERSION=999 it claims an ABI version
// the loader does not know.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "nvfp4_verify/plugin.h"

#ifndef FIXTURE_ABI_VERSION
#define FIXTURE_ABI_VERSION NVFP4_PLUGIN_ABI_VERSION
#endif

namespace {

int answer(nvfp4_plugin_error* error, int result, const char* code, const char* message) {
  std::snprintf(error->code, sizeof error->code, "%s", code);
  std::snprintf(error->message, sizeof error->message, "%s", message);
  return result;
}

}  // namespace

int nvfp4_plugin_abi_version(void) { return FIXTURE_ABI_VERSION; }

const char* nvfp4_plugin_declaration(void) { return R"({"worker": "loader fixture", "implements": [{"op": "amax_global"}]})"; }

int nvfp4_plugin_run(const char*, const char* params_json, const nvfp4_tensor*, int, nvfp4_output_allocator allocate,
                     void* allocator_ctx, nvfp4_plugin_error* error) {
  const std::string profile = nlohmann::json::parse(params_json).at("profile").get<std::string>();
  const std::int64_t one[1] = {1};
  if (profile == "te") return answer(error, NVFP4_PLUGIN_REJECTED, "", "rejected without a code");
  if (profile == "te-2.13") return answer(error, NVFP4_PLUGIN_REJECTED, "E_DIM16_K", "K=100 is not a multiple of 16");
  if (profile == "te-2.13-1d") return answer(error, NVFP4_PLUGIN_REJECTED, "E_NO_SUCH_CODE", "a code outside the contract");
  if (profile == "te-pyref") return answer(error, NVFP4_PLUGIN_FAILED, "", "the kernel faulted");
  if (profile == "torchao") return answer(error, NVFP4_PLUGIN_UNAVAILABLE, "", "no device here");
  if (profile == "torchao-1lvl") return 7;
  if (profile == "mslk") {  // an output the host cannot allocate, then success claimed all the same
    allocate(allocator_ctx, "amax", "F33", 1, one);
    return NVFP4_PLUGIN_OK;
  }
  // Any other profile: the output allocated and left as the host gave it (poisoned).
  return allocate(allocator_ctx, "amax", "F32", 1, one) ? NVFP4_PLUGIN_OK : NVFP4_PLUGIN_FAILED;
}
