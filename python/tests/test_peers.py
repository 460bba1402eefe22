"""The real-peer worker adapters (nvfp4_verify.adapters.torchao and .modelopt, run as `python -m`
with PYTHONPATH=python) through `nvfp4-verify worker-selftest`. They need torch and the peer, which
the project's test environment does not install: each test skips, saying why, unless the
interpreter that runs the adapter (this one, or NVFP4_PEER_PYTHON, e.g. a venv with torch, torchao
and nvidia-modelopt) can import them.

The profiles are defined as the peers run on CUDA. On the CPU PyTorch divides where CUDA multiplies
by a reciprocal, and x86 NaNs carry a sign and payload that GPU NaNs do not (NUMERICS.md §5.14), so
there a sampled case may legitimately differ in its bits: on the CPU a failed comparison passes if
its verdict is `mismatch` (right tensors, names, dtypes and shapes; other bits). On CUDA every check
must pass."""
import os
import re
import subprocess
import sys

import pytest

from helpers import package_env

PEERS = {  # adapter -> the modules it imports
    "torchao": ["torch", "torchao.prototype.mx_formats.nvfp4_tensor"],
    "modelopt": ["torch", "modelopt.torch.quantization.qtensor.nvfp4_tensor"],
}
COMPARISONS = ("equals the reference", "cases in flight")  # the checks that compare bits


def peer_python(peer):
    """The interpreter for the adapter, or pytest.skip with the reason it cannot run."""
    python = os.environ.get("NVFP4_PEER_PYTHON") or sys.executable
    imports = "; ".join(f"import {m}" for m in ["numpy", "ml_dtypes", *PEERS[peer]])
    try:
        probe = subprocess.run([python, "-c", imports], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"{peer}: cannot run {python}: {e}")
    if probe.returncode:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"{peer}: {python} cannot import torch and the peer ({last}); "
                    f"set NVFP4_PEER_PYTHON to an interpreter that can")
    return python


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_peer_adapter_passes_worker_selftest(cli, peer):
    python = peer_python(peer)
    env = package_env()
    run = subprocess.run([str(cli), "worker-selftest", "--worker", f"{python} -m nvfp4_verify.adapters.{peer}",
                          "--worker-timeout", "60"],
                         capture_output=True, text=True, timeout=900, env=env)
    lines = [line for line in run.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    report = f"worker-selftest exit {run.returncode}:\n{run.stdout}\n{run.stderr[-3000:]}"
    assert lines and lines[0].startswith("PASS  handshake"), report
    on_cuda = re.search(r"worker '.* on cuda", lines[0]) is not None
    for line in lines:
        if line.startswith("PASS"):
            continue
        comparison = any(c in line for c in COMPARISONS)
        assert comparison and not on_cuda and re.search(r": mismatch: ", line), f"{line}\n\n{report}"
    if on_cuda:
        assert run.returncode == 0, report
