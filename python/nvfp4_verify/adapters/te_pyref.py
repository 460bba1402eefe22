"""A worker (docs/spec/worker-protocol.md) around TransformerEngine's PyTorch reference quantizer,
through its public API: NVFP4QuantizerRef(...).quantize(x) of
transformer_engine.pytorch.custom_recipes.reference_nvfp4 (as in 2.20.2; quantization_nvfp4 in
2.13 and 2.14), with reference_utils.Fp4Formats.E2M1 (utils in 2.13/2.14). Checked: 2.13.0, 2.14.0,
2.20.2.

    nvfp4-verify fuzz --ops quantize --backends reference,worker \\
        --worker 'python3 -m nvfp4_verify.adapters.te_pyref [--device cuda|cpu] [--te-src DIR] [--4over6]'

Which TE: --te-src DIR, else the environment variable NVFP4_TE_SRC, else the installed package. DIR
holds the `transformer_engine` package directory, as an unpacked wheel does (`python3 -m zipfile -e
transformer_engine-2.20.2-py3-none-any.whl DIR`) or site-packages. The version is read from
DIR/transformer_engine-*.dist-info/METADATA (or DIR/build_tools/VERSION.txt, a source checkout),
and it chooses the declared profile: `te-pyref` for TE >= 2.14 (block scale RN(A*RN(S*r6))),
`te-2.13` for TE <= 2.13 (RN(RN(A/6)*S)). The 2.13 reference is te-pyref's arithmetic with the 2.13
block-scale order, which no profile has: it equals `te-2.13` only without NaN (x or the amax), a zero
amax override and elements whose scaled value is -0.0 (-0.0 itself, or an underflow), and the
worker protocol cannot restrict a declaration to such inputs, so a campaign against 2.13 reports
those as mismatches. --profile NAME declares another profile instead, to test which one a TE
version matches. row_scaled and --4over6 are offered when NVFP4QuantizerRef takes
row_scaled_nvfp4 / nvfp4_use_4over6 (2.20.2: both; 2.13, 2.14: neither).

How only the reference is imported (TE's pure-Python wheel, without its compiled extension): an
import hook on the `transformer_engine` namespace, over DIR's files only.
- Loaded without running their __init__.py (they load the compiled libraries or import the whole
  framework; the reference needs nothing they define): transformer_engine, transformer_engine.common,
  transformer_engine.pytorch, transformer_engine.pytorch.tensor (bare packages over their directories).
- Loaded for real, and an error if any of them fails: the reference module, custom_recipes (package),
  reference_utils / utils, quantized_tensor (Quantizer, QuantizedTensorStorage: the base classes,
  whose __init__ and __init_subclass__ run).
- Every other TE module those import loads for real when it can; one whose import fails becomes a
  stand-in, whose names are placeholders that raise when used (the worker's name lists them). With
  TE 2.20.2 and no pydantic these are: transformer_engine_torch (the compiled extension: an empty
  module, so that TE modules which use it at import fail and are stood in themselves);
  transformer_engine.common.recipe (pydantic; quantized_tensor imports `Recipe` for a return
  annotation); transformer_engine.pytorch.constants (tex.DType at import; quantized_tensor imports
  `dist_group_type` for an isinstance in amax reduction); transformer_engine.pytorch.tensor.utils
  (tex; custom_recipes.gemm imports `is_custom` for custom_gemm). The quantize path executes none
  of them. Without DIR (no files found: the stubbed CI run), the reference is imported normally.

The adapter only converts representations; every number comes from NVFP4QuantizerRef:
- x: the case's numpy array becomes a torch tensor with the same bits (F32, BF16 or F16: TE's
  HIGH_PRECISION_FLOAT_DTYPES).
- quantizer: NVFP4QuantizerRef(Fp4Formats.E2M1, rowwise=direction != columnwise,
  columnwise=direction != rowwise, quant_tile_shape=(1, 16) for block 1d or (16, 16) for 2d,
  row_scaled_nvfp4=row_scaled, with_rht=rht, with_random_sign_mask=(rht_mask != 0)). TE's only sign
  vectors are get_wgrad_sign_vector() (the registry's default mask 0xD7E8) and none (mask 0), so
  only those two masks are declared. Row-scaled with direction columnwise: TE requires rowwise usage
  for row scaling, so the quantizer runs both directions and only the columnwise copy is returned
  (TE computes the copies independently). Profiles te-4over6-mae / te-4over6-mse (--4over6, which
  declares them instead of the version's profile, and no rht: TE's recipe rejects the RHT with
  4over6): nvfp4_use_4over6=True, nvfp4_e4m3_max=256 (the recipe's default
  nvfp4_4over6_e4m3_use_256='all'), nvfp4_4over6_err_mode='MAE' / 'MSE',
  nvfp4_4over6_err_use_fast_math=False.
- amax override: the public quantize() computes its amaxes itself (torch.max(torch.abs(x))) and
  takes none; with an override the adapter calls NVFP4QuantizerRef._quantize_blockwise_reference,
  the per-direction quantizer that quantize() calls, with the override as global_amax, on x for the
  rowwise copy and on x.t().contiguous() for the columnwise one, exactly as _quantize passes them
  (no padding: M and K are multiples of 16). The override is returned as the amaxes.
- data / data_t: NVFP4TensorRef.data [M, K/2] and .data_t [K, M/2], uint8 with the even element in
  the low nibble (cast_to_fp4x2), the registry's order (NUMERICS.md §2.1.3): passed through.
- scale / scale_t: .scale [M, K/16] and .scale_t [K, M/16] (float8_e4m3fn, 2D scales replicated on
  each tile's 16 rows) viewed as their bytes and padded with 0x00 to the registry's compact
  [roundup(rows,128), roundup(cols/16,4)] (NUMERICS.md §2.4.1). TE's reference writes no swizzled
  layout, so only `compact` is declared.
- amax / amax_t: .global_amax_row and .global_amax_col (F32 [1], or [M] / [K] when row-scaled).
Not declared: stochastic rounding (the reference has none), swizzled scales, experts (TE flattens a
3-D x to one 2-D tensor with one amax).

Profile `te-pyref` is defined as the reference runs on CUDA. The quantizer divides no tensor by a
Python scalar, so a CPU run computes the same binary32 operations; what differs on the CPU: the
vectorised torch.min gives NaN as 0xFFFFFFFF, so a NaN block scale is the byte 0xFF where CUDA's
positive NaN gives 0x7F; and the RHT is a BF16 matmul (x @ (H * 0.25)), whose accumulation is the
backend's: PyTorch's CPU BF16 GEMM flushes subnormal results to zero from 64 rows on, and no BF16
GEMM sums exactly under cancellation (NUMERICS.md §3.19 defines the exact sum). TE's reference also
raises on an empty x (torch.max of no elements), where the registry gives empty outputs.
Prints nothing to stdout; needs no native extension: the installed nvfp4_verify, or PYTHONPATH=python
in the source tree.
"""
import argparse
import contextlib
import glob
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import os
import re
import sys

