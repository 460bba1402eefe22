// Which profiles have met their peer's own code under the gate: the table docs/peers.md is
// generated from (`nvfp4-verify profiles --peers-markdown`). A row changes only with a run.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "reference/profiles.h"

namespace nvfp4 {
namespace {

constexpr ProfileProof kProofs[] = {
    {"te", "",
     "its kernels (TransformerEngine >= 2.14, FlashInfer's exact fp4_quantize) need Blackwell (cvt.rn.satfinite.e2m1x2.f32); "
     "on SM100 run the adapter nvfp4_verify.adapters.flashinfer under the gate (guides/peers.md says what to expect)"},
    {"te-2.13", "",
     "TE 2.13's kernels need Blackwell; its PyTorch reference (te_pyref --te-src with 2.13) equals te-2.13 only without NaN "
     "and -0.0 scaled elements, which a declaration cannot exclude"},
    {"te-2.13-1d", "", "no TE release emits these bits: a scale-order variant kept for coverage"},
    {"te-pyref", "transformer-engine 2.20.2",
     "NVFP4QuantizerRef on an H200 under the gate, 3 min: 71,074 cases (1d/2d, every direction, row-scaled, RHT with both "
     "masks, F32/BF16/F16, amax overrides), 25 corpus cases and 288 vectors, 0 failures. Its RHT is a CUDA BF16 matmul, "
     "whose tensor-core sums truncate (RHT = MMA_SM90); with the exact sums the profile failed 2 cases in each of two "
     "earlier runs (corpora/found/case-1aa94be5d158de71, case-95986ac85e116def, case-795f17861377ed44)"},
    {"torchao", "torchao 0.18.0",
     "NVFP4Tensor.to_nvfp4 with per_tensor_amax_to_scale on an H200 under the gate, 3 min: 46,750 cases with torchao-1lvl "
     "(BF16/F32, compact and swizzled scales, amax overrides) and 36 vectors, 0 failures"},
    {"torchao-1lvl", "torchao 0.18.0",
     "NVFP4Tensor.to_nvfp4 without a per-tensor scale on an H200 under the gate, 3 min: 46,750 cases with torchao, 0 failures"},
    {"mslk", "",
     "MSLK 1.1.0's only NVFP4 quantizer, the Triton triton_quantize_nvfp4, packs codes with cvt.rn.satfinite.e2m1x2.f32, "
     "which ptxas rejects for sm_90a; on SM100 run the adapter nvfp4_verify.adapters.mslk under the gate"},
    {"modelopt", "nvidia-modelopt 0.47.0",
     "NVFP4QTensor.quantize on an H200 under the gate, 3 min: 33,945 cases, F32/BF16/F16, amax overrides, 0 failures"},
    {"miles", "", "radixark/miles is not released on PyPI: there is no package of its quantizer to run"},
    {"vllm-emul", "vllm 0.34.0",
     "ref_nvfp4_quant (nvfp4_emulation_utils.py loaded alone) on an H200 under the gate, 3 min: 36,659 cases, F32/BF16/F16, "
     "amax overrides, 0 failures"},
    {"compressed-tensors", "compressed-tensors 0.20.1",
     "generate_gparam, calculate_qparams, NVFP4PackedCompressor.compress (its Triton kernel) on an H200 under the gate, "
     "3 min: 34,846 cases, F32 weights, amax overrides, 0 failures"},
    {"compressed-tensors-bf16", "compressed-tensors 0.20.1",
     "the same on BF16 weights, 3 min: 32,595 cases, 0 failures; llm-compressor 0.14.0.1 oneshot NVFP4 and NVFP4A16 exports "
     "(with "
     "compressed-tensors 0.19.0) identified by check-checkpoint, 14 of 14 tensors"},
    {"compressed-tensors-0.18", "compressed-tensors 0.15.0.1, 0.16.0, 0.17.1, 0.18.0",
     "the compressed-tensors adapter with each release on an H200 under the gate, 3 min each, all at once: 15,868, 16,375, "
     "16,125 and 19,723 cases, F32 weights, amax overrides, 0 failures. Against compressed-tensors every release failed on "
     "NaN elements (code 0x0 where 0.20.1 writes 0x7; corpora/found/case-0bae0a5a52480894)"},
    {"compressed-tensors-bf16-0.18", "compressed-tensors 0.15.0.1, 0.16.0, 0.17.1, 0.18.0",
     "the same on BF16 weights, in the same run: 15,806, 16,118, 16,320 and 18,788 cases and 8 vectors each, 0 failures. "
     "Against compressed-tensors-bf16 every release failed on NaN elements (corpora/found/case-76dfe5c4bb98d637, "
     "case-8e3d906a0ade53da, case-b1d1ac5524cf4b37, case-b55c640e7a5388dd, case-f93a185439a7ebcf)"},
    {"te-4over6-mae", "transformer-engine 2.20.2",
     "NVFP4QuantizerRef with nvfp4_use_4over6, nvfp4_e4m3_max 256, MAE (te_pyref --4over6) on an H200 under the gate, "
     "3 min: 6,780 cases with te-4over6-mse (1d/2d, every direction, row-scaled, F32/BF16/F16, amax overrides) and 504 "
     "vectors, 0 failures"},
    {"te-4over6-mse", "transformer-engine 2.20.2",
     "the same with MSE, in the same run: 6,780 cases with te-4over6-mae and 504 vectors, 0 failures"},
    {"ggml", "ggml 0.25.3",
     "ggml_quantize_chunk(GGML_TYPE_NVFP4) and dequantize_row_nvfp4 of libggml-base.so (llama-cpp-python 0.3.36's "
     "llama.cpp, built by scripts/build-ggml-peer) on the H200 machine's CPU under the gate, 3 min: 66,875 cases "
     "(quantize F32 rowwise, amax overrides; dequantize of arbitrary bytes) and 72 vectors, 0 failures. ggml's SM120 CUDA "
     "activation quantizer is another algorithm, inside its matmul only (NUMERICS.md 4.3, ggml)"},
};

}  // namespace

std::span<const ProfileProof> profile_proofs() { return kProofs; }

const ProfileProof& proof_of(std::string_view profile_name) {
  const auto it =
      std::find_if(std::begin(kProofs), std::end(kProofs), [&](const ProfileProof& p) { return p.profile == profile_name; });
  if (it == std::end(kProofs)) throw std::logic_error("profile without a proof row: " + std::string(profile_name));
  return *it;
}

std::string proof_line(const ProfileProof& p) {
  return p.proven() ? "proven against " + std::string(p.peer) : "not proven: " + std::string(p.record);
}

}  // namespace nvfp4
