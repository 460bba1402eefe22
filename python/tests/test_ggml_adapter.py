"""The ggml worker adapter (nvfp4_verify.adapters.ggml) against ggml itself: libggml-base.so as
scripts/build-ggml-peer builds it from the llama-cpp-python sdist (ggml 0.25.3). The worker is driven
by hand with the tests' own frame codec (frames.py): worked examples whose bytes ggml computed, the
repacking checked against ggml's block_nvfp4 read here independently, and, once the registry has the
profile `ggml`, worker-selftest. The library is not part of the project's test environment: each test
skips, saying why, unless it is built (or NVFP4_GGML_LIB names it)."""
import ctypes
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from frames import frame, read_frame
from helpers import REPO, package_env

WORKER = "nvfp4_verify.adapters.ggml"
HELLO = {"type": "hello", "protocol": 2, "tool_version": "0.1.0", "registry_format": 1, "unnamed_params": "default"}
INF, NAN = float("inf"), float("nan")

# (one 16-element block, ggml's scale byte, ggml's 16 codes), as quantize_row_nvfp4_ref computed them.
EXAMPLES = [
    ([.25, .75, 1.25, 1.75, 2.5, 3.5, 5, 6, -.25, -.75, -1.25, -1.75, -2.5, -3.5, -5, -6],  # ties: towards 0
     0x38, [0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15]),
    ([NAN, 1, 2, 3, 4, 5, 6, -NAN, 0, 0, 0, 0, 0, 0, 0, .7], 0x38,  # NaN: ignored by the amax, code 0
     [0, 2, 4, 5, 6, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
    ([INF, -INF, 1, -3, 2000, -2000, 448, 1000] + [0] * 8, 0x7E,  # inf: scale 448, infinities code 0
     [0, 0, 0, 0, 6, 14, 2, 4] + [0] * 8),
    ([-0.0, -.1, -.2, -.25, -.26, .1, 6, -6] + [0] * 8, 0x38, [0, 0, 0, 0, 9, 0, 7, 15] + [0] * 8),
    ([0.0] * 16, 0x00, [0] * 16),
    ([6 * 2**-10, 2**-10, -2**-10, 3 * 2**-11] + [0] * 12, 0x01, [5, 1, 9, 1] + [0] * 12),  # t = 2^-10: 0x01
    ([6 * 7.75 * 2**-9, 7 * 2**-9, 2**-9] + [0] * 13, 0x07, [7, 2, 0] + [0] * 13),  # t < 2^-6: capped at 0x07
    ([6 * 2**-11, -6 * 2**-11, 2**-11] + [0] * 13, 0x00, [0] * 16),  # scale 0x00: every code 0
    ([1536, 1024, 768, -512, 256] + [0] * 11, 0x7E, [5, 4, 3, 10, 1] + [0] * 11),  # t = 256 -> 0x7E (448)
    ([6.375, 1.0625, .53125, 1.59375] + [0] * 12, 0x39, [7, 2, 1, 3] + [0] * 12),  # t = 1.0625: ties away
    ([1e6, 2**34, 2**35, 2**36, -2**36, 1e30, 3000, 3360] + [0] * 8, 0x7E,  # |x| > 6 * 448
     [7, 7, 5, 7, 15, 0, 7, 7] + [0] * 8),
]


def library():
    path = pathlib.Path(os.environ.get("NVFP4_GGML_LIB") or REPO / "build-gpu" / "ggml" / "libggml-base.so")
    if not path.is_file():
        pytest.skip(f"ggml: {path} is not built (scripts/build-ggml-peer builds it; NVFP4_GGML_LIB names another)")
    return path


def wire(x):
    return {np.dtype(np.float32): "F32", np.dtype(np.uint8): "U8"}[x.dtype], x.shape, np.ascontiguousarray(x).tobytes()


def array(tensor):
    dtype, shape, raw = tensor
    return np.frombuffer(raw, {"F32": np.float32, "U8": np.uint8}[dtype]).reshape(shape)


def codes_of(data):
    """The registry's packed data [M, K/2] as codes [M, K] (even element in the low nibble)."""
    return np.stack([data & 0x0F, data >> 4], axis=-1).reshape(data.shape[0], -1)


def run_worker(lib, requests):
    """The worker's hello and its answers to `requests` (message, tensors), all sent before the first read."""
    p = subprocess.Popen([sys.executable, "-m", WORKER, "--lib", str(lib)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=package_env())
    p.stdin.write(frame(HELLO) + b"".join(frame(m, t) for m, t in requests) + frame({"type": "bye"}))
    p.stdin.close()
    hello = read_frame(p.stdout)
    answers = [read_frame(p.stdout) for _ in requests]
    assert p.wait(timeout=60) == 0 and p.stdout.read() == b"", p.stderr.read().decode()[-3000:]
    return hello, answers


def test_worked_examples_through_the_worker():
    lib = library()
    x = np.zeros((16, 32), dtype=np.float32)  # K = 32: each row padded to 64 for ggml
    for r, (block, _, _) in enumerate(EXAMPLES):
        x[r, 16:] = np.array(block, dtype=np.float32)  # the second block of each row
    params = {"profile": "ggml", "block": "1d", "direction": "rowwise", "row_scaled": False, "amax": None,
              "scale_layout": "compact", "rounding": "nearest", "rht": False}
    requests = [({"type": "run", "id": 0, "op": "quantize", "params": params}, {"x": wire(x)})]
    (hello, _), [(result, out)] = run_worker(lib, requests)
    assert hello["worker"].startswith("ggml 0.")
    assert [e["op"] for e in hello["implements"]] == ["quantize", "dequantize"]
    assert result == {"type": "result", "id": 0, "ok": True}, result
    data, scale, amax = array(out["data"]), array(out["scale"]), array(out["amax"])
    assert data.shape == (16, 16) and scale.shape == (128, 4) and amax.dtype == np.float32
    assert not scale[:, 2:].any() and not scale[16:].any()  # padding 0x00
    assert amax[0] == np.float32(INF)  # max |x| with the NaNs ignored
    codes = codes_of(data)
    for r, (block, sb, expected) in enumerate(EXAMPLES):
        assert (scale[r, 0], list(codes[r, :16])) == (0x00, [0] * 16), r  # the zero first block
        assert (scale[r, 1], list(codes[r, 16:])) == (sb, expected), (r, block)

    d = {"type": "run", "id": 1, "op": "dequantize", "params": {"profile": "ggml", "output_dtype": "F32"}}
    (_, _), [(result, back)] = run_worker(lib, [(d, {"data": out["data"], "scale": out["scale"], "amax": out["amax"]})])
    assert result["ok"], result
    values = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, 0, -.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)
    assert array(back["x"])[0, 16:].tolist() == values[codes[0, 16:]].tolist()  # scale 0x38 = 1.0


def test_repacking_matches_ggml_blocks():
    lib = library()
    from nvfp4_verify.adapters import ggml
    ggml.load(str(lib))
    rng = np.random.default_rng(7)
    M, K = 32, 80  # K' = 128: two ggml blocks per row, the last three sub-blocks padding
    x = (rng.standard_normal((M, K)) * np.exp2(rng.integers(-12, 12, size=(M, 1)))).astype(np.float32)
    out = ggml.quantize({"x": x}, {"amax": None})
    xp = np.zeros((M, 128), dtype=np.float32)
    xp[:, :K] = x
    blocks = np.zeros((M, 2, 36), dtype=np.uint8)
    c = ctypes.c_void_p
    assert ggml.lib.ggml_quantize_chunk(40, c(xp.ctypes.data), c(blocks.ctypes.data), 0, M, 128, None) == blocks.nbytes
    codes = codes_of(out["data"])
    for r in range(M):
        for j in range(K // 16):  # ggml: d[s] of block b is sub-block 4b+s; qs byte 8s+i holds elements i, i+8
            b, s = divmod(j, 4)
            q = blocks[r, b, 4 + 8 * s:12 + 8 * s]
            assert out["scale"][r, j] == blocks[r, b, s]
            assert list(codes[r, 16 * j:16 * j + 16]) == list(q & 0x0F) + list(q >> 4)
    back = ggml.dequantize({"data": out["data"], "scale": out["scale"], "amax": out["amax"]}, {})["x"]
    ref = np.zeros((M, 128), dtype=np.float32)
    ggml.lib.dequantize_row_nvfp4(c(blocks.ctypes.data), c(ref.ctypes.data), M * 128)
    assert back.tobytes() == np.ascontiguousarray(ref[:, :K]).tobytes()


def test_ggml_adapter_passes_worker_selftest(cli):
    lib = library()
    ops = json.loads(subprocess.run([str(cli), "ops", "--json"], capture_output=True, text=True, timeout=300).stdout)
    quantize = next(op for op in ops["operations"] if op["name"] == "quantize")
    profiles = next(p for p in quantize["params"] if p["name"] == "profile")["allowed"]
    if "ggml" not in profiles:
        pytest.skip(f"the registry has no profile ggml yet ({cli} knows {', '.join(profiles)})")
    run = subprocess.run([str(cli), "worker-selftest", "--worker", f"{sys.executable} -m {WORKER} --lib {lib}",
                          "--worker-timeout", "60"], capture_output=True, text=True, timeout=900, env=package_env())
    assert run.returncode == 0, f"worker-selftest exit {run.returncode}:\n{run.stdout}\n{run.stderr[-3000:]}"