import ml_dtypes
import numpy as np

with contextlib.redirect_stdout(sys.stderr):  # whatever an import prints must not reach the frames
    import torch

from nvfp4_verify import worker
from nvfp4_verify.adapters._shared import check_shape, padded_scale, serve_and_exit
from nvfp4_verify.torch_utils import to_torch

DEVICE = "cpu"
DEFAULT_MASK = 0xD7E8  # TE's get_wgrad_sign_vector() as the registry's rht_mask (bit k set: s_k = -1)
FOUR_OVER_SIX = {  # profile -> the NVFP4QuantizerRef arguments of the 4over6 recipe
    "te-4over6-mae": {"nvfp4_use_4over6": True, "nvfp4_e4m3_max": 256, "nvfp4_4over6_err_mode": "MAE",
                      "nvfp4_4over6_err_use_fast_math": False},
    "te-4over6-mse": {"nvfp4_use_4over6": True, "nvfp4_e4m3_max": 256, "nvfp4_4over6_err_mode": "MSE",
                      "nvfp4_4over6_err_use_fast_math": False},
}
# Where NVFP4QuantizerRef lives: (its module, the module of Fp4Formats and HIGH_PRECISION_FLOAT_DTYPES)
CANDIDATES = [("transformer_engine.pytorch.custom_recipes.reference_nvfp4",
               "transformer_engine.pytorch.custom_recipes.reference_utils"),  # TE >= 2.15
              ("transformer_engine.pytorch.custom_recipes.quantization_nvfp4",
               "transformer_engine.pytorch.custom_recipes.utils")]  # TE 2.13, 2.14

