"""A worker (docs/spec/worker-protocol.md) that runs `gemm` in the modes `mma-sm100` and `mma-sm120`
through Microsoft's MMA-Sim (PyPI `mmasim`, 2.1.1), the bit-accurate model of NVIDIA's MMA
instructions, so that a campaign proves the project's model of them (NUMERICS.md §3.20.6):

    nvfp4-verify fuzz --ops gemm --backends reference,worker --time 5m \\
        --worker 'python3 python/examples/mmasim_worker.py'

For each case, one MMA-Sim operation runs the whole chain along K (its `__call__` loops its
instruction over K in steps of 64, the accumulator starting at C = +0.0):
- mma-sm100: mmasim.nv_ptx.TCGen05MMABlockScale("Blackwell",
  "m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3"), tcgen05.mma on sm_100;
- mma-sm120: mmasim.nv_ptx.MMABlockScale("RTX Blackwell",
  "m16n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3"), mma.sync on sm_120.
MMA-Sim's operation takes whole matrices (it does not tile M and N), so the shape in its name only
selects the instruction's arithmetic.

What the adapter converts, and the little it computes itself:
- data: the registry's bytes hold the even element in the low nibble; MMA-Sim's unpacking reads the
  high nibble first, so each byte's nibbles are swapped. A is [M, K/2], B is passed as [K/2, N].
- scales: the compact [roundup(rows,128), roundup(K/16,4)] bytes cut to [rows, K/16], viewed as
  float8_e4m3fn (MMA-Sim clears bit 7 itself: UE4M3); B's transposed to [K/16, N].
- the epilogue, which is no instruction: t = RN(alpha·acc) (one FP32 multiplication), then, when
  beta is given and nonzero, fma32(beta, C, t) (beta·C is exact in binary64, the sum is taken to
  odd in binary64 and rounded once to binary32), then bias (an FP32 addition) and the output
  rounding (torch's RNE conversion). alpha comes from the amaxes by §3.20.1 when not given.
It declares what the modes define without row scaling: compact scales, every output dtype,
alpha, beta and bias. With NVFP4_MMASIM_COUNTS set to a path, it appends one JSON line per case to
that file (the harness may stop a worker without a bye): the mode, the modelled instructions
(sm_120's m16n8k64 tiles of the padded shape, times K/64) and the fused dot-adds (one per output and
64-element chunk). Prints nothing to stdout.
"""
import argparse
import contextlib
import json
import os
import sys

import numpy as np

with contextlib.redirect_stdout(sys.stderr):  # whatever an import prints must not reach the frames
    import mmasim
    import torch
    from mmasim.nv_ptx import MMABlockScale, TCGen05MMABlockScale

from nvfp4_verify import worker
from nvfp4_verify.adapters._gemm_operands import alpha_of, check_operands
from nvfp4_verify.torch_utils import to_torch

OUTPUT = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}
INSTRUCTIONS = {
    "mma-sm100": lambda: TCGen05MMABlockScale("Blackwell", "m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3"),
    "mma-sm120": lambda: MMABlockScale("RTX Blackwell", "m16n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3"),
}
_ops = {}
COUNTS = os.environ.get("NVFP4_MMASIM_COUNTS")


def swapped_nibbles(data):
    data = torch.from_numpy(np.ascontiguousarray(data))
    return (data << 4) | (data >> 4)


def e4m3(scale, rows, K):
    return torch.from_numpy(np.ascontiguousarray(scale[:rows, : K // 16])).view(torch.float8_e4m3fn)


def fma32(beta, c, t):
    """RN(beta·c + t) with one rounding. beta·c is exact in binary64 (24 + 24 bits); the binary64 sum
    is made odd when inexact (round to odd), so that its rounding to binary32 is the correct one."""
    p = beta.double() * c.double()
    s = p + t.double()
    pb = s - t.double()
    err = (p - pb) + (t.double() - (s - pb))  # TwoSum: s + err = p + t exactly (finite s)
    even = (s.view(torch.int64) & 1) == 0
    fix = torch.isfinite(s) & (err != 0) & even
    toward = torch.where(err > 0, torch.full_like(s, float("inf")), torch.full_like(s, float("-inf")))
    return torch.where(fix, torch.nextafter(s, toward), s).float()


@worker.implements("gemm", accumulation=list(INSTRUCTIONS), output_dtype=["F32", "BF16", "F16"], alpha=worker.ANY,
                   beta=worker.ANY, with_bias=[False, True], scale_layout=["compact"], row_scaled=[False],
                   accumulate=[False])
def gemm(inputs, params):
    M, N, K = check_operands(inputs)
    mode = params["accumulation"]
    if mode not in _ops:
        _ops[mode] = INSTRUCTIONS[mode]()
    A = swapped_nibbles(inputs["a_data"])
    B = swapped_nibbles(inputs["b_data"]).T
    sa = e4m3(inputs["a_scale"], M, K)
    sb = e4m3(inputs["b_scale"], N, K).T
    acc = _ops[mode](A, B, torch.zeros((M, N), dtype=torch.float32), sa, sb)
    if COUNTS:
        with open(COUNTS, "a") as f:
            chunks = -(-K // 64)
            f.write(json.dumps({"mode": mode, "instructions": -(-M // 16) * -(-N // 8) * chunks,
                                "dot_adds": M * N * chunks}) + "\n")

    alpha = torch.tensor(alpha_of(inputs, params), dtype=torch.float32)
    d = alpha * acc
    beta = worker.f32(params["beta"])
    if beta is not None and beta != 0.0:
        c = to_torch(np.ascontiguousarray(inputs["c"]))
        d = fma32(torch.full_like(c, beta), c, d)
    if params["with_bias"]:
        d = d + to_torch(np.ascontiguousarray(inputs["bias"])).reshape(1, N)
    return {"d": d.to(OUTPUT[params["output_dtype"]])}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    torch.set_num_threads(1)  # one worker per harness job; MMA-Sim's tensors are small
    try:
        version = __import__("importlib.metadata").metadata.version("mmasim")
    except Exception:
        version = getattr(mmasim, "__version__", "unknown")
    worker.serve(f"MMA-Sim {version} (torch {torch.__version__}, CPU)")
    sys.stderr.flush()
    os._exit(0)
