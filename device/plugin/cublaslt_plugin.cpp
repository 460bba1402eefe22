// libnvfp4_cublaslt_plugin.so: the vendor NVFP4 GEMM (cuBLASLt, what TransformerEngine runs) behind
// the plugin ABI (include/nvfp4_verify/plugin.h), for `--compare ulp` against EXACT
// (docs/guides/gemm-ulp.md) and, on Blackwell, for a bitwise comparison with the MMA mode of its
// tensor cores (NUMERICS.md §3.20.6; docs/guides/gemm.md, "Bitwise against cuBLASLt"). It declares
// the per-tensor product cuBLASLt computes in one call: no C, no bias, no row scaling, F32 or BF16
// output, and accumulation NVFP4_CUBLASLT_ACCUMULATION (default exact). Without a GPU, or on one
// without NVFP4 block-scaled GEMM (Hopper), its first case answers NVFP4_PLUGIN_UNAVAILABLE with
// the reason.
#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cases/gemm_case.h"
#include "device/plugin/abi_case.h"
#include "device/plugin/cublaslt_gemm.h"
#include "reference/layout.h"

namespace nvfp4::device::cublaslt {
namespace {

using nlohmann::json;

// exact: the harness measures cuBLASLt's distance to EXACT (`--compare ulp`); an MMA mode's name
// (mma-sm100 on sm_100, mma-sm120 on sm_120): its cases run without split-K, bitwise against the model.
std::string declared_accumulation() {
  const char* mode = std::getenv("NVFP4_CUBLASLT_ACCUMULATION");
  return mode && *mode ? mode : "exact";
}

const std::string& declaration() {
  static const std::string text = json{{"worker", "cuBLASLt NVFP4 GEMM (E2M1 x E2M1, VEC16_UE4M3 scales, TN, compute 32F)"},
                                       {"implements",
                                        {{{"op", "gemm"},
                                          {"params",
                                           {{"output_dtype", {"F32", "BF16"}},
                                            {"scale_layout", "*"},
                                            {"alpha", "*"},
                                            {"beta", {nullptr}},
                                            {"with_bias", {false}},
                                            {"row_scaled", {false}},
                                            {"accumulate", {false}},
                                            {"accumulation", {declared_accumulation()}}}}}}}}
                                      .dump();
  return text;
}

// The reference's shape rules, checked here so that cuBLASLt never sees a malformed operand; a
// case they reject is rejected without a code (it agrees with the reference's rejection, whatever
// its code).
void check_operand(const GemmOperand& x, const char* side, std::int64_t K) {
  const std::int64_t rows = std::int64_t(x.data.shape(0));
  if (2 * std::int64_t(x.data.shape(1)) != K || K % 16)
    throw cases::UncodedRejection(
        fmt::format("{}_data is [{}, {}]: K must be a common multiple of 16", side, rows, x.data.shape(1)));
  if (std::int64_t(x.scale.shape(0)) != scale_rows(rows) || std::int64_t(x.scale.shape(1)) != scale_cols(K / 16))
    throw cases::UncodedRejection(fmt::format("{}_scale is [{}, {}], expected [{}, {}]", side, x.scale.shape(0), x.scale.shape(1),
                                              scale_rows(rows), scale_cols(K / 16)));
  if (x.amax.size() != 1) throw cases::UncodedRejection(fmt::format("{}_amax holds {} values, not 1", side, x.amax.size()));
  // cuBLASLt reads scale bytes as UE4M3; what it makes of bit 7 is unverified (NUMERICS.md §3.20.3).
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < K / 16; ++j)
      if (x.scale(r, j) & 0x80)
        throw cases::UncodedRejection(
            fmt::format("{}_scale[{}, {}] = 0x{:02X} is negative: cuBLASLt reads scales as unsigned "
                        "UE4M3 (NUMERICS.md §3.20.3)",
                        side, r, j, x.scale(r, j)));
}

cases::TensorMap run(const cases::Case& c) {
  // Unavailable first: the run stops on its first case, whatever that case holds.
  if (const auto& why = nvfp4_gemm_unavailable()) throw cases::BackendUnavailable(*why);
  cases::GemmInputs in;
  cases::read_gemm_inputs(c, in);
  const std::int64_t K = 2 * std::int64_t(in.a.data.shape(1));
  check_operand(in.a, "a", K);
  check_operand(in.b, "b", K);
  const float alpha = in.options.alpha ? *in.options.alpha : gemm_alpha(1.0f, in.a.amax(0), in.b.amax(0));
  const bool one_chain = in.options.accumulation != GemmAccumulation::EXACT;
  return {{"d", nvfp4_gemm(in.a, in.b, alpha, cases::gemm_output_dtype(c), one_chain)}};
}

}  // namespace
}  // namespace nvfp4::device::cublaslt

int nvfp4_plugin_abi_version(void) { return NVFP4_PLUGIN_ABI_VERSION; }

const char* nvfp4_plugin_declaration(void) { return nvfp4::device::cublaslt::declaration().c_str(); }

int nvfp4_plugin_run(const char* op, const char* params_json, const nvfp4_tensor* inputs, int n_inputs,
                     nvfp4_output_allocator allocate, void* allocator_ctx, nvfp4_plugin_error* error) {
  return nvfp4::device::plugin::run_case(op, params_json, inputs, n_inputs, allocate, allocator_ctx, error,
                                         nvfp4::device::cublaslt::run);
}
