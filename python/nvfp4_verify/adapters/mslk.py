"""A worker (docs/spec/worker-protocol.md) around MSLK's NVFP4 quantizer, through its public API:
mslk.quantize.triton.fp4_quantize.triton_quantize_nvfp4(x, global_scale, use_e8m0_scale=False,
use_precise_math=True), the Triton kernel that torchao's NVFP4 path (mslk_quantize_nvfp4) calls.

    nvfp4-verify fuzz --ops quantize --backends reference,worker \\
        --worker 'python3 -m nvfp4_verify.adapters.mslk [--device cuda|cpu]'

Where it runs: only on a GPU of compute capability 10.x or above (sm_100a, sm_103a, sm_110a,
sm_120a, ...). The kernel packs E2M1 codes with inline PTX `cvt.rn.satfinite.e2m1x2.f32`, which
ptxas rejects for sm_90a ("Instruction 'cvt with .e2m1x2' not supported on .target 'sm_90a'"), and
Triton's interpreter (TRITON_INTERPRET=1, what --device cpu uses) does not execute inline asm. MSLK
has no PyTorch reference of this quantizer. The worker therefore runs one small quantization at
start-up and, if MSLK cannot run here, exits with status 2 and MSLK's own error on stderr.

Profile `mslk` (docs/spec/profiles.md) is MSLK's kernel with use_precise_math=True behind torchao's
caller code, as run on CUDA. Expected disagreements with the profile as it stands: the mslk-cuda
wheel on PyPI (1.1.0) clamps the block scale below at 2^-16, not 2^-9 (zero blocks get scale 0x00
and codes 0x7); tl.clamp is max.f32/min.f32, so a NaN block scale becomes the lower bound instead of
0x7F (an all-zero x: g = 0, 1/pts = inf, 0 * inf); and the caller's global amax propagates NaN
while the kernel's block amaxes ignore it.

The adapter only converts representations; every number comes from MSLK or torch:
- x: the case's numpy array becomes a torch tensor with the same bits (F32, BF16 or F16: the kernel
  widens any of them to F32).
- amax (registry: the global amax g, F32 [1]): MSLK takes no amax but an encode scale. Its caller
  (torchao) computes torch.max(torch.abs(x)) (NaN-propagating, exact in F32); the case's amax
  override, when given, replaces it, as a caller with a calibrated amax would.
- the kernel's global_scale: as torchao's per_tensor_amax_to_scale and mslk_quantize_nvfp4 derive it
  from the amax, in torch: per_tensor_scale = amax.to(float32) / 2688.0, then global_scale =
  per_tensor_scale.reciprocal() (a 0-dim F32 tensor). MSLK exports no second-level scale, so there
  is no `global_scale` output (profile `mslk`: EXPORTED = NONE).
- data: the kernel's [M, K/2] float4_e2m1fn_x2 viewed as uint8; the even element is in the low
  nibble, which is the registry's order (NUMERICS.md §2.1.3): passed through.
- scale: the kernel writes only the 128x4 swizzled layout, zero-padded, into a float8_e4m3fn
  [roundup(M,128), roundup(K/16,4)] buffer. swizzled: those bytes, viewed as uint8 (the registry's
  shape and order, NUMERICS.md §2.4.2). compact: the inverse permutation of §2.4.2 applied to the
  same bytes ([R'/128][C'/4][32][4][4] indexed [r div 128][c div 4][r mod 32][(r mod 128) div 32]
  [c mod 4]), padding 0x00 as MSLK wrote it.
Prints nothing to stdout; needs no native extension, neither nvfp4_verify's nor MSLK's mslk.so:
MSLK's Python files are enough (MSLK_PYTHON_ONLY=1, set here unless the environment sets it).
"""
import argparse
import contextlib
import os
import sys

with contextlib.redirect_stdout(sys.stderr):  # whatever an import prints must not reach the frames
    import torch

from nvfp4_verify import worker
from nvfp4_verify.adapters._shared import roundup, check_shape, serve_and_exit
from nvfp4_verify.torch_utils import to_torch

