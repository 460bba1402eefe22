"""The labelled fault suite: each pattern of docs/spec/faults.md built by hand into a worker
(tests/faults/*_worker.py, `--fault NAME`), run as a short campaign through the worker path. The
campaign must catch it, shrink it, save it, and name it: the first failure's "causes" (the
catalogue patterns that reproduce it, best first) must start with the pattern, alone or among the
first `tied` causes that the shrunk case cannot tell apart (the table prints those as "a | b").

    NVFP4_VERIFY_CLI=build/cli/nvfp4-verify python -m pytest tests/faults -v

A worker file lists its faults in FAULTS = {name: {"ops": [...], "campaign": {...}}}; "campaign"
(optional) overrides the campaign's seed, case count and largest dimension (DEFAULT_CAMPAIGN),
and an optional module-level CORRECT_CAMPAIGN those of the correct kernel's campaign. Campaigns
are seeded, so a run repeats exactly; the seed is in the table printed at the end.
"""
import importlib.util
import json
import pathlib
import shlex
import subprocess
import sys

import numpy as np
import pytest

from nvfp4_verify import safetensors_image  # python/ is on sys.path through conftest.py

HERE = pathlib.Path(__file__).resolve().parent

# Worker files with a FAULTS table; those not written yet are skipped.
WORKER_FILES = [HERE / "quantize_worker.py", HERE / "gemm_rht_worker.py"]
# Small shapes keep shrinking fast and the whole suite at a few minutes on 2 cores; a fault may
# ask for more (a swizzle fault needs more than 4 scale columns to differ from the compact layout).
DEFAULT_CAMPAIGN = {"seed": 1, "cases": 50, "max_dim": 64}
CORRECT_CAMPAIGN = {"seed": 7, "cases": 400, "max_dim": 256}
# What shrinking reaches (measured): the shape seldom shrinks (a smaller shape regenerates the
# values from the case's recipe, and the failure is usually lost), so it stays within the
# campaign's largest dimension; the data pass then zeroes every 16-element block the failure
# does not need, leaving 0 to 4 nonzero elements of a float input. Byte inputs (dequantize's
# data and scales) are not zeroed.
MAX_NONZERO_AFTER_SHRINK = 32


def load_worker(path):
    spec = importlib.util.spec_from_file_location(f"fault_worker_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WORKERS = {path: load_worker(path) for path in WORKER_FILES if path.is_file()}
# Two workers may build the same pattern into different operations: the id names the worker too.
FAULT_PARAMS = [pytest.param(path, name, spec, id=f"{path.stem.removesuffix('_worker')}:{name}")
                for path, module in WORKERS.items() for name, spec in module.FAULTS.items()]


def worker_command(path, fault=None):
    return " ".join(shlex.quote(str(a)) for a in [sys.executable, path, *(["--fault", fault] if fault else [])])


def fuzz(cli, env, command, ops, out, seed, cases, max_dim):
    args = [str(cli), "fuzz", "--ops", *ops, "--backends", "reference,worker", "--worker", command,
            "--cases", str(cases), "--seed", str(seed), "--max-dim", str(max_dim), "--time", "300s", "--out", str(out)]
    print("$", shlex.join(args))
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="session")
def first_inputs(cli):
    """Operation -> the name of its first input in the registry (the one the shrinker is judged on)."""
    registry = json.loads(subprocess.run([str(cli), "ops", "--json"], capture_output=True, text=True, check=True).stdout)
    return {op["name"]: op["inputs"][0]["name"] for op in registry["operations"]}


