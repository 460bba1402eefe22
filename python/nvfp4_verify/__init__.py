"""nvfp4_verify: nvfp4-verify's bit-exact NVFP4 reference from Python (docs/guides/python.md).

- one function per registry operation (quantize, dequantize, amax_global, rht, ...), built from the
  registry at import: inputs positional, parameters by keyword, a dict of numpy arrays back;
- ops() and profiles(): the registry and the numerics profiles;
- assert_matches (nvfp4_verify.testing): a kernel's outputs against the reference, bit for bit;
- nvfp4_verify.worker: the worker side of docs/spec/worker-protocol.md (pure Python);
- nvfp4_verify.torch_utils: to_torch / from_torch;
- cli_path() and plugin_path(name): the CLI and the plugins a wheel install carries.
"""
from . import _ops
from ._cli import cli_path, plugin_path
from ._ops import ops, profiles
from .errors import Nvfp4Error
from .testing import assert_matches

try:
    globals().update(_ops.operation_functions())
    from ._core import __version__  # CMakeLists.txt's project version, as the CLI's
except ImportError as error:  # only the pure-Python part is here (a worker on PYTHONPATH=python)
    _NO_CORE = str(error)
    __version__ = "unknown (no native extension)"

    def __getattr__(name):
        raise AttributeError(f"module 'nvfp4_verify' has no attribute {name!r}; the operations need the "
                             f"native extension: {_NO_CORE}")
