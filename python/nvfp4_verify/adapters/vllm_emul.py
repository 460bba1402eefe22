"""A worker (docs/spec/worker-protocol.md) around vLLM's NVFP4 emulation quantizer: ref_nvfp4_quant of
vllm/model_executor/layers/quantization/utils/nvfp4_emulation_utils.py (vLLM 0.34.0), the function
ref_nvfp4_quant_dequant calls on platforms that are not CUDA-alike (the emulation linear kernel
EmulationNvFp4LinearKernel -> run_nvfp4_emulations -> ref_nvfp4_quant_dequant) and that the online
lm_head NVFP4 copy calls on every platform.

    NVFP4_VLLM_SRC=DIR nvfp4-verify fuzz --ops quantize --backends reference,worker \\
        --worker 'python3 -m nvfp4_verify.adapters.vllm_emul [--device cuda|cpu]'

Profile `vllm-emul` (docs/spec/profiles.md). ref_nvfp4_quant itself divides by no Python scalar, so
it computes the same bits on the CPU and on CUDA (NaN signs aside); the caller's global scale below
does divide by one, so a CPU run is expected to disagree on some scale bytes and codes
(NUMERICS.md §5.14, docs/guides/peers.md).

How the module is loaded. The vllm package is too heavy to install where the worker runs, so with
NVFP4_VLLM_SRC set the adapter loads two files of the vLLM wheel, unchanged, with
importlib.util.spec_from_file_location, from DIR/<path inside the wheel> (or DIR/<file name>):
- vllm/model_executor/layers/quantization/utils/nvfp4_emulation_utils.py, the module itself;
- vllm/scalar_type.py (standard library only) as `vllm.scalar_type`, because the quantize path uses
  it: FLOAT4_E2M1_MAX_RECIPROCAL = 1 / scalar_types.float4_e2m1f.max().
The module's other imports fail without the package (an import is tried first; a stand-in is made
only when it raises ImportError), and ref_nvfp4_quant runs none of their code:
- vllm.platforms.current_platform: read only by ref_nvfp4_quant_dequant and dequantize_to_dtype;
  the stand-in raises on any attribute, so a use would reject the case rather than pass unnoticed;
- vllm.triton_utils.triton / tl: decorate the module's Triton kernels (@triton.jit, annotations
  tl.constexpr) and size their launches; the stand-in's jit returns the function undecorated and
  tl's attributes are placeholders: no kernel is compiled or run;
- vllm.utils.torch_utils.direct_register_custom_op: registers the nvfp4_gathered_bias custom op at
  import; the stand-in registers nothing.
The package modules `vllm` and `vllm.utils` are made empty to hold them. Without NVFP4_VLLM_SRC
the module is imported from an installed vllm.

The adapter only converts representations; every number comes from vLLM or torch:
- x: the case's numpy array becomes a torch tensor with the same bits (F32, BF16 or F16: vLLM reduces
  the block amax in x's dtype and scales x.to(float32)).
- amax (registry: the global amax g, F32 [1]): vLLM's emulation takes a calibrated global scale from
  the checkpoint and no amax. As a ModelOpt checkpoint's producer calibrates it, g is
  torch.max(torch.abs(x)) (NaN-propagating), or the case's amax override; the checkpoint's
  input_scale is ModelOpt's `amax / (6.0 * 448.0)`; vLLM's KNvfp4Dynamic.process then sets
  input_global_scale = input_scale.max().to(float32) and input_global_scale_inv =
  (1.0 / input_global_scale).to(float32), which EmulationNvFp4LinearKernel passes to
  run_nvfp4_emulations as the encode scale G. This is the profile's GS = G_CALLER on CUDA
  (G = RN(1/RN(g*r2688))); on the CPU `amax / 2688.0` is a true division.
- data: ref_nvfp4_quant returns E2M1 values as float32 [M, K], not codes. Each becomes its code as
  vLLM's online lm_head quantizer (_quantize_nvfp4) maps them: the magnitude's index in
  [0, 0.5, 1, 1.5, 2, 3, 4, 6] (code_of[2|v|]) with the sign bit of v < 0, so +-0 is 0x0. A NaN
  value has no code in vLLM; it becomes 0x0 (the project's choice, docs/spec/numerics-choices.md
  #4). Codes are packed even element in the low nibble (codes[:, 0::2] | codes[:, 1::2] << 4, as
  vLLM packs them), which is the registry's order (NUMERICS.md §2.1.3).
- scale: ref_nvfp4_quant returns the block scales as float32 values of float8_e4m3fn numbers
  (scale.to(float8_e4m3fn).to(float32)); .to(float8_e4m3fn) gives the bytes back exactly, as vLLM's
  lm_head quantizer does; padded with 0x00 to the registry's [roundup(M,128), roundup(K/16,4)]
  (NUMERICS.md §2.4.1). vLLM's emulation reads compact scales (swizzle=False), so only `compact`
  is declared.
- no global_scale: the profile exports none (vLLM's emulation stores nothing; G is the caller's).
Prints nothing to stdout; needs no native extension: the installed nvfp4_verify, or PYTHONPATH=python
in the source tree.
"""
import argparse
import contextlib
import importlib
import importlib.util
import os
import re
import sys
import types

with contextlib.redirect_stdout(sys.stderr):  # whatever an import prints must not reach the frames
    import torch

from nvfp4_verify import worker
from nvfp4_verify.adapters._shared import check_shape, padded_scale, serve_and_exit
from nvfp4_verify.torch_utils import to_torch

