"""A worker (docs/spec/worker-protocol.md) that runs `gemm` the way Hopper users run an NVFP4 GEMM today,
since sm_90 has no NVFP4 block-scaled GEMM: dequantize both operands, torch.matmul, scale by
alpha. Its distance to EXACT is what `--compare ulp` measures (docs/guides/gemm-ulp.md):

    nvfp4-verify fuzz --backends reference,worker --ops gemm --compare ulp --time 60s \\
        --worker 'python3 -m nvfp4_verify.adapters.torch_matmul [--precision fp32|bf16] [--device cuda|cpu]'

d = RNout(alpha * (A_deq @ B_deq^T)), where:
- A_deq[m][k] = f4(code) * f8(scale of block k // 16) (NUMERICS.md §3.20.1), the per-tensor amaxes
  left out of the operands as in TransformerEngine's GEMM; every such product is exact in FP32 and
  in BF16 (at most 6 significant bits, magnitudes 2^-10 .. 2688).
- alpha: the case's, else from the amaxes by TransformerEngine's formula (§3.20.1), three FP32
  multiplications.
- --precision fp32 (default): an FP32 matmul with TF32 off; bf16: BF16 operands through
  torch.matmul's BF16 GEMM (FP32 accumulation, BF16 product), then FP32. NVFP4_TORCH_PRECISION sets
  the default.
- alpha * product is one FP32 multiplication per element; d is then rounded to the output dtype
  (F32, BF16 or F16, round to nearest even).
It declares what one torch.matmul computes: compact scales, no C (beta null), no bias, no row
scaling. Operands of the wrong shape are rejected without a code (they agree with any rejection of
the reference). Prints nothing to stdout; needs torch, numpy, ml_dtypes and no native extension: the
installed nvfp4_verify, or PYTHONPATH=python in the source tree.
"""
import argparse
import contextlib
import os
import sys

import numpy as np

with contextlib.redirect_stdout(sys.stderr):  # whatever an import prints must not reach the frames
    import torch

from nvfp4_verify import worker
from nvfp4_verify.adapters._shared import serve_and_exit
from nvfp4_verify.adapters._gemm_operands import alpha_of, check_operands
from nvfp4_verify.torch_utils import to_torch

DEVICE = "cpu"
PRECISION = "fp32"
OUTPUT = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def e2m1_values():
    """f4 of the 16 codes: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives (code 8 is -0)."""
    magnitude = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    return torch.tensor(magnitude + [-v for v in magnitude], dtype=torch.float32)


def e4m3_values():
    """f8 of the 256 bytes, signed (NUMERICS.md §2.2.1): subnormals m·2^-9, NaN for 0x7F and 0xFF."""
    values = []
    for b in range(256):
        e, m = (b >> 3) & 0xF, b & 0x7
        v = float("nan") if (e, m) == (15, 7) else m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
        values.append(-v if b & 0x80 else v)
    return torch.tensor(values, dtype=torch.float32)


def dequantize(data, scale, rows, K):
    """[rows, K] FP32: f4(code) * f8(block scale); the even element is the low nibble (§2.1.3)."""
    data = to_torch(np.ascontiguousarray(data), DEVICE).long()
    codes = torch.stack((data & 0xF, data >> 4), dim=-1).reshape(rows, K)
    scales = to_torch(np.ascontiguousarray(scale[:rows, : K // 16]), DEVICE).long()
    return E2M1[codes] * E4M3[scales].repeat_interleave(16, dim=1)


@worker.implements("gemm", output_dtype=["F32", "BF16", "F16"], alpha=worker.ANY, scale_layout=["compact"], beta=[None],
                   with_bias=[False], row_scaled=[False], accumulate=[False])
def gemm(inputs, params):
    M, N, K = check_operands(inputs)
    a = dequantize(inputs["a_data"], inputs["a_scale"], M, K)
    b = dequantize(inputs["b_data"], inputs["b_scale"], N, K)
    if PRECISION == "bf16":
        product = torch.matmul(a.to(torch.bfloat16), b.to(torch.bfloat16).T).float()
    else:
        product = torch.matmul(a, b.T)
    d = product * torch.tensor(alpha_of(inputs, params), dtype=torch.float32, device=DEVICE)
    return {"d": d.to(OUTPUT[params["output_dtype"]])}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default=os.environ.get("NVFP4_TORCH_PRECISION", "fp32"))
    args = parser.parse_args()
    DEVICE, PRECISION = args.device, args.precision
    # FP32 means FP32: no TF32 tensor cores in the FP32 matmul.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    E2M1, E4M3 = e2m1_values().to(DEVICE), e4m3_values().to(DEVICE)
    serve_and_exit(f"torch {torch.__version__} matmul ({PRECISION}) on {DEVICE}")