# ---- importing the reference from TE's files, without the compiled extension -------------------

BARE = {"transformer_engine", "transformer_engine.common", "transformer_engine.pytorch",
        "transformer_engine.pytorch.tensor"}
REQUIRED = {"transformer_engine.pytorch.custom_recipes", "transformer_engine.pytorch.quantized_tensor",
            *(m for pair in CANDIDATES for m in pair)}
STAND_INS = {}  # module name -> why its import failed


class _Placeholder:
    """A name of a stand-in module: raises when the code that imported it uses it."""

    def __init__(self, name):
        self._name = name

    def _fail(self, *args, **kwargs):
        raise RuntimeError(f"{self._name} is a stand-in of te_pyref (its module does not import here); "
                           "the quantize path was not expected to use it")

    __call__ = __getattr__ = __getitem__ = __iter__ = __bool__ = _fail


def _make_stand_in(module, why):
    for key in [k for k in module.__dict__ if not k.startswith("__")]:
        del module.__dict__[key]
    module.__getattr__ = lambda name: _Placeholder(f"{module.__name__}.{name}")  # PEP 562
    STAND_INS[module.__name__] = why


class _BareLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):  # the package's __init__.py is not run
        pass


class _ExtensionStandIn(_BareLoader):
    def exec_module(self, module):  # an empty module: TE code that needs its names fails to import
        STAND_INS[module.__name__] = "the compiled extension is not installed"


class _FallbackLoader(importlib.abc.Loader):
    """The module's own loader; a module whose import fails becomes a stand-in."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        try:
            self.loader.exec_module(module)
        except Exception as e:  # pylint: disable=broad-except
            _make_stand_in(module, f"{type(e).__name__}: {e}")


class _TEFinder(importlib.abc.MetaPathFinder):
    """transformer_engine.* from root's files only (root holds the transformer_engine directory)."""

    def __init__(self, root):
        self.root = root

    def find_spec(self, name, path=None, target=None):
        if name == "transformer_engine_torch":
            if importlib.machinery.PathFinder.find_spec(name) is not None:
                return None  # the real extension is installed: use it
            return importlib.machinery.ModuleSpec(name, _ExtensionStandIn())
        if name != "transformer_engine" and not name.startswith("transformer_engine."):
            return None
        parts = name.split(".")
        if name in BARE:
            spec = importlib.machinery.ModuleSpec(name, _BareLoader(), is_package=True)
            spec.submodule_search_locations = [os.path.join(self.root, *parts)]
            return spec
        spec = importlib.machinery.PathFinder.find_spec(name, [os.path.join(self.root, *parts[:-1])])
        if spec is not None and name not in REQUIRED:
            spec.loader = _FallbackLoader(spec.loader)
        return spec


def te_root(src):
    """The directory holding TE's `transformer_engine` package: src, or the installed package's
    parent; None when there are no files (a package that is not on disk)."""
    if src:
        if not os.path.isdir(os.path.join(src, "transformer_engine", "pytorch")):
            sys.exit(f"te_pyref: {src} holds no transformer_engine/pytorch directory")
        return os.path.abspath(src)
    spec = importlib.util.find_spec("transformer_engine")  # finds it without running it
    locations = list(spec.submodule_search_locations or []) if spec else []
    return os.path.dirname(locations[0]) if locations and os.path.isdir(locations[0]) else None


