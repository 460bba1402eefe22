"""Test inputs, bitwise equality, the repository's root, a worker's environment."""
import os
import pathlib

import ml_dtypes
import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]


def package_env():
    """The environment for a subprocess (a worker, or the CLI that starts one): PYTHONPATH first
    names the folder that holds the nvfp4_verify under test (a wheel's site-packages, the staged
    build/python/package or python/), so that another interpreter (NVFP4_PEER_PYTHON) imports the
    same package, and a wheel's console script still finds the binary beside it."""
    import nvfp4_verify

    folder = str(pathlib.Path(nvfp4_verify.__file__).absolute().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")]))}


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
