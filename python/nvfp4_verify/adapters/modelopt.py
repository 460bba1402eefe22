"""A worker (docs/spec/worker-protocol.md) around NVIDIA Model Optimizer's NVFP4 quantizer, through its
public API: modelopt.torch.quantization.qtensor.nvfp4_tensor.NVFP4QTensor.quantize (the export
path with dynamic block scales) and modelopt.torch.quantization.utils.reduce_amax.

    nvfp4-verify fuzz --ops quantize --backends reference,worker \\
        --worker 'python3 -m nvfp4_verify.adapters.modelopt [--device cuda|cpu]'

Profile `modelopt` (docs/spec/profiles.md) is defined as modelopt runs on CUDA; on the CPU PyTorch
divides where CUDA multiplies by a reciprocal (NUMERICS.md §5.14), so a CPU run is expected to
disagree on some global scales, scale bytes and codes.

The adapter only converts representations; every number comes from modelopt or torch:
- x: the case's numpy array becomes a torch tensor with the same bits (F32, BF16 or F16).
- amax (registry: the global amax g, F32 [1]): reduce_amax(x), the amax NVFP4QTensor.quantize
  derives its weights_scaling_factor_2 from, widened to F32 (exact). With the case's amax override,
  the override is the weight quantizer's calibrated `_amax`, and weights_scaling_factor_2 comes from
  NVFP4QTensor.get_weights_scaling_factor_2_from_quantizer, as modelopt's export computes it.
- global_scale (registry: the exported second-level scale): weights_scaling_factor_2, a 0-dim F32
  tensor (the checkpoint's weight_scale_2), reshaped to [1].
- data: the packed uint8 [M, K/2] of the returned NVFP4QTensor (its `_quantized_data`, which
  modelopt itself reads that way: there is no public accessor), even element in the low nibble
  ((q[..., 1::2] << 4) | q[..., 0::2]), which is the registry's order (NUMERICS.md §2.1.3).
- scale: weights_scaling_factor, float8_e4m3fn [M, K/16], viewed as its bytes and padded with 0x00
  to the registry's [roundup(M,128), roundup(K/16,4)] (NUMERICS.md §2.4.1). modelopt writes no
  swizzled layout, so only `compact` is declared.
Prints nothing to stdout; needs no native extension: the installed nvfp4_verify, or PYTHONPATH=python
in the source tree.
"""
import argparse
import contextlib
import sys
import types

with contextlib.redirect_stdout(sys.stderr):  # whatever an import prints must not reach the frames
    import torch
    import modelopt
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor
    from modelopt.torch.quantization.utils import reduce_amax

from nvfp4_verify import worker
from nvfp4_verify.adapters._shared import check_shape, padded_scale, serve_and_exit
from nvfp4_verify.torch_utils import to_torch

DEVICE = "cpu"
BLOCK = 16


@worker.implements("quantize", profile=["modelopt"], block=["1d"], direction=["rowwise"], row_scaled=[False],
                   scale_layout=["compact"], rounding=["nearest"], rht=[False], amax=worker.ANY,
                   dtype=["f32", "bf16", "f16"])
def quantize(inputs, params):
    check_shape(inputs["x"])
    x = to_torch(inputs["x"], DEVICE)
    M, K = x.shape
    override = worker.f32(params["amax"])
    if override is None:
        amax = reduce_amax(x).float()
        qtensor, scale_e4m3, scale_2 = NVFP4QTensor.quantize(x, BLOCK)
    else:  # a calibrated weight quantizer: its _amax is the override
        amax = torch.tensor(override, dtype=torch.float32, device=DEVICE)
        quantizer = types.SimpleNamespace(_amax=amax, block_sizes={-1: BLOCK})
        scale_2 = NVFP4QTensor.get_weights_scaling_factor_2_from_quantizer(quantizer)
        qtensor, scale_e4m3, scale_2 = NVFP4QTensor.quantize(x, BLOCK, weights_scaling_factor_2=scale_2)

    scale = padded_scale(scale_e4m3.view(torch.uint8))  # E4M3 bytes, unchanged
    return {"data": qtensor._quantized_data, "scale": scale, "amax": amax.reshape(1),
            "global_scale": scale_2.float().reshape(1)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    DEVICE = parser.parse_args().device
    serve_and_exit(f"modelopt {modelopt.__version__} on {DEVICE}")
