#include "cases/seeds/seed_corpus.h"

#include "cases/seeds/families.h"

namespace nvfp4::cases {

std::span<const SeedFamily> seed_families() {
  static const std::vector<SeedFamily> table = {
      {"quantize",
       seeds::add_quantize_seeds,
       {{"quantize",
         {"compressed-tensors", "compressed-tensors-bf16", "compressed-tensors-0.18", "compressed-tensors-bf16-0.18"},
         "no quantize seed case yet; adding one adds a file to corpora/seed (the campaigns draw it)"}}},
      {"amax",
       seeds::add_amax_seeds,
       {{"*",
         {"te-2.13", "te-2.13-1d", "torchao", "torchao-1lvl", "mslk", "modelopt", "miles", "vllm-emul", "compressed-tensors",
          "compressed-tensors-bf16", "compressed-tensors-0.18", "compressed-tensors-bf16-0.18", "te-4over6-mae", "te-4over6-mse",
          "ggml"},
         "the amax operations read only the profile's NaN rule: te (IGNORE) and te-pyref (a propagating rule) stand "
         "for the others"}}},
      {"layout", seeds::add_layout_seeds, {}},
      {"distributed",
       seeds::add_distributed_seeds,
       {{"*",
         {"te-2.13", "te-2.13-1d", "te-pyref", "torchao", "torchao-1lvl", "mslk", "modelopt", "miles", "vllm-emul",
          "compressed-tensors", "compressed-tensors-bf16", "compressed-tensors-0.18", "compressed-tensors-bf16-0.18",
          "te-4over6-mae", "te-4over6-mse", "ggml"},
         "the distributed flow follows TE's kernels: every other profile is E_UNSUPPORTED (validate_flow_profile)"}}},
      {"hadamard", seeds::add_hadamard_seeds, {}},
      {"gemm", seeds::add_gemm_seeds, {}},
      {"grouped", seeds::add_grouped_seeds, {}},
  };
  return table;
}

std::vector<CaseRecord> seed_corpus() {
  std::vector<CaseRecord> out;
  for (const SeedFamily& f : seed_families()) f.add(out);
  return out;
}

}  // namespace nvfp4::cases