def te_version(root):
    for metadata in sorted(glob.glob(os.path.join(root, "transformer_engine-*.dist-info", "METADATA"))):
        with open(metadata, encoding="utf-8") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    version_txt = os.path.join(root, "build_tools", "VERSION.txt")
    if os.path.exists(version_txt):
        with open(version_txt, encoding="utf-8") as f:
            return f.read().strip()
    return None


def import_reference(root):
    """(NVFP4QuantizerRef, its utilities module, the module's file name)."""
    if root is not None:
        sys.meta_path.insert(0, _TEFinder(root))
    errors = []
    for module, utilities in CANDIDATES:
        try:
            with contextlib.redirect_stdout(sys.stderr):
                ref = importlib.import_module(module)
                utils = importlib.import_module(utilities)
            return ref.NVFP4QuantizerRef, utils, module.rpartition(".")[2]
        except ModuleNotFoundError as e:
            errors.append(f"{module}: {e}")
    sys.exit("te_pyref: no NVFP4QuantizerRef in this TransformerEngine:\n  " + "\n  ".join(errors))


def parse_version(v):
    m = re.match(r"(\d+)\.(\d+)", v or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def accepts(cls, name):
    """Whether NVFP4QuantizerRef takes argument `name`; True when its signature says nothing (a stub)."""
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return True
    if all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()):
        return True
    return name in params


# ---- the handler --------------------------------------------------------------------------------


def check_case(x, params):
    """The registry's domain (validate_quantize), with the reference's codes and in its order: TE
    itself would zero-pad M and K, accept 2D and amax overrides with row scaling, and RHT on any
    dtype, direction and block."""
    check_shape(x)
    override = params["amax"] is not None
    if params["row_scaled"] and params["block"] == "2d":
        raise worker.Nvfp4Error("quantize: row scaling is not defined for 2D (16x16) blocks", "E_UNSUPPORTED")
    if params["row_scaled"] and override:
        raise worker.Nvfp4Error("quantize: an amax override is not defined for row-scaled quantization",
                                "E_UNSUPPORTED")
    if params["rht"]:
        if x.dtype != np.dtype(ml_dtypes.bfloat16):
            raise worker.Nvfp4Error("quantize: the Hadamard transform (rht) takes a BF16 input", "E_DTYPE")
        if params["block"] == "2d":
            raise worker.Nvfp4Error("quantize: rht is defined for 1D blocks only", "E_UNSUPPORTED")
        if params["direction"] == "rowwise":
            raise worker.Nvfp4Error("quantize: rht transforms the columnwise copy", "E_UNSUPPORTED")
        if override:
            raise worker.Nvfp4Error("quantize: an amax override is not defined with rht", "E_UNSUPPORTED")


