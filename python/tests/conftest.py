"""Shared fixtures: fresh random inputs (the seed is printed, so a failure can be replayed with
NVFP4_TEST_SEED) and the nvfp4-verify command line the bindings are checked against."""
import os
import pathlib
import secrets

import numpy as np
import pytest

from helpers import REPO


@pytest.fixture
def rng():
    seed = int(os.environ.get("NVFP4_TEST_SEED") or secrets.randbits(63))
    print(f"NVFP4_TEST_SEED={seed}")
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def cli():
    path = pathlib.Path(os.environ.get("NVFP4_VERIFY_CLI") or REPO / "build" / "cli" / "nvfp4-verify")
    if not path.is_file():
        pytest.skip(f"the nvfp4-verify command line is not built at {path} (scripts/build, or set NVFP4_VERIFY_CLI)")
    return path

