"""A worker (docs/spec/worker-protocol.md) around nvfp4_numpy.py's quantize and dequantize, the
correct kernel or, with `--fault NAME`, one pattern of docs/spec/faults.md built into it:

    PYTHONPATH=python python tests/faults/quantize_worker.py [--fault NAME]

FAULTS lists, per pattern, the operations a campaign exercises it through (the suite's `--ops`),
under "params" how the fault narrows the declaration (the campaign draws only cases inside a declaration, so
narrowing it to where the bug lives makes a short campaign reach it; the bug itself is the same
everywhere) and, under "campaign", where the defaults of test_fault_suite.py do not do, the
campaign's seed, case count or largest dimension. Those were chosen so that the shrunk case tells the pattern from its
look-alikes: a shrunk case of one or two differing bytes is often reproduced by several patterns.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # nvfp4_numpy beside this file

import numpy as np  # noqa: E402

import nvfp4_numpy  # noqa: E402
from nvfp4_verify import worker  # noqa: E402

ANY = worker.ANY
# The widest declaration this kernel supports: profile te, everything but rht and experts.
QUANTIZE = dict(profile=["te"], block=["1d", "2d"], direction=["rowwise", "columnwise", "both"],
                row_scaled=[False, True], amax=ANY, scale_layout=["compact", "swizzled"],
                rounding=["nearest", "stochastic"], seed=ANY, offset=ANY)
DEQUANTIZE = dict(profile=["te"], output_dtype=["F32", "BF16", "F16"])
DTYPES = ["F32", "BF16", "F16"]

NEAREST = {"rounding": ["nearest"]}  # SR replaces the E2M1 encoder (§3.18): keep the encoder's faults in it
# Overrides of the amax that make a global scale the data cannot reach: 0 (g = 0 with nonzero
# data) and tiny values (block scales far above 464), plus none. The generator draws these among
# its special overrides; declaring only them (and no row scaling, which rejects an override)
# keeps the campaign on the cases where the fault shows.
AMAX_EDGES = {"amax": [None, {"bits": "0x00000000"}, {"bits": "0x00000001"}, {"bits": "0x006CE3EE"},
                       {"bits": "0x05280000"}, {"bits": "0x05280001"}], "row_scaled": [False]}

FAULTS = {
    "e2m1-ties-away": {"ops": ["quantize"], "params": NEAREST},
    "e2m1-toward-zero": {"ops": ["quantize"], "params": NEAREST},
    "e2m1-no-saturation": {"ops": ["quantize"], "params": NEAREST},
    "e4m3-ties-up": {"ops": ["quantize"], "params": {}},
    "e4m3-overflow-nan": {"ops": ["quantize"], "params": AMAX_EDGES},
    "e4m3-subnormal-as-normal": {"ops": ["dequantize"], "params": {}},
    "amax-signed-max": {"ops": ["quantize"], "params": {}},
    "gs-no-zero-guard": {"ops": ["quantize"], "params": AMAX_EDGES},
    "gs-reciprocal": {"ops": ["quantize"], "params": {}},
    # Seed 2: seed 1's first failure shrinks to amax = inf, where S = 1 and the two are one fault.
    "dq-senc-for-sdec": {"ops": ["dequantize"], "params": {}, "campaign": {"seed": 2}},
    "dq-drops-global": {"ops": ["dequantize"], "params": {}, "campaign": {"seed": 2}},
    "enc-unrounded-scale": {"ops": ["quantize"], "params": {}},
    "enc-s-div-sf": {"ops": ["quantize"], "params": {}},
    "nibble-order-swapped": {"ops": ["quantize", "dequantize"], "params": {}},
    # With at most 4 scale columns the plain row order is the compact layout (scale-layout-swapped):
    # shapes up to 128 give the shrunk case more than 4.
    "swizzle-row-order": {"ops": ["quantize"], "params": {"scale_layout": ["swizzled"]}, "campaign": {"max_dim": 128}},
    "scale-layout-swapped": {"ops": ["quantize"], "params": {}},
    "scale-padding-unzeroed": {"ops": ["quantize"], "params": {}},
    "scale-rows-unpadded": {"ops": ["quantize"], "params": {"scale_layout": ["compact"]}},
    "tile-amax-1x16": {"ops": ["quantize"], "params": {"block": ["2d"]}},
    # 1D only: the pattern pairs 1x16 blocks (MXFP4's 32-element blocks); 2D has no such pair.
    "block-amax-span-32": {"ops": ["quantize"], "params": {"block": ["1d"]}},
    "row-amax-global": {"ops": ["quantize"], "params": {"row_scaled": [True], "block": ["1d"], "amax": [None]}},
    # Not narrowed to rounding=stochastic: the generator draws SR with a size-dependent chance
    # that is 0 for a round's first cases, so it gives up on such a declaration.
    "sr-bits-reused-blocks": {"ops": ["quantize"], "params": {}},
    # The fault is in the columnwise copy (it draws dir = 0 bits even when it is the only copy).
    # Seeds 1 and 3 shrink to one flipped code that sr-bits-reused-blocks reproduces as well.
    "sr-bits-reused-copies": {"ops": ["quantize"], "params": {"direction": ["columnwise", "both"]},
                              "campaign": {"seed": 5}},
}


# Real faults outside the catalogue, built in the same way, to measure how often a verdict names a
# fault the catalogue was not written for (test_fault_suite.py's outside table). "named" lists the
# causes that would name it right: the knob or profile whose formula the fault is, or none where
# the project has no name for it.
OUTSIDE = {
    # TransformerEngine <= 2.13's order: RN(RN(A/6) * S) (te-2.13's BS).
    "bs-div6-first": {"ops": ["quantize"], "params": {}, "named": ["te with BS=A_DIV6_MUL_S", "profile te-2.13"]},
    # torch.amax in a kernel otherwise TE's: a NaN element makes the amax NaN.
    "amax-nan-propagates": {"ops": ["quantize"], "params": {}, "named": ["te with AMAX=PROPAGATE"]},
    # The encode factor without its FLT_MAX cap: a zero block's 1/0 reaches the codes as inf.
    "enc-no-cap": {"ops": ["quantize"], "params": {}, "named": ["te with ECAP=NONE"]},
    # ModelOpt's zero-block rule in a TE kernel.
    "zero-scale-one": {"ops": ["quantize"], "params": {}, "named": ["te with ZERO=ONE"]},
    # S = 2688 * (1/g), the reciprocal rounded first (a fast-math division).
    "gs-fast-recip": {"ops": ["quantize"], "params": {}, "named": ["te with GS=G_CT"]},
    # -ftz / fast-math: subnormal inputs read as zero.
    "ftz-inputs": {"ops": ["quantize"], "params": {}, "named": []},
    # The encode scale kept in BF16.
    "gs-bf16": {"ops": ["quantize"], "params": {}, "named": []},
    # A hand-written E4M3 cast that truncates.
    "e4m3-truncated": {"ops": ["quantize"], "params": {}, "named": []},
    # floor(y / step + 0.5) on the signed value.
    "e2m1-half-up": {"ops": ["quantize"], "params": NEAREST, "named": []},
    # The columnwise copy quantized again from the dequantized rowwise copy.
    "columnwise-from-rowwise": {"ops": ["quantize"], "params": {"direction": ["both"]}, "named": []},
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    faults = {**FAULTS, **OUTSIDE}
    parser.add_argument("--fault", choices=sorted(faults), help="the pattern to build in (absent: the correct kernel)")
    fault = parser.parse_args().fault
    narrow = faults[fault]["params"] if fault else {}
    ops = faults[fault]["ops"] if fault else ["quantize", "dequantize"]

    if "quantize" in ops:
        @worker.implements("quantize", dtype=DTYPES, **{**QUANTIZE, **narrow})
        def quantize(inputs, params):
            return nvfp4_numpy.quantize(np.ascontiguousarray(inputs["x"]), params, fault)

    if "dequantize" in ops:
        @worker.implements("dequantize", **DEQUANTIZE)
        def dequantize(inputs, params):
            return nvfp4_numpy.dequantize(inputs["data"], inputs["scale"], inputs["amax"], params, fault)

    worker.serve(f"nvfp4-numpy {'fault ' + fault if fault else 'correct'}")


if __name__ == "__main__":
    main()