def quantize(inputs, params):
    check_case(inputs["x"], params)
    x = to_torch(inputs["x"], DEVICE)
    direction, row_scaled, rht = params["direction"], params["row_scaled"], params["rht"]
    tile = (16, 16) if params["block"] == "2d" else (1, 16)
    args = {"rowwise": direction != "columnwise" or row_scaled, "columnwise": direction != "rowwise",
            "quant_tile_shape": tile, "with_rht": rht, "with_random_sign_mask": params["rht_mask"] != 0,
            **FOUR_OVER_SIX.get(params["profile"], {})}
    if row_scaled:
        args["row_scaled_nvfp4"] = True
    quantizer = NVFP4QuantizerRef(utils.Fp4Formats.E2M1, **args)

    override = worker.f32(params["amax"])
    if override is None:
        t = quantizer.quantize(x)
        copies = {"": (t.data, t.scale, t.global_amax_row), "_t": (t.data_t, t.scale_t, t.global_amax_col)}
    else:  # the per-direction quantizer that _quantize calls, with the override as the global amax
        amax = torch.tensor([override], dtype=torch.float32, device=DEVICE)
        extra = {}
        if quantizer.nvfp4_use_4over6 if hasattr(quantizer, "nvfp4_use_4over6") else False:
            extra = {"nvfp4_use_4over6": True, "nvfp4_e4m3_max": quantizer.nvfp4_e4m3_max,
                     "nvfp4_4over6_err_mode": quantizer.nvfp4_4over6_err_mode,
                     "nvfp4_4over6_err_use_fast_math": quantizer.nvfp4_4over6_err_use_fast_math}
        copies = {}
        for suffix, source in (("", x), ("_t", x.t().contiguous())):
            if (suffix == "" and args["rowwise"]) or (suffix == "_t" and args["columnwise"]):
                q, s = quantizer._quantize_blockwise_reference(  # pylint: disable=protected-access
                    source, amax, tile[1], tile[0], pow_2_scales=False, eps=quantizer.eps, **extra)
                copies[suffix] = (q, s, amax)

    out = {}
    if direction != "columnwise":
        data, scale, amax = copies[""]
        out.update(data=data, scale=padded_scale(scale.view(torch.uint8)), amax=amax)
    if direction != "rowwise":
        data, scale, amax = copies["_t"]
        out.update(data_t=data, scale_t=padded_scale(scale.view(torch.uint8)), amax_t=amax)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--te-src", default=os.environ.get("NVFP4_TE_SRC"),
                        help="directory holding the transformer_engine package (default: $NVFP4_TE_SRC, "
                             "else the installed package)")
    parser.add_argument("--4over6", dest="four_over_six", action="store_true",
                        help="declare the profiles te-4over6-mae and te-4over6-mse instead (without rht)")
    parser.add_argument("--profile", default=None,
                        help="declare this profile instead of the one the TE version chooses")
    opts = parser.parse_args()
    DEVICE = opts.device or ("cuda" if torch.cuda.is_available() else "cpu")

    root = te_root(opts.te_src)
    NVFP4QuantizerRef, utils, module_name = import_reference(root)
    version = te_version(root) if root else None
    if version is None:
        with contextlib.suppress(Exception):
            version = str(importlib.import_module("transformer_engine").__version__)
    parsed = parse_version(version)
    rht = [False, True]
    if opts.four_over_six:  # the recipe's profiles alone: TE rejects the RHT with 4over6 (quantization.py)
        if not accepts(NVFP4QuantizerRef, "nvfp4_use_4over6"):
            sys.exit(f"te_pyref: TransformerEngine {version}'s NVFP4QuantizerRef has no 4over6 (--4over6)")
        profiles, rht = list(FOUR_OVER_SIX), [False]
    elif opts.profile:
        profiles = [opts.profile]
    elif parsed is not None and parsed < (2, 14):  # RN(RN(A/6)*S): the <= 2.13 block-scale order
        profiles = ["te-2.13"]
    else:  # >= 2.14 (TE #2555: RN(A*RN(S*r6))), or a version that cannot be read (a stub)
        profiles = ["te-pyref"]
    row_scaled = [False, True] if accepts(NVFP4QuantizerRef, "row_scaled_nvfp4") else [False]

    worker.implements("quantize", profile=profiles, block=["1d", "2d"], direction=["rowwise", "columnwise", "both"],
                      row_scaled=row_scaled, scale_layout=["compact"], rounding=["nearest"], rht=rht,
                      rht_mask=[DEFAULT_MASK, 0], amax=worker.ANY, dtype=["f32", "bf16", "f16"])(quantize)
    name = f"TransformerEngine {version} NVFP4QuantizerRef ({module_name}) on {DEVICE}"
    if STAND_INS:
        name += "; stand-ins: " + ", ".join(sorted(STAND_INS))
    for module, why in sorted(STAND_INS.items()):
        print(f"te_pyref: stand-in {module} ({why})", file=sys.stderr)
    serve_and_exit(name)
