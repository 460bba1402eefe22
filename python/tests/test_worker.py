"""The worker side of docs/spec/worker-protocol.md, driven by hand from the test with the test's own
frame codec (frames.py): the documented example, and a pure-Python worker run without the native
extension (PYTHONPATH=python) that prints, raises and rejects."""
import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import nvfp4_verify as nv
from frames import frame, read_frame
from helpers import REPO, random_matrix, same_bits

EXAMPLE = REPO / "python" / "examples" / "quantize_worker.py"
NAMES = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16, "U8": np.uint8}
HELLO = {"type": "hello", "protocol": 2, "tool_version": "0.1.0", "registry_format": 1, "unnamed_params": "default"}


def wire(x):
    name = next(n for n, d in NAMES.items() if np.dtype(d) == x.dtype)
    return name, x.shape, np.ascontiguousarray(x).tobytes()


def array(dtype, shape, raw):
    return np.frombuffer(raw, NAMES[dtype]).reshape(shape)


class Worker:
    """A worker process; stderr goes to a file so that it can never block the worker."""

    def __init__(self, tmp_path, command, env=None):
        self.stderr_path = tmp_path / "stderr.txt"
        with open(self.stderr_path, "wb") as err:
            self.p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)

    def send(self, message, tensors=None):
        self.p.stdin.write(frame(message, tensors))
        self.p.stdin.flush()

    def receive(self):
        return read_frame(self.p.stdout)

    def finish(self, bye=True):
        """(exit status, bytes left on stdout, stderr text) after bye or end of input."""
        if bye:
            self.send({"type": "bye"})
        self.p.stdin.close()
        rest = self.p.stdout.read()
        return self.p.wait(timeout=60), rest, self.stderr_path.read_text()


def quantize_params(**overrides):
    """Every quantize parameter, encoded as the protocol sends them."""
    op = next(op for op in nv.ops()["operations"] if op["name"] == "quantize")
    params = {p["name"]: p["default"] for p in op["params"]}
    return {**params, **overrides}


def test_example_worker_answers_bit_for_bit(tmp_path, rng):
    w = Worker(tmp_path, [sys.executable, str(EXAMPLE)])
    w.send(HELLO)
    hello, tensors = w.receive()
    assert tensors == {}
    assert hello == {"type": "hello", "protocol": 2, "worker": "quantize_worker.py", "implements": [
        {"op": "quantize",
         "params": {"profile": ["te"], "block": ["1d"], "direction": ["rowwise", "both"], "row_scaled": [False],
                    "scale_layout": ["compact"]},
         "dtype": ["F32", "BF16"]}]}
    amax = np.float32(rng.uniform(1, 10))
    cases = [  # all in flight before the first answer is read
        (random_matrix(rng, "F32"), quantize_params(direction="both")),
        (random_matrix(rng, "BF16"), quantize_params(amax={"bits": "0x%08X" % amax.view(np.uint32)})),
        (random_matrix(rng, "F32", cols=40), quantize_params()),
    ]
    for i, (x, params) in enumerate(cases):
        w.send({"type": "run", "id": i, "op": "quantize", "params": params}, {"x": wire(x)})
    for i, (x, params) in enumerate(cases[:2]):
        result, tensors = w.receive()
        assert result == {"type": "result", "id": i, "ok": True}
        expected = nv.quantize(x, **params)
        assert sorted(tensors) == sorted(expected)
        for name, t in tensors.items():
            assert same_bits(array(*t), expected[name]), name
    result, tensors = w.receive()
    assert tensors == {} and result["id"] == 2 and result["ok"] is False and result["code"] == "E_DIM16_K"
    assert "K=40 is not a multiple of 16" in result["error"]
    status, rest, _ = w.finish()
    assert (status, rest) == (0, b"")


def test_end_of_input_ends_the_worker(tmp_path):
    w = Worker(tmp_path, [sys.executable, str(EXAMPLE)])
    w.send(HELLO)
    assert w.receive()[0]["type"] == "hello"
    status, rest, _ = w.finish(bye=False)
    assert (status, rest) == (0, b"")


PURE_WORKER = textwrap.dedent('''
    import importlib.util
    import os

    import numpy as np

    assert importlib.util.find_spec("nvfp4_verify._core") is None, "this worker must run without the extension"
    from nvfp4_verify import worker

    @worker.implements("amax_global", dtype="f32")
    def amax_global(inputs, params):
        print("a stray print")
        os.write(1, b"stray bytes on file descriptor 1\\n")
        x = inputs["x"]
        if params["profile"] == "torchao":
            raise RuntimeError("boom")
        if x.ndim != 2:
            raise worker.Nvfp4Error("amax_global: E_RANK: x is not 2-D", "E_RANK")
        return {"amax": np.abs(x).max().reshape(1), "none": None}

    worker.serve(name="pure amax")
''')


def test_pure_python_worker(tmp_path, rng):
    script = tmp_path / "pure_worker.py"
    script.write_text(PURE_WORKER)
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}  # the pure-Python modules, no extension
    w = Worker(tmp_path, [sys.executable, str(script)], env=env)
    w.send(HELLO)
    assert w.receive() == ({"type": "hello", "protocol": 2, "worker": "pure amax",
                            "implements": [{"op": "amax_global", "params": {}, "dtype": ["F32"]}]}, {})
    x = random_matrix(rng, "F32")
    w.send({"type": "run", "id": 0, "op": "amax_global", "params": {"profile": "te"}}, {"x": wire(x)})
    w.send({"type": "run", "id": 1, "op": "amax_global", "params": {"profile": "torchao"}}, {"x": wire(x)})
    w.send({"type": "run", "id": 2, "op": "amax_global", "params": {"profile": "te"}}, {"x": wire(x[0])})
    result, tensors = w.receive()
    assert result == {"type": "result", "id": 0, "ok": True}
    assert list(tensors) == ["amax"] and same_bits(array(*tensors["amax"]), np.abs(x).max().reshape(1))
    assert w.receive() == ({"type": "result", "id": 1, "ok": False, "error": "RuntimeError: boom"}, {})
    assert w.receive() == ({"type": "result", "id": 2, "ok": False, "error": "amax_global: E_RANK: x is not 2-D",
                            "code": "E_RANK"}, {})
    status, rest, stderr = w.finish()
    assert (status, rest) == (0, b"")
    for text in ("a stray print", "stray bytes on file descriptor 1", "RuntimeError: boom"):
        assert text in stderr


@pytest.mark.parametrize("garbage", [b"\x05\x00\x00\x00\x00\x00\x00\x00hello", b"\x03\x00\x00"])
def test_malformed_input_exits_2(tmp_path, garbage):
    w = Worker(tmp_path, [sys.executable, str(EXAMPLE)])
    w.p.stdin.write(garbage)
    status, rest, stderr = w.finish(bye=False)
    assert (status, rest) == (2, b"") and "worker protocol error" in stderr
