"""A worker (docs/spec/worker-protocol.md) running this folder's independent emulators of the
operations `rht` (hadamard.py) and `gemm` (gemm_exact.py), correct or with one catalogue fault:

    python tests/faults/gemm_rht_worker.py [--fault NAME]

FAULTS maps each fault to the operations it is exercised through and, under "params", the
declaration it narrows to so that every case of a campaign can show it (the harness draws only
cases inside the declaration). Needs PYTHONPATH=python for nvfp4_verify.worker.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # hadamard, gemm_exact beside this file

import gemm_exact  # noqa: E402
import hadamard  # noqa: E402
from nvfp4_verify import worker  # noqa: E402

FAULTS = {
    "rht-mask-bit-order": {"ops": ["rht"]},
    "rht-missing-norm": {"ops": ["rht"]},
    # Read swapped in B only: swapped in both operands D cannot change (gemm_exact._codes).
    "nibble-order-swapped": {"ops": ["gemm"]},
    # The row order matters only where the case's scales are swizzled.
    "swizzle-row-order": {"ops": ["gemm"], "params": {"scale_layout": ["swizzled"]}},
    "scale-layout-swapped": {"ops": ["gemm"]},
    "gemm-scale-per-32": {"ops": ["gemm"]},
    # The amaxes enter α only when `alpha` is absent and the GEMM is per-tensor (§3.20.4's α0
    # uses amaxes of 1 whatever the operands hold, so the fault has no defined meaning there).
    "gemm-alpha-missing": {"ops": ["gemm"], "params": {"alpha": [None], "row_scaled": [False]}},
    "gemm-alpha-inverted": {"ops": ["gemm"], "params": {"row_scaled": [False]}},
}

# The full declarations of the correct kernels (values as in `ops --json`).
DECLARATIONS = {
    "rht": {"rht_mask": worker.ANY},
    "gemm": {"output_dtype": ["F32", "BF16", "F16"], "scale_layout": ["compact", "swizzled"],
             "alpha": worker.ANY, "beta": worker.ANY, "with_bias": [False, True],
             "row_scaled": [False, True], "accumulate": [False, True]},
}


def rht_op(fault):
    def run(inputs, params):
        x = inputs["x"]
        if x.ndim != 2:
            raise worker.Nvfp4Error(f"rht: E_RANK: x has rank {x.ndim}", "E_RANK")
        if x.dtype.name != "bfloat16":
            raise worker.Nvfp4Error(f"rht: E_DTYPE: x is {x.dtype}; the transform takes BF16", "E_DTYPE")
        M, N = x.shape
        if M % 16:
            raise worker.Nvfp4Error(f"rht: E_DIM16_M: M={M} is not a multiple of 16", "E_DIM16_M")
        if N % 16:
            raise worker.Nvfp4Error(f"rht: E_DIM16_K: N={N} is not a multiple of 16", "E_DIM16_K")
        mask = int(params["rht_mask"])
        if mask > 0xFFFF:
            raise worker.Nvfp4Error(f"rht: E_UNSUPPORTED: rht_mask={mask:#x} has more than 16 bits", "E_UNSUPPORTED")
        return {"x_t": hadamard.rht(x.astype(np.float32), mask, fault)}
    return run


def gemm_op(fault):
    def run(inputs, params):
        try:
            return gemm_exact.gemm(inputs, params, fault)
        except gemm_exact.GemmError as e:
            raise worker.Nvfp4Error(str(e), e.code) from None
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fault", choices=sorted(FAULTS), help="the catalogue pattern to build in (absent: correct)")
    fault = ap.parse_args().fault
    ops = FAULTS[fault]["ops"] if fault else list(DECLARATIONS)
    for op in ops:
        params = {**DECLARATIONS[op], **(FAULTS[fault].get("params", {}) if fault else {})}
        handler = rht_op(fault) if op == "rht" else gemm_op(fault)
        worker.implements(op, **params)(handler)
    worker.serve(f"nvfp4-verify fault suite ({fault or 'correct'})")


if __name__ == "__main__":
    main()
