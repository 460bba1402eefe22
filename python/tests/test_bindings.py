"""The generated operation functions against the nvfp4-verify command line (the same C++ reference
behind an independent path: files in, files out) and against plain numpy where the operation is
simple enough to restate; parameter validation by the registry."""
import json
import subprocess

import ml_dtypes
import numpy as np
import pytest

import nvfp4_verify as nv
from helpers import random_matrix, same_bits
from nvfp4_verify.safetensors_image import load, save


def run_cli(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=120)


def cli_quantize(cli, tmp_path, x, params):
    """quantize through the command line: (exit status, stderr, outputs)."""
    save(tmp_path / "x.safetensors", {"x": x})
    flags = []
    for name, value in params.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            flags += [flag] if value else []
        elif name == "rht_mask":
            flags += [flag, f"0x{value:04X}"]
        else:
            flags += [flag, value]
    r = run_cli(cli, "quantize", "--input", tmp_path / "x.safetensors", "--output", tmp_path / "q.safetensors", *flags)
    return r.returncode, r.stderr, (load(tmp_path / "q.safetensors")[0] if r.returncode == 0 else None)


def assert_same_outputs(expected, actual):
    assert sorted(expected) == sorted(actual)
    for name in expected:
        assert same_bits(expected[name], actual[name]), name


def test_registry_is_the_cli_registry(cli):
    assert nv.ops() == json.loads(run_cli(cli, "ops", "--json").stdout)


def test_every_operation_is_a_function():
    for op in nv.ops()["operations"]:
        f = getattr(nv, op["name"])
        names = [p.name for p in f.__signature__.parameters.values()]
        inputs = ["tensors"] if op["inputs"][0]["name"] == "*" else [t["name"] for t in op["inputs"]]
        assert names == inputs + [p["name"] for p in op["params"]]
        assert op["summary"] in f.__doc__


QUANTIZE_CASES = [
    ("F32", dict(profile="te")),
    ("BF16", dict(profile="te", block="2d", direction="both", scale_layout="swizzled")),
    ("F16", dict(profile="torchao", direction="columnwise")),
    ("F32", dict(profile="modelopt", direction="both", row_scaled=True)),
    ("BF16", dict(profile="mslk", direction="both", rounding="stochastic")),
    ("BF16", dict(profile="te", direction="both", rht=True)),
    ("F32", dict(profile="vllm-emul", amax=2.5)),
    ("BF16", dict(profile="te-pyref", direction="both")),
    ("F32", dict(profile="miles", block="2d", direction="both")),
    ("F16", dict(profile="torchao-1lvl", direction="both", scale_layout="swizzled")),
]


@pytest.mark.parametrize("dtype,params", QUANTIZE_CASES, ids=lambda v: str(v))
def test_quantize_equals_cli(cli, tmp_path, rng, dtype, params):
    x = random_matrix(rng, dtype)
    params = dict(params)
    if params.get("rounding") == "stochastic":
        params.update(seed=int(rng.integers(2**63)), offset=int(rng.integers(2**32)))
    if params.get("rht"):
        params["rht_mask"] = int(rng.integers(2**16))
    status, stderr, expected = cli_quantize(cli, tmp_path, x, params)
    assert status == 0, stderr
    assert_same_outputs(expected, nv.quantize(x, **params))


def test_rejections_equal_cli(cli, tmp_path, rng):
    x = random_matrix(rng, "F32", cols=16 * int(rng.integers(1, 5)) + 8)
    status, stderr, _ = cli_quantize(cli, tmp_path, x, {})
    with pytest.raises(nv.Nvfp4Error) as e:
        nv.quantize(x)
    assert status == 2 and e.value.code == "E_DIM16_K" and "E_DIM16_K" in stderr


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_dequantize_equals_cli(cli, tmp_path, rng, dtype):
    profile = str(rng.choice([p["name"] for p in nv.profiles()]))
    status, stderr, q = cli_quantize(cli, tmp_path, random_matrix(rng, "F32"), {"profile": profile})
    assert status == 0, stderr
    r = run_cli(cli, "dequantize", "--input", tmp_path / "q.safetensors", "--output", tmp_path / "d.safetensors",
                "--dtype", dtype, "--profile", profile)
    assert r.returncode == 0, r.stderr
    ours = nv.dequantize(q["data"], q["scale"], q["amax"], profile=profile, output_dtype=dtype.upper())
    assert_same_outputs(load(tmp_path / "d.safetensors")[0], ours)


