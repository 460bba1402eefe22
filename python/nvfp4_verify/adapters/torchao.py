"""A worker (docs/spec/worker-protocol.md) around torchao's NVFP4 quantizer, through its public API:
torchao.prototype.mx_formats.nvfp4_tensor.NVFP4Tensor.to_nvfp4 and per_tensor_amax_to_scale.

    nvfp4-verify fuzz --ops quantize --backends reference,worker \\
        --worker 'python3 -m nvfp4_verify.adapters.torchao [--device cuda|cpu]'

Profiles (docs/spec/profiles.md): `torchao` is the two-level quantizer (to_nvfp4 with a per_tensor_scale),
`torchao-1lvl` the single-level one (no per_tensor_scale). Both are defined as torchao runs on CUDA;
on the CPU PyTorch divides where CUDA multiplies by a reciprocal (NUMERICS.md §5.14), so a CPU run
is expected to disagree on some scale bytes, codes and global scales.

The adapter only converts representations; every number comes from torchao or torch:
- x: the case's numpy array becomes a torch tensor with the same bits (BF16 stays BF16, F32 F32).
- amax (registry: the global amax g, F32 [1]): torchao takes no amax; its callers compute it as
  torch.max(torch.abs(x)) (NaN-propagating) and pass per_tensor_amax_to_scale(amax) in. The case's
  amax override, when given, replaces that amax, as a torchao caller would with a calibrated one.
- global_scale (registry: the exported second-level scale, `torchao` only): torchao's
  per_tensor_scale, a 0-dim F32 tensor, reshaped to [1].
- data: torchao's qdata is uint8 [M, K/2] with the even element in the low nibble (pack_uint4),
  which is the registry's order (NUMERICS.md §2.1.3): passed through.
- scale, compact: torchao's float8_e4m3fn [M, K/16] viewed as its bytes and padded with 0x00 to the
  registry's [roundup(M,128), roundup(K/16,4)] (NUMERICS.md §2.4.1).
- scale, swizzled: torchao's is_swizzled_scales=True output is to_blocked's 128x4 layout
  (NUMERICS.md §2.4.2), zero-padded, viewed as [ceil(M/128)*32, ceil(K/64)*16]; the same bytes in
  the same order are reshaped to the registry's [roundup(M,128), roundup(K/16,4)].
Prints nothing to stdout; needs no native extension: the installed nvfp4_verify, or PYTHONPATH=python
in the source tree.
"""
import argparse
import contextlib
import sys

with contextlib.redirect_stdout(sys.stderr):  # whatever an import prints must not reach the frames
    import torch
    import torchao
    from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, per_tensor_amax_to_scale

from nvfp4_verify import worker
from nvfp4_verify.adapters._shared import roundup, check_shape, serve_and_exit
from nvfp4_verify.torch_utils import to_torch

DEVICE = "cpu"


@worker.implements("quantize", profile=["torchao", "torchao-1lvl"], block=["1d"], direction=["rowwise"],
                   row_scaled=[False], scale_layout=["compact", "swizzled"], rounding=["nearest"], rht=[False],
                   amax=worker.ANY, dtype=["f32", "bf16"])  # nvfp4_quantize asserts bfloat16 or float32
def quantize(inputs, params):
    check_shape(inputs["x"])
    x = to_torch(inputs["x"], DEVICE)
    M, K = x.shape
    override = worker.f32(params["amax"])
    if override is None:  # what torchao's callers compute (NaN-propagating); exact in F32
        amax = torch.max(torch.abs(x)).float()
    else:
        amax = torch.tensor(override, dtype=torch.float32, device=DEVICE)
    two_level = params["profile"] == "torchao"
    per_tensor_scale = per_tensor_amax_to_scale(amax) if two_level else None
    swizzled = params["scale_layout"] == "swizzled"
    t = NVFP4Tensor.to_nvfp4(x, block_size=16, per_tensor_scale=per_tensor_scale, is_swizzled_scales=swizzled)

    scale_bytes = t.scale.view(torch.uint8)  # E4M3 bytes, unchanged
    rows, cols = roundup(M, 128), roundup(K // 16, 4)
    if swizzled:  # already padded and in the 128x4 order: only the shape changes
        scale = scale_bytes.reshape(rows, cols)
    else:  # compact [M, K/16] -> the registry's padded matrix, padding 0x00
        scale = torch.zeros((rows, cols), dtype=torch.uint8, device=scale_bytes.device)
        scale[:M, :K // 16] = scale_bytes
    out = {"data": t.qdata, "scale": scale, "amax": amax.reshape(1)}
    if two_level:
        out["global_scale"] = t.per_tensor_scale.reshape(1)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    DEVICE = parser.parse_args().device
    serve_and_exit(f"torchao {torchao.__version__} on {DEVICE}")
