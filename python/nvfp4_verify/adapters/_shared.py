"""What the adapters share: the quantize op's shape domain and padded compact scale layout
(NUMERICS.md §2.4.1), and the worker's prompt exit. Representation only: no arithmetic."""
import os
import sys

import numpy as np

from nvfp4_verify import worker


def roundup(a, b):
    return (a + b - 1) // b * b


def check_shape(x, op="quantize"):
    """The registry's domain, rejected with the reference's codes: rank 2, M and K multiples of 16."""
    if x.ndim != 2:
        raise worker.Nvfp4Error(f"{op}: x has rank {x.ndim}, not 2", "E_RANK")
    M, K = x.shape
    if K % 16:
        raise worker.Nvfp4Error(f"{op}: K={K} is not a multiple of 16", "E_DIM16_K")
    if M % 16:
        raise worker.Nvfp4Error(f"{op}: M={M} is not a multiple of 16", "E_DIM16_M")


def padded_scale(scale_bytes):
    """A [rows, cols] uint8 tensor of E4M3 bytes (cols = K/16), torch or numpy, in the registry's
    compact layout [roundup(rows, 128), roundup(cols, 4)], padded with 0x00 (the same kind of array)."""
    rows, cols = scale_bytes.shape
    shape = (roundup(rows, 128), roundup(cols, 4))
    out = scale_bytes.new_zeros(shape) if hasattr(scale_bytes, "new_zeros") else np.zeros(shape, dtype=np.uint8)
    out[:rows, :cols] = scale_bytes
    return out


def serve_and_exit(name):
    """Serves until bye, then skips the interpreter's teardown of torch and the peer (seconds of
    finalizers): serve() has written and flushed every frame."""
    worker.serve(name)
    sys.stderr.flush()
    os._exit(0)
