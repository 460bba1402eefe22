"""The native parts a wheel carries beside the Python sources (cmake/wheel.cmake), and the console
script `nvfp4-verify`, which runs the bundled CLI in place of the Python process (exec): the CLI
gets the user's arguments, and its exit status and signals are the command's own."""
import os
import sys
from pathlib import Path

from .errors import Nvfp4Error

_PACKAGE = Path(__file__).resolve().parent
_NOT_A_WHEEL = ("this nvfp4_verify is not a wheel install (a source build keeps the CLI and the plugins in "
                "its build tree: build/cli/nvfp4-verify, build/device/plugin/)")


def cli_path() -> Path:
    """The nvfp4-verify binary inside the installed wheel."""
    path = _PACKAGE / "bin" / "nvfp4-verify"
    if not path.is_file():
        raise Nvfp4Error(f"no nvfp4-verify binary at {path}: {_NOT_A_WHEEL}")
    return path


def plugin_path(name: str) -> Path:
    """A plugin inside the installed wheel, for `--plugin`: "device" (the GPU kernels) or "cublaslt"
    (cuBLASLt's NVFP4 GEMM). A wheel built without CUDA has neither."""
    if name not in ("device", "cublaslt"):
        raise Nvfp4Error(f"unknown plugin {name!r}: the wheel carries 'device' and 'cublaslt'")
    path = _PACKAGE / "lib" / f"libnvfp4_{name}_plugin.so"
    if not path.is_file():
        why = "this wheel was built without CUDA" if (_PACKAGE / "bin").is_dir() else _NOT_A_WHEEL
        raise Nvfp4Error(f"no {name} plugin at {path}: {why}")
    return path


def main() -> None:
    try:
        cli = cli_path()
    except Nvfp4Error as error:
        sys.exit(f"nvfp4-verify: {error}")
    os.execv(cli, [str(cli), *sys.argv[1:]])
