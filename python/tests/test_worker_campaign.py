"""The Python worker under the C++ harness: the documented example survives a fuzz campaign and
the conformance test; a Python worker with a bug is caught, saved with its verdict and replays to
it."""
import json
import pathlib
import struct
import subprocess
import sys
import textwrap

from helpers import REPO

EXAMPLE = REPO / "python" / "examples" / "quantize_worker.py"


def run(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=600)


def found_cases(corpus: pathlib.Path):
    """The saved case files' descriptions."""
    out = []
    for f in sorted(corpus.glob("*.safetensors")):
        raw = f.read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        out.append((f, json.loads(json.loads(raw[8:8 + n])["__metadata__"]["nvfp4_case"])))
    return out


def test_documented_example_passes_a_campaign_and_the_selftest(cli, tmp_path):
    worker = f"{sys.executable} {EXAMPLE}"
    fuzz = run(cli, "fuzz", "--ops", "quantize", "--backends", "reference,worker", "--worker", worker,
               "--cases", 300, "--seed", 7, "--corpus", tmp_path / "found")
    assert fuzz.returncode == 0, fuzz.stdout + fuzz.stderr
    assert "0 failures" in fuzz.stdout, fuzz.stdout
    selftest = run(cli, "worker-selftest", "--worker", worker)
    assert selftest.returncode == 0, selftest.stdout + selftest.stderr
    assert "all checks passed" in selftest.stdout


def test_buggy_python_worker_is_caught_saved_and_replayed(cli, tmp_path):
    # The example with two bugs: it raises for the columnwise copy, and flips a scale bit of
    # BF16 inputs. Each is found, shrunk, saved with its verdict and replays to it.
    buggy = tmp_path / "buggy_worker.py"
    buggy.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(EXAMPLE.parent)!r})
        import numpy as np
        import nvfp4_verify
        from nvfp4_verify import worker

        @worker.implements("quantize", profile=["te"], block=["1d"], direction=["rowwise", "both"],
                           row_scaled=[False], scale_layout=["compact"], dtype=["f32", "bf16"])
        def quantize(inputs, params):
            if params["direction"] == "both":
                raise NotImplementedError("columnwise copy not written yet")
            q = nvfp4_verify.quantize(np.ascontiguousarray(inputs["x"]), **params)
            if inputs["x"].dtype != np.float32:
                q["scale"][0, 0] ^= 1
            return q

        worker.serve()
    """))
    corpus = tmp_path / "found"
    fuzz = run(cli, "fuzz", "--ops", "quantize", "--backends", "reference,worker", "--worker",
               f"{sys.executable} {buggy}", "--cases", 300, "--corpus", corpus)
    assert fuzz.returncode == 1, fuzz.stdout + fuzz.stderr
    verdicts = {desc["found"] for _, desc in found_cases(corpus)}
    assert verdicts == {"error", "mismatch"}, fuzz.stdout
    replay = run(cli, "replay", corpus, "--backends", "reference,worker", "--worker", f"{sys.executable} {buggy}")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "as saved" in replay.stdout and "saved as" not in replay.stdout, replay.stdout
