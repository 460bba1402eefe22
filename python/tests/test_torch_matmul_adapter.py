"""The PyTorch GEMM worker (nvfp4_verify.adapters.torch_matmul) under `fuzz --compare ulp`
(docs/guides/gemm-ulp.md): generated gemm cases inside its declaration must all get an answer of the
reference's schema (no rejection, protocol, schema or crash verdict), and the run reports its ULP
histogram. It needs torch, which the project's test environment does not install: the test skips,
saying why, unless the interpreter (this one, or NVFP4_PEER_PYTHON) can import it."""
import os
import subprocess
import sys

import pytest

from helpers import package_env

WORKER = "nvfp4_verify.adapters.torch_matmul"


def torch_python():
    python = os.environ.get("NVFP4_PEER_PYTHON") or sys.executable
    probe = subprocess.run([python, "-c", "import numpy, ml_dtypes, torch"], capture_output=True, text=True, timeout=300)
    if probe.returncode:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"{python} cannot import torch ({last}); set NVFP4_PEER_PYTHON to an interpreter that can")
    return python


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_torch_matmul_adapter_answers_every_gemm_case_and_gets_a_histogram(cli, tmp_path, precision):
    python = torch_python()
    env = package_env()
    run = subprocess.run([str(cli), "fuzz", "--ops", "gemm", "--backends", "reference,worker", "--compare", "ulp",
                          "--cases", "60", "--max-dim", "128", "--corpus", str(tmp_path / "found"),
                          "--worker", f"{python} -m {WORKER} --precision {precision}", "--worker-timeout", "120"],
                         capture_output=True, text=True, timeout=900, env=env)
    report = f"fuzz exit {run.returncode}:\n{run.stdout}\n{run.stderr[-3000:]}"
    assert run.returncode == 0, report  # no bound: only a verdict other than agree fails a case
    assert "ULP distance to EXACT:" in run.stdout, report
    assert "no bound (--max-ulp): every case passes" in run.stdout, report
