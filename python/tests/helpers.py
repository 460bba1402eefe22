"""Test inputs, bitwise equality, the repository's root."""
import pathlib

import ml_dtypes
import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]


def random_matrix(rng, dtype, rows=None, cols=None):
    """A [rows, cols] matrix (multiples of 16 when not given) of normal values whose rows span many
    binades, with zeros and negative zeros sprinkled in."""
    rows = rows or 16 * int(rng.integers(1, 9))
    cols = cols or 16 * int(rng.integers(1, 9))
    x = rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-20, 20, size=(rows, 1)))
    x[rng.random((rows, cols)) < 0.05] = 0.0
    x[rng.random((rows, cols)) < 0.02] = -0.0
    with np.errstate(over="ignore"):  # F16 rows beyond 65504 become infinities, on purpose
        return x.astype(np.float32).astype({"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16}[dtype])


def same_bits(a, b):
    """Equal dtype, shape and bytes."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
