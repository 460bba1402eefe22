"""Workers (docs/spec/worker-protocol.md) around real peers, one module each, run as
`python3 -m nvfp4_verify.adapters.NAME` (docs/guides/peers.md):

- torchao: torchao's NVFP4 quantizer (profiles `torchao`, `torchao-1lvl`), [--device cuda|cpu];
- modelopt: NVIDIA Model Optimizer's NVFP4 quantizer (profile `modelopt`), [--device cuda|cpu];
- torch_matmul: `gemm` as dequantization and torch.matmul (docs/guides/gemm-ulp.md),
  [--precision fp32|bf16] [--device cuda|cpu].

Each imports torch and its peer only when it runs, never on import of this package; none needs the
native extension.
"""
