"""Fixtures shared by the repository's pytest suites (python/tests, tests/faults): the nvfp4-verify
command line under test."""
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def cli():
    path = pathlib.Path(os.environ.get("NVFP4_VERIFY_CLI") or REPO / "build" / "cli" / "nvfp4-verify")
    if not path.is_file():
        pytest.skip(f"the nvfp4-verify command line is not built at {path} (scripts/build, or set NVFP4_VERIFY_CLI)")
    return path