def test_rht_equals_cli(cli, tmp_path, rng):
    x = random_matrix(rng, "BF16")
    mask = int(rng.integers(2**16))
    save(tmp_path / "x.safetensors", {"x": x})
    r = run_cli(cli, "rht", "--input", tmp_path / "x.safetensors", "--output", tmp_path / "y.safetensors",
                "--rht-mask", f"0x{mask:04X}")
    assert r.returncode == 0, r.stderr
    assert_same_outputs(load(tmp_path / "y.safetensors")[0], nv.rht(x, rht_mask=mask))


def test_amax_operations_equal_numpy(rng):
    x = random_matrix(rng, "F32")
    a = np.abs(x)
    m, k = x.shape
    assert same_bits(nv.amax_global(x)["amax"], a.max().reshape(1))
    assert same_bits(nv.amax_rows(x)["amax"], a.max(axis=1))
    assert same_bits(nv.amax_blocks_1x16(x)["amax"], a.reshape(m, k // 16, 16).max(axis=2))


def test_transpose_packed_equals_numpy(rng):
    m, k = 2 * int(rng.integers(1, 40)), 2 * int(rng.integers(1, 40))
    data = rng.integers(0, 256, size=(m, k // 2), dtype=np.uint8)
    codes = np.stack([data & 0xF, data >> 4], axis=2).reshape(m, k)  # even element in the low nibble
    t = codes.T
    assert same_bits(nv.transpose_packed(data)["data"], (t[:, 0::2] | (t[:, 1::2] << 4)).astype(np.uint8))


def test_f32_parameter_forms_are_one_value(cli, tmp_path, rng):
    x = random_matrix(rng, "BF16")
    value = np.float32(rng.uniform(0.5, 100.0))
    bits = "0x%08X" % value.view(np.uint32)
    status, stderr, expected = cli_quantize(cli, tmp_path, x, {"amax": bits})
    assert status == 0, stderr
    assert same_bits(expected["amax"], value.reshape(1))  # the override is what the outputs used
    for form in (float(value), value, bits, {"bits": bits}):
        assert_same_outputs(expected, nv.quantize(x, amax=form))


def test_inputs_by_name_equal_positional(rng):
    q = nv.quantize(random_matrix(rng, "F32"))
    inputs = {name: q[name] for name in ("data", "scale", "amax")}
    assert_same_outputs(nv.dequantize(q["data"], q["scale"], q["amax"]), nv.dequantize(inputs))


def test_bad_parameters_raise_the_registry_message(rng):
    x = random_matrix(rng, "F32")
    with pytest.raises(nv.Nvfp4Error, match=r"^quantize: E_UNSUPPORTED: parameter 'block' is '3d'; allowed: 1d, 2d$") as e:
        nv.quantize(x, block="3d")
    assert e.value.code == "E_UNSUPPORTED"
    with pytest.raises(nv.Nvfp4Error, match=r"no parameter 'blocks' \(its parameters: profile, block, "):
        nv.quantize(x, blocks="2d")
    with pytest.raises(nv.Nvfp4Error, match="parameter 'seed' must be an unsigned 64-bit integer"):
        nv.quantize(x, seed=-1)
    with pytest.raises(nv.Nvfp4Error, match="parameter 'profile' is 'nope'; allowed: te, "):
        nv.amax_global(x, profile="nope")
    with pytest.raises(TypeError, match="takes its inputs data, scale, amax: 4 given"):
        nv.dequantize(x, x, x, x)
    with pytest.raises(ValueError, match="dtype uint16 has no safetensors name"):
        nv.quantize(x.view(np.uint16))


def test_torch_cpu_input_equals_numpy(rng):
    torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")
    from nvfp4_verify.torch_utils import from_torch, to_torch

    for dtype in ("F32", "BF16", "F16"):
        x = random_matrix(rng, dtype)
        t = to_torch(x)
        assert t.dtype == {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}[dtype]
        assert same_bits(from_torch(t), x)
        assert_same_outputs(nv.quantize(x, direction="both"), nv.quantize(t, direction="both"))
    e4m3 = rng.integers(0, 256, size=(4, 4), dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
    assert to_torch(e4m3).dtype == torch.float8_e4m3fn and same_bits(from_torch(to_torch(e4m3)), e4m3)
