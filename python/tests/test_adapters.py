"""Every worker adapter (the modules of nvfp4_verify.adapters, and the worker scripts of
python/examples/) against today's registry, without its peer (stubbed_adapter.py runs it with the
peer's modules stubbed and the reference behind it): the declaration must still be valid, and a
campaign inside it must never reach a case the adapter's own checks reject. A registry that drops a
value an adapter declares, or an adapter that opts into a parameter its checks cannot take, fails
here, in CI, where the peers are never installed. The modules run from the package under test (the
interpreter's PYTHONPATH), the scripts by their paths."""
import os
import pathlib
import subprocess
import sys

import pytest

from helpers import REPO

PACKAGE_ADAPTERS = REPO / "python" / "nvfp4_verify" / "adapters"
ADAPTERS = [f"nvfp4_verify.adapters.{p.stem}" for p in sorted(PACKAGE_ADAPTERS.glob("[!_]*.py"))] + \
    [str(p) for p in sorted((REPO / "python" / "examples").glob("*_worker.py"))]
RUNNER = REPO / "python" / "tests" / "stubbed_adapter.py"
TORCHAO = PACKAGE_ADAPTERS / "torchao.py"


def name(adapter):
    """torchao for nvfp4_verify.adapters.torchao, quantize_worker for python/examples/quantize_worker.py."""
    return pathlib.Path(adapter).stem if adapter.endswith(".py") else adapter.rpartition(".")[2]


def run(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=600)


def stubbed(adapter):
    return f"{sys.executable} {RUNNER} {adapter}"


def campaign(cli, adapter, tmp_path, cases=300):
    return run(cli, "fuzz", "--backends", "reference,worker", "--worker", stubbed(adapter), "--worker-timeout", 60,
               "--cases", cases, "--seed", 11, "--corpus", tmp_path / "found")


def test_every_adapter_is_checked():
    assert {name(a) for a in ADAPTERS} >= {"torchao", "modelopt", "torch_matmul", "quantize_worker"}


def test_importing_the_adapters_package_imports_no_peer():
    # torch and the peers are imported only when an adapter runs (python3 -m nvfp4_verify.adapters.NAME).
    probe = ("import sys, nvfp4_verify.adapters; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'torchao', 'modelopt'}))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stdout + run.stderr


def ggml_library():
    return pathlib.Path(os.environ.get("NVFP4_GGML_LIB") or REPO / "build-gpu" / "ggml" / "libggml-base.so")


@pytest.mark.parametrize("adapter", ADAPTERS, ids=name)
def test_adapter_declaration_and_checks_fit_the_registry(cli, adapter, tmp_path):
    if name(adapter) == "ggml" and not ggml_library().is_file():  # a C library: nothing to stub, ggml itself runs
        pytest.skip(f"ggml: {ggml_library()} is not built (scripts/build-ggml-peer builds it)")
    selftest = run(cli, "worker-selftest", "--worker", stubbed(adapter), "--worker-timeout", 60)
    assert selftest.returncode == 0, selftest.stdout + selftest.stderr
    assert "held at their defaults" in selftest.stdout, selftest.stdout
    fuzz = campaign(cli, adapter, tmp_path)
    assert fuzz.returncode == 0, fuzz.stdout + fuzz.stderr
    assert "0 failures" in fuzz.stdout and "fuzz: space: " in fuzz.stdout, fuzz.stdout


def stale_copy(tmp_path, old, new):
    """The torchao adapter with one edit to its declaration, as a script in tmp_path."""
    source = TORCHAO.read_text()
    assert old in source, f"{old!r} is no longer in {TORCHAO}: update this test"
    path = tmp_path / "stale_worker.py"
    path.write_text(source.replace(old, new))
    return path


def test_a_value_the_registry_does_not_have_fails(cli, tmp_path):
    stale = stale_copy(tmp_path, 'block=["1d"]', 'block=["1d", "3d"]')
    selftest = run(cli, "worker-selftest", "--worker", stubbed(stale), "--worker-timeout", 60)
    assert selftest.returncode == 1, selftest.stdout + selftest.stderr
    assert "FAIL  handshake" in selftest.stdout and "'3d'" in selftest.stdout, selftest.stdout


def test_a_declared_parameter_its_checks_reject_fails(cli, tmp_path):
    # Opting into expert weights without teaching check_shape about 3-D inputs: the campaign sends
    # [E, N, K] tensors, the adapter rejects them (E_RANK) where the reference runs them.
    stale = stale_copy(tmp_path, "rht=[False],", "rht=[False], experts=[False, True],")
    fuzz = campaign(cli, stale, tmp_path, cases=2000)
    assert fuzz.returncode == 1, fuzz.stdout + fuzz.stderr
    assert "reference: ran; worker: quantize: x has rank 3, not 2" in fuzz.stdout, fuzz.stdout
