"""Workers (docs/spec/worker-protocol.md) around real peers, one module each, run as
`python3 -m nvfp4_verify.adapters.NAME` (docs/guides/peers.md; docs/peers.md says which profile
each has proven):

- torchao: torchao's NVFP4 quantizer (profiles `torchao`, `torchao-1lvl`), [--device cuda|cpu];
- modelopt: NVIDIA Model Optimizer's NVFP4 quantizer (profile `modelopt`), [--device cuda|cpu];
- compressed_tensors: compressed-tensors' NVFP4 weight path (profiles `compressed-tensors`,
  `compressed-tensors-bf16`), --dtype f32|bf16 [--device cuda|cpu];
- te_pyref: TransformerEngine's NVFP4QuantizerRef (profiles `te-pyref`, `te-2.13`), [--te-src DIR];
- vllm_emul: vLLM's ref_nvfp4_quant (profile `vllm-emul`), with NVFP4_VLLM_SRC;
- mslk: MSLK's Triton triton_quantize_nvfp4 (profile `mslk`), Blackwell only;
- flashinfer: FlashInfer's fp4_quantize, exact path (profile `te`), Blackwell only;
- torch_matmul: `gemm` as dequantization and torch.matmul (docs/guides/gemm-ulp.md),
  [--precision fp32|bf16] [--device cuda|cpu].

Each imports torch and its peer only when it runs, never on import of this package; none needs the
native extension. Modules whose names start with `_` are shared helpers, not adapters.
"""
