"""The plain-Python consumer of docs/vectors.md, run as the document prints it, over a pack the CLI
writes: with the package's reference functions as the framework it checks every vector of every
operation, and with a framework one bit off it fails, naming the vector."""
import json
import pathlib
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import nvfp4_verify as nv
from helpers import package_env

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "vectors.md"


def consumer():
    """The namespace of the document's consumer block, executed."""
    text = DOC.read_text()
    code = re.search(r"<!-- consumer -->\n```python\n(.*?)```", text, re.S).group(1)
    assert len(code.strip().splitlines()) <= 40, "the consumer must stay within 40 lines"
    assert "nvfp4_verify" not in code
    namespace = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace


def framework(op):
    """The package's reference as the framework: BF16 in and out as uint16 bit patterns (the pack's
    only 16-bit integer tensors)."""
    def run(inputs, params):
        inputs = {k: (a.view(ml_dtypes.bfloat16) if a.dtype == np.uint16 else a) for k, a in inputs.items()}
        out = getattr(nv, op)(inputs, **params)
        return {k: (a.view(np.uint16) if a.dtype == ml_dtypes.bfloat16 else a) for k, a in out.items()}

    return run


@pytest.fixture(scope="module")
def pack(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("vectors") / "pack"
    subprocess.run([str(cli), "vectors", "--level", "1", "--profiles", "te,torchao", "--seed", "5", "--output", str(out)],
                   check=True, capture_output=True, text=True)
    return out


def test_the_documented_consumer_passes_on_the_reference(pack):
    """Every operation the pack holds, each with vectors checked."""
    ops = sorted({f["op"] for f in json.loads((pack / "manifest.json").read_text())["files"]})
    assert "quantize" in ops and "partial_cast_2d" in ops
    check_pack = consumer()["check_pack"]
    for op in ops:
        assert check_pack(pack, op, framework(op)) > 0, op


def test_the_documented_consumer_catches_one_flipped_code_bit(pack, rng):
    reference = framework("quantize")
    calls = {"n": 0}
    victim = int(rng.integers(200))

    def faulty(inputs, params):
        out = reference(inputs, params)
        calls["n"] += 1
        if calls["n"] == victim + 1:  # the rowwise codes, or the columnwise ones of a columnwise-only vector
            name = "data" if "data" in out else "data_t"
            out[name] = out[name].copy()
            out[name].flat[int(rng.integers(out[name].size))] ^= 0x01
        return out

    with pytest.raises(AssertionError, match=r"quantize-\S+\.safetensors v\d{4} data(_t)?$"):
        consumer()["check_pack"](pack, "quantize", faulty)


def test_the_documented_consumer_refuses_a_damaged_file(pack, tmp_path):
    damaged = tmp_path / "pack"
    subprocess.run(["cp", "-r", str(pack), str(damaged)], check=True)
    rht = damaged / "rht.safetensors"
    raw = bytearray(rht.read_bytes())
    raw[-1] ^= 0x40
    rht.write_bytes(bytes(raw))
    with pytest.raises(AssertionError, match="rht.safetensors: damaged"):
        consumer()["check_pack"](damaged, "rht", framework("rht"))


def test_vectors_check_through_the_worker_example(cli, pack, tmp_path):
    """vectors --check with the package's worker example: the vectors it declares agree, the others
    are skipped and counted."""
    example = pathlib.Path(__file__).resolve().parents[1] / "examples" / "quantize_worker.py"
    r = subprocess.run([str(cli), "vectors", "--check", str(pack), "--worker", f"{sys.executable} {example}",
                        "--report", str(tmp_path / "report")], capture_output=True, text=True, env=package_env())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    passed = re.search(r"^vectors: (\d+) passed, 0 failed, (\d+) skipped", r.stdout, re.M)
    assert passed and int(passed.group(1)) > 0 and int(passed.group(2)) > 0, r.stdout[-2000:]
    assert (tmp_path / "report" / "index.html").is_file()
