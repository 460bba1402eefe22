"""A worker (docs/spec/worker-protocol.md) around compressed-tensors' NVFP4 weight path, as
llm-compressor runs it: the NVFP4A16 preset's weight arguments, generate_gparam, calculate_qparams
and NVFP4PackedCompressor.compress (whose quantize_and_pack_fp4 runs compressed-tensors' Triton
kernel on CUDA and its PyTorch fallback on the CPU).

    nvfp4-verify gate --backends reference,worker \\
        --worker 'python3 -m nvfp4_verify.adapters.compressed_tensors --dtype f32|bf16 [--device cuda|cpu]'

compressed-tensors computes in the weight's own dtype, so one worker serves one dtype: `--dtype f32`
declares profile `compressed-tensors` (F32 weights), `--dtype bf16` profile `compressed-tensors-bf16`
(BF16 weights, as llm-compressor observes a BF16 model). Releases without the fused kernel
(0.15-0.18 run, 0.19 read) compress through quantize() and pack_fp4_to_uint8, whose clamp keeps
NaN: for them (no quantize_and_pack_fp4 in the imported compressor module) the adapter declares
`compressed-tensors-0.18` / `compressed-tensors-bf16-0.18`. The profiles are defined as the CUDA path runs; the CPU fallback differs on NaN
blocks and in PyTorch's CPU division (docs/guides/peers.md).

The adapter only converts representations; every number comes from compressed-tensors or torch:
- x: the case's numpy array becomes a torch tensor with the same bits, in its own dtype.
- the observer: llm-compressor's MemorylessMinMaxObserver, written out as its two reductions:
  torch.amin / torch.amax of x viewed as [M, K/16, 16] over the group axis (NaN-propagating), and
  the global absmax max(max_vals.max(), -min_vals.min()), all in x's dtype. With the case's amax
  override (`--dtype f32` only: a BF16 observer's absmax is a BF16 value), the override is the
  global absmax, as a fused layer's shared absmax would be.
- amax (registry: the global amax g, F32 [1]): that global absmax, widened to F32 (exact).
- global_scale: generate_gparam(-absmax, absmax), the F32 weight_global_scale G, reshaped to [1].
- scale: calculate_qparams(min_vals, max_vals, args, global_scale=G), compressed by the compressor
  to float8_e4m3fn [M, K/16] (weight_scale), viewed as its bytes and padded with 0x00 to the
  registry's [roundup(M,128), roundup(K/16,4)].
- data: the compressor's weight_packed, uint8 [M, K/2], the even element in the low nibble, which
  is the registry's order (NUMERICS.md §2.1.3): passed through.
Prints nothing to stdout; needs no native extension: the installed nvfp4_verify, or PYTHONPATH=python
in the source tree.
"""
import argparse
import contextlib
import sys

with contextlib.redirect_stdout(sys.stderr):  # whatever an import prints must not reach the frames
    import torch
    import compressed_tensors
    from compressed_tensors.compressors.nvfp4 import base as nvfp4_base
    from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
    from compressed_tensors.quantization import QuantizationScheme
    from compressed_tensors.quantization.quant_scheme import NVFP4A16
    from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam

from nvfp4_verify import worker
from nvfp4_verify.adapters._shared import check_shape, padded_scale, serve_and_exit
from nvfp4_verify.torch_utils import to_torch

DEVICE = "cpu"
PROFILES = {"f32": "compressed-tensors", "bf16": "compressed-tensors-bf16"}
# Releases before the fused quantize_and_pack_fp4 (0.15-0.19) compress through quantize(), whose
# torch.clamp keeps NaN: profiles compressed-tensors[-bf16]-0.18.
UNFUSED = not hasattr(nvfp4_base, "quantize_and_pack_fp4")
SCHEME = QuantizationScheme(targets=["Linear"], **NVFP4A16)


def quantize(inputs, params):
    check_shape(inputs["x"])
    x = to_torch(inputs["x"], DEVICE)
    M, K = x.shape
    groups = x.reshape(1, M, K // 16, 16)  # flatten_for_calibration's (observations, rows, groups, 16)
    min_vals = torch.amin(groups, dim=(0, -1))
    max_vals = torch.amax(groups, dim=(0, -1))
    override = worker.f32(params.get("amax"))
    if override is None:
        absmax = torch.max(max_vals.max(), -min_vals.min())
    else:
        absmax = torch.tensor(override, dtype=x.dtype, device=DEVICE)
    global_scale = generate_gparam(-absmax.reshape(1), absmax.reshape(1))
    scale, _ = calculate_qparams(min_vals, max_vals, SCHEME.weights, global_scale=global_scale)
    state = {"weight": x, "weight_scale": scale, "weight_global_scale": global_scale}
    out = NVFP4PackedCompressor.compress(state, SCHEME)
    return {"data": out["weight_packed"], "scale": padded_scale(out["weight_scale"].view(torch.uint8)),
            "amax": absmax.float().reshape(1), "global_scale": global_scale.float().reshape(1)}


def declare(dtype):
    overrides = {"amax": worker.ANY} if dtype == "f32" else {}  # BF16: the observer's own absmax only
    profile = PROFILES[dtype] + ("-0.18" if UNFUSED else "")
    worker.implements("quantize", profile=[profile], block=["1d"], direction=["rowwise"], row_scaled=[False],
                      scale_layout=["compact"], rounding=["nearest"], rht=[False], dtype=[dtype], **overrides)(quantize)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=sorted(PROFILES), default="bf16")
    args = parser.parse_args()
    DEVICE = args.device
    declare(args.dtype)
    serve_and_exit(f"compressed-tensors {compressed_tensors.__version__} ({args.dtype} weights) on {DEVICE}")
