"""A worker (docs/spec/worker-protocol.md) around FlashInfer's NVFP4 quantizer, through its public API:
flashinfer.fp4_quantize (backend="cuda": the TensorRT-LLM kernel FlashInfer JIT-compiles from
csrc/nv_internal/cpp/kernels/quantization.cu), run on its exact path (the process environment has
FLASHINFER_DISABLE_FP4_QUANT_FAST_MATH=1, which the kernel launcher reads on every call).

    nvfp4-verify gate --backends reference,worker \\
        --worker 'python3 -m nvfp4_verify.adapters.flashinfer' --time 3m

Needs a GPU of compute capability 10.0 or newer (B200, B300, GB200, RTX 50xx, ...): FlashInfer's
fp4_quantize refuses anything older ("requires SM100 or newer"), and its kernels compile to nothing
below sm_100, whose cvt.rn.satfinite.e2m1x2.f32 they need. On an older GPU, or without one, the
adapter exits before its handshake with a message saying so. The first call JIT-compiles FlashInfer's
fp4_quantization module (nvcc and ninja, minutes; cached in ~/.cache/flashinfer), longer than the
harness waits for a handshake: run `python3 -m nvfp4_verify.adapters.flashinfer --build` once first
(or install the flashinfer-jit-cache wheel of the same version).

Profile `te` (docs/spec/profiles.md): TE's recipe as FlashInfer's exact path computes it when the
caller passes G = S_enc, TE's encode scale. FlashInfer takes the global scale from its caller and
computes no amax; the adapter is that caller, with TE's formulas. Known departures of FlashInfer
from `te` on special inputs (the module is compiled with -use_fast_math, so every binary32 product,
quotient and comparison of the chain flushes subnormals; and the block amax is a NaN-ignoring
max.bf16x2 per element parity, then `even > odd ? even : odd`): BF16 subnormal elements and block
amaxes read as zero, a G above 2^126 has a flushed decode scale (encode factor FLT_MAX), and a block
whose eight odd-position elements are all NaN gets scale byte 0x7F. FlashInfer's default fast path
(rcp.approx.ftz.f32) has no profile and is not offered.

The adapter converts representations only; every scale byte and code comes from FlashInfer:
- x: the case's numpy array becomes a CUDA tensor with the same bits (BF16 or F16; FlashInfer
  quantizes fp16, bf16 and fp8 inputs, not F32).
- amax (registry: the global amax g, F32 [1]): the caller's, TE's rule: max |x| with NaN elements
  ignored (torch.where and amax, exact); the case's amax override, when given, bit for bit.
- the global scale handed to FlashInfer (a [1] F32 tensor, is_global_scale_inversed=False): TE's
  S_enc = fminf(RN(2688 / g), FLT_MAX), 1 when g == 0 or S_enc == 0, in numpy binary32 (one
  correctly rounded division). 4over6 is off (nvfp4_4over6=None), whatever the environment says.
- data: fp4_quantize's uint8 [M, K/2]; cvt.rn.satfinite.e2m1x2.f32 puts the even element in the
  low nibble, which is the registry's order (NUMERICS.md §2.1.3): passed through.
- scale, compact: is_sf_swizzled_layout=False gives the linear [M, K/16] E4M3 bytes, padded with
  0x00 to the registry's [roundup(M,128), roundup(K/16,4)] (NUMERICS.md §2.4.1).
- scale, swizzled: is_sf_swizzled_layout=True (SWIZZLED_128x4, NUMERICS.md §2.4.2) is already
  padded (the kernel writes 0x00 into the padding) and in the registry's order: only reshaped.
- an empty x (M or K zero) has no numbers to compute: its outputs are the registry's empty tensors,
  without a call into FlashInfer.
Prints nothing to stdout; needs no native extension: the installed nvfp4_verify, or PYTHONPATH=python
in the source tree.
"""
import argparse
import contextlib
import os
import sys

import numpy as np

# The exact path, read by the launcher (getenv) on every call: set before FlashInfer is imported.
os.environ["FLASHINFER_DISABLE_FP4_QUANT_FAST_MATH"] = "1"

with contextlib.redirect_stdout(sys.stderr):  # whatever an import prints must not reach the frames
    import torch
    import flashinfer

from nvfp4_verify import worker
from nvfp4_verify.adapters._shared import roundup, check_shape, serve_and_exit
from nvfp4_verify._params import f32_bits
from nvfp4_verify.torch_utils import to_torch

DEVICE = "cuda"
FLT_MAX = np.float32(np.finfo(np.float32).max)


def f32_of_bits(bits):
    return np.array([int(bits, 16)], dtype=np.uint32).view(np.float32)[0]