@pytest.mark.parametrize("path, fault, spec", FAULT_PARAMS)
def test_fault_is_caught_shrunk_and_named(cli, worker_env, first_inputs, detection_table, tmp_path, path, fault, spec):
    c = {**DEFAULT_CAMPAIGN, **spec.get("campaign", {})}
    command = worker_command(path, fault)
    run = fuzz(cli, worker_env, command, spec["ops"], tmp_path, **c)
    print(run.stdout[-3000:], run.stderr[-2000:], sep="\n")
    assert run.returncode == 1, f"{fault}: a campaign that finds a failure exits 1, not {run.returncode}"
    failures = json.loads((tmp_path / "campaign.json").read_text())["failures"]
    assert failures, f"{fault}: not caught in {c['cases']} cases (seed {c['seed']})"
    first = failures[0]

    # Shrunk and saved: the corpus holds the case, it still fails on replay, and it is small.
    case_file = tmp_path / first["case_file"]
    assert case_file.parent == tmp_path / "corpus" and case_file.is_file()
    tensors, _ = safetensors_image.load(case_file)
    x = tensors[first_inputs[first["operation"]]]
    nonzero = int(np.count_nonzero(x.astype(np.float32))) if x.dtype.kind == "f" or x.dtype.name == "bfloat16" else None
    shape = "x".join(map(str, x.shape)) + f" {x.dtype.name}" + (f", {nonzero} nonzero" if nonzero is not None else "")
    causes, tied = first.get("causes"), max(first.get("tied", 1), 1)
    detection_table.append((fault, " ".join(spec["ops"]), c["seed"], c["cases"], first["cases_to_detection"], shape,
                            " | ".join(causes[:tied]) if causes else "(none)"))
    assert x.size <= c["max_dim"] ** 2
    if nonzero is not None:
        assert nonzero <= MAX_NONZERO_AFTER_SHRINK, f"{fault}: the shrunk {shape} input keeps {nonzero} nonzero elements"
    replay = subprocess.run([str(cli), "replay", "--backends", "reference,worker", "--worker", command, str(case_file)],
                            env=worker_env, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 1, f"{fault}: the saved case no longer fails on replay:\n{replay.stdout}"

    # Named: the verdict's first cause is the pattern itself, or one the case cannot tell it from.
    assert fault in causes[:tied], f"{fault}: the verdict names {causes[:tied]} first: {first['explanation']}"


OUTSIDE_PARAMS = [pytest.param(path, name, spec, id=f"{path.stem.removesuffix('_worker')}:{name}")
                  for path, module in WORKERS.items() for name, spec in getattr(module, "OUTSIDE", {}).items()]


@pytest.mark.parametrize("path, fault, spec", OUTSIDE_PARAMS)
def test_outside_fault_is_caught_and_never_misnamed(cli, worker_env, outside_table, tmp_path, path, fault, spec):
    """A real fault the catalogue was not written for: caught, and its verdict either names it (a
    cause in spec["named"] among the first tied causes) or says that nothing reproduces it; it
    never names a wrong cause. The table printed at the end says which."""
    c = {**DEFAULT_CAMPAIGN, **spec.get("campaign", {})}
    run = fuzz(cli, worker_env, worker_command(path, fault), spec["ops"], tmp_path, **c)
    print(run.stdout[-3000:], run.stderr[-2000:], sep="\n")
    assert run.returncode == 1, f"{fault}: a campaign that finds a failure exits 1, not {run.returncode}"
    failures = json.loads((tmp_path / "campaign.json").read_text())["failures"]
    assert failures, f"{fault}: not caught in {c['cases']} cases (seed {c['seed']})"
    first = failures[0]
    causes, tied = first.get("causes") or [], max(first.get("tied", 1), 1)
    named = [n for n in causes[:tied] if n in spec["named"]]
    outcome = "named" if named else "none reproduces" if not causes else "MISNAMED"
    outside_table.append((fault, first["cases_to_detection"], " | ".join(causes[:tied]) or "(none)", outcome))
    assert outcome != "MISNAMED", f"{fault}: the verdict names {causes[:tied]}: {first['explanation']}"


@pytest.mark.parametrize("path", list(WORKERS), ids=[p.stem for p in WORKERS])
def test_correct_kernel_passes(cli, worker_env, tmp_path, path):
    command = worker_command(path)
    selftest = subprocess.run([str(cli), "worker-selftest", "--worker", command], env=worker_env,
                              capture_output=True, text=True, timeout=300)
    assert selftest.returncode == 0, selftest.stdout + selftest.stderr
    ops = sorted({op for spec in WORKERS[path].FAULTS.values() for op in spec["ops"]})
    c = {**CORRECT_CAMPAIGN, **getattr(WORKERS[path], "CORRECT_CAMPAIGN", {})}
    run = fuzz(cli, worker_env, command, ops, tmp_path, **c)
    print(run.stdout[-3000:], run.stderr[-2000:], sep="\n")
    assert run.returncode == 0, f"the correct kernel fails: {run.stdout[-2000:]}"
    record = json.loads((tmp_path / "campaign.json").read_text())
    assert record["cases"] == c["cases"] and record["failures"] == []
