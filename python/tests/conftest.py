"""Shared fixtures: fresh random inputs (the seed is printed, so a failure can be replayed with
NVFP4_TEST_SEED). The nvfp4-verify command line the bindings are checked against (`cli`) is the
repository's conftest.py's."""
import os
import secrets

import numpy as np
import pytest


@pytest.fixture
def rng():
    seed = int(os.environ.get("NVFP4_TEST_SEED") or secrets.randbits(63))
    print(f"NVFP4_TEST_SEED={seed}")
    return np.random.default_rng(seed)