DEVICE = "cpu"
BLOCK = 16
MODULE = "vllm.model_executor.layers.quantization.utils.nvfp4_emulation_utils"
MODULE_FILE = "vllm/model_executor/layers/quantization/utils/nvfp4_emulation_utils.py"
SCALAR_TYPE_FILE = "vllm/scalar_type.py"
VERSION_FILE = "vllm/_version.py"  # optional: only the worker's name reads it
E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def _file(src, wheel_path):
    for candidate in (os.path.join(src, wheel_path), os.path.join(src, os.path.basename(wheel_path))):
        if os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError(f"NVFP4_VLLM_SRC={src}: neither {wheel_path} nor its file name is there")


def _exec_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _package(name):
    """An empty package module, made only where the real one cannot be imported."""
    try:
        return importlib.import_module(name)
    except ImportError:
        module = types.ModuleType(name)
        module.__path__ = []
        sys.modules[name] = module
        if "." in name:
            setattr(_package(name.rpartition(".")[0]), name.rpartition(".")[2], module)
        return module


def _import_or(name, make):
    """The module `name`, or the stand-in make() when importing it raises ImportError."""
    try:
        return importlib.import_module(name)
    except ImportError:
        parent = _package(name.rpartition(".")[0])
        module = types.ModuleType(name)
        for key, value in make().items():
            setattr(module, key, value)
        sys.modules[name] = module
        setattr(parent, name.rpartition(".")[2], module)
        return module


class _Unused:
    """A stand-in for code the quantize path must not reach: any use raises."""

    def __init__(self, what):
        self._what = what

    def __getattr__(self, name):
        raise RuntimeError(f"{self._what}.{name}: a stand-in (vllm is not installed); ref_nvfp4_quant never reads it")


class _Placeholder:
    """tl of the Triton stand-in: annotations (tl.constexpr) and the like evaluate to placeholders."""

    def __getattr__(self, name):
        return _Placeholder()

    def __call__(self, *args, **kwargs):
        return _Placeholder()


def _triton_stand_in():
    triton = types.SimpleNamespace(jit=lambda fn=None, **kwargs: fn if fn is not None else (lambda f: f))
    return {"triton": triton, "tl": _Placeholder()}


def load_emulation():
    """(the nvfp4_emulation_utils module, a description of where it came from)."""
    src = os.environ.get("NVFP4_VLLM_SRC")
    if not src:  # an installed vllm
        import vllm
        from vllm.model_executor.layers.quantization.utils import nvfp4_emulation_utils
        return nvfp4_emulation_utils, f"vllm {vllm.__version__}"
    try:
        importlib.import_module("vllm.scalar_type")
    except ImportError:
        _package("vllm")
        _exec_file("vllm.scalar_type", _file(src, SCALAR_TYPE_FILE))
    _import_or("vllm.platforms", lambda: {"current_platform": _Unused("vllm.platforms.current_platform")})
    _import_or("vllm.triton_utils", _triton_stand_in)
    _import_or("vllm.utils.torch_utils", lambda: {"direct_register_custom_op": lambda *args, **kwargs: None})
    path = _file(src, MODULE_FILE)
    return _exec_file(MODULE, path), f"vllm {_version(src)} ({path})"


def _version(src):
    """The wheel's version, read (not imported) from vllm/_version.py when the fetch kept it."""
    try:
        with open(os.path.join(src, VERSION_FILE)) as f:
            found = re.search(r"^__version__ = version = '([^']+)'", f.read(), re.M)
    except OSError:
        found = None
    return found.group(1) if found else "(version unknown)"


with contextlib.redirect_stdout(sys.stderr):
    emulation, SOURCE = load_emulation()


@worker.implements("quantize", profile=["vllm-emul"], block=["1d"], direction=["rowwise"], row_scaled=[False],
                   scale_layout=["compact"], rounding=["nearest"], rht=[False], amax=worker.ANY,
                   dtype=["f32", "bf16", "f16"])
def quantize(inputs, params):
    check_shape(inputs["x"])
    x = to_torch(inputs["x"], DEVICE)
    M, K = x.shape
    override = worker.f32(params["amax"])
    if override is None:  # the calibrated amax of this tensor (NaN-propagating); exact in F32
        amax = torch.max(torch.abs(x)).float()
    else:
        amax = torch.tensor(override, dtype=torch.float32, device=DEVICE)
    input_scale = amax / (6.0 * 448.0)  # ModelOpt's checkpoint input_scale
    input_global_scale = input_scale.max().to(torch.float32)  # vLLM KNvfp4Dynamic.process
    input_global_scale_inv = (1.0 / input_global_scale).to(torch.float32)
    values, block_scale = emulation.ref_nvfp4_quant(x, input_global_scale_inv, BLOCK)

    # E2M1 values -> codes (vLLM's lm_head mapping); NaN has no code: 0x0
    code_of = torch.zeros(13, dtype=torch.uint8, device=values.device)
    code_of[torch.tensor([int(2 * v) for v in E2M1_VALUES], device=values.device)] = \
        torch.arange(8, dtype=torch.uint8, device=values.device)
    nan = torch.isnan(values)
    finite = torch.where(nan, torch.zeros_like(values), values)
    codes = code_of[(finite.abs() * 2).long()] | ((finite < 0).to(torch.uint8) << 3)
    data = codes[:, 0::2] | (codes[:, 1::2] << 4)

    scale = padded_scale(block_scale.to(torch.float8_e4m3fn).view(torch.uint8))  # E4M3 bytes
    return {"data": data, "scale": scale, "amax": amax.reshape(1)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    DEVICE = parser.parse_args().device
    serve_and_exit(f"{SOURCE} ref_nvfp4_quant on {DEVICE}")