DEVICE = "cpu"
triton_quantize_nvfp4 = None  # MSLK's entry point, imported by load_mslk() once the device is known
mslk_version = None


def load_mslk(device):
    """Imports MSLK's quantizer. Triton decides at import time whether its kernels run compiled or
    interpreted, so the CPU's interpreter mode is chosen before MSLK (and Triton) are imported."""
    global triton_quantize_nvfp4, mslk_version
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    os.environ.setdefault("MSLK_PYTHON_ONLY", "1")  # the quantizer is Triton: mslk.so is not needed
    with contextlib.redirect_stdout(sys.stderr):
        import mslk
        from mslk.quantize.triton.fp4_quantize import triton_quantize_nvfp4 as entry
    triton_quantize_nvfp4, mslk_version = entry, mslk.__version__


def unswizzle(swizzled, rows, cols):
    """The compact [rows, cols] matrix of a 128x4-swizzled buffer of the same size (NUMERICS.md
    §2.4.2): a permutation of the bytes, nothing computed."""
    blocks = swizzled.reshape(rows // 128, cols // 4, 32, 4, 4)  # [r/128][c/4][r%32][(r%128)/32][c%4]
    return blocks.permute(0, 3, 2, 1, 4).reshape(rows, cols)


@worker.implements("quantize", profile=["mslk"], block=["1d"], direction=["rowwise"], row_scaled=[False],
                   scale_layout=["compact", "swizzled"], rounding=["nearest"], rht=[False], amax=worker.ANY,
                   dtype=["f32", "bf16", "f16"])
def quantize(inputs, params):
    check_shape(inputs["x"])
    x = to_torch(inputs["x"], DEVICE)
    M, K = x.shape
    override = worker.f32(params["amax"])
    if override is None:  # what torchao, MSLK's caller, computes (NaN-propagating); exact in F32
        amax = torch.max(torch.abs(x)).float()
    else:
        amax = torch.tensor(override, dtype=torch.float32, device=DEVICE)
    per_tensor_scale = amax.to(torch.float32) / 2688.0  # torchao per_tensor_amax_to_scale: amax / (448 * 6)
    global_scale = per_tensor_scale.reciprocal()  # torchao mslk_quantize_nvfp4: MSLK's global scale
    data, scales = triton_quantize_nvfp4(x, global_scale, use_e8m0_scale=False, use_precise_math=True)

    scale_bytes = scales.view(torch.uint8)  # E4M3 bytes in the swizzled order, padding 0x00
    rows, cols = roundup(M, 128), roundup(K // 16, 4)
    if params["scale_layout"] == "swizzled":
        scale = scale_bytes.reshape(rows, cols)
    else:
        scale = unswizzle(scale_bytes, rows, cols)
    return {"data": data.view(torch.uint8), "scale": scale, "amax": amax.reshape(1)}


def probe():
    """One 16x64 quantization, so that a GPU or interpreter MSLK cannot run on fails at start-up
    with MSLK's (Triton's, ptxas') message instead of on every case."""
    x = torch.zeros((16, 64), dtype=torch.bfloat16, device=DEVICE)
    with contextlib.redirect_stdout(sys.stderr):
        triton_quantize_nvfp4(x, torch.ones((), dtype=torch.float32, device=DEVICE))
        if DEVICE != "cpu":
            torch.cuda.synchronize()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    DEVICE = parser.parse_args().device
    load_mslk(DEVICE)
    try:
        probe()
    except Exception as e:  # noqa: BLE001 -- any failure of the peer here means it cannot run on this device
        where = torch.cuda.get_device_name() if DEVICE != "cpu" else "the CPU (TRITON_INTERPRET=1)"
        print(f"mslk adapter: MSLK {mslk_version} triton_quantize_nvfp4 cannot run on {where}: "
              f"{type(e).__name__}: {str(e)[-2000:]}\n(the kernel needs inline PTX cvt.rn.satfinite.e2m1x2.f32: "
              "compute capability 10.0 or above)", file=sys.stderr)
        sys.stderr.flush()
        os._exit(2)
    serve_and_exit(f"mslk {mslk_version} triton_quantize_nvfp4 on {DEVICE}")