def te_encode_scale(g):
    """The caller's G: TE's S_enc from the global amax g, in binary32."""
    with np.errstate(all="ignore"):
        s = np.fmin(np.float32(2688.0) / np.float32(g), FLT_MAX)  # fminf: NaN -> FLT_MAX
    return np.float32(1.0) if (g == 0 or s == 0) else np.float32(s)


@worker.implements("quantize", profile=["te"], block=["1d"], direction=["rowwise"], row_scaled=[False],
                   scale_layout=["compact", "swizzled"], rounding=["nearest"], rht=[False], amax=worker.ANY,
                   dtype=["bf16", "f16"])  # fp4_quantize takes fp16, bf16 (and fp8), not fp32
def quantize(inputs, params):
    check_shape(inputs["x"])
    M, K = inputs["x"].shape
    rows, cols = roundup(M, 128), roundup(K // 16, 4)
    bits = f32_bits(params["amax"])
    swizzled = params["scale_layout"] == "swizzled"
    if M == 0 or K == 0:  # nothing to quantize
        g = np.float32(0.0) if bits is None else f32_of_bits(bits)
        return {"data": np.zeros((M, K // 2), np.uint8), "scale": np.zeros((rows, cols), np.uint8),
                "amax": np.array([g], np.float32)}
    x = to_torch(inputs["x"], DEVICE)
    if bits is None:  # TE's amax: NaN elements ignored; exact in F32
        a = x.abs().float()
        g = np.float32(torch.where(torch.isnan(a), torch.zeros_like(a), a).amax().item())
    else:
        g = f32_of_bits(bits)
    global_scale = torch.tensor([te_encode_scale(g)], dtype=torch.float32, device=DEVICE)
    data, sf = flashinfer.fp4_quantize(x, global_scale, sf_vec_size=16, sf_use_ue8m0=False,
                                       is_sf_swizzled_layout=swizzled, is_sf_8x4_layout=False,
                                       is_global_scale_inversed=False, backend="cuda", nvfp4_4over6=None)
    sf = sf.view(torch.uint8)
    if swizzled:  # padded to [roundup(M,128), roundup(K/16,4)] and in the 128x4 order: only the shape changes
        scale = sf.reshape(rows, cols)
    else:  # linear [M, K/16] -> the registry's padded matrix, padding 0x00
        scale = torch.zeros((rows, cols), dtype=torch.uint8, device=sf.device)
        scale[:M, :K // 16] = sf.reshape(M, K // 16)
    return {"data": data.view(torch.uint8).reshape(M, K // 2), "scale": scale,
            "amax": np.array([g], np.float32)}


def refuse_unsupported_device():
    """Exits, before the handshake and with a message, where FlashInfer's kernels cannot run."""
    if not torch.cuda.is_available():
        sys.exit("flashinfer adapter: no CUDA device; FlashInfer's fp4_quantize is CUDA only (SM100 or newer)")
    capability = torch.cuda.get_device_capability(DEVICE)
    if isinstance(capability, tuple) and capability < (10, 0):
        sys.exit(f"flashinfer adapter: {torch.cuda.get_device_name(DEVICE)} is SM{capability[0]}{capability[1]}; "
                 "FlashInfer's NVFP4 quantize kernels need SM100 or newer (cvt.rn.satfinite.e2m1x2.f32)")


def build():
    """Compiles (or loads from the JIT cache) FlashInfer's fp4_quantization module with one tiny call."""
    one = torch.ones((128, 64), dtype=torch.bfloat16, device=DEVICE)
    flashinfer.fp4_quantize(one, torch.ones(1, dtype=torch.float32, device=DEVICE), backend="cuda",
                            nvfp4_4over6=None)
    torch.cuda.synchronize()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="a CUDA device: cuda or cuda:N (FlashInfer has no CPU path)")
    parser.add_argument("--build", action="store_true", help="JIT-compile FlashInfer's quantize module, then exit")
    args = parser.parse_args()
    DEVICE = args.device
    with contextlib.redirect_stdout(sys.stderr):
        refuse_unsupported_device()
        if DEVICE != "cuda" and hasattr(torch.cuda, "set_device"):
            torch.cuda.set_device(DEVICE)  # the kernels launch on the current device's stream
        build()  # so that the first case does not wait for nvcc
    if args.build:
        print(f"flashinfer {flashinfer.__version__}: fp4_quantize module ready on {DEVICE}", file=sys.stderr)
        sys.exit(0)
    serve_and_exit(f"flashinfer {flashinfer.__version__} (fp4_quantize, exact path) on {DEVICE}")
