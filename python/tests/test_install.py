"""What a wheel install adds to the package: one version everywhere, the console script that runs
the bundled CLI (arguments, exit status and signals its own), and the paths of the bundled CLI and
plugins. Under scripts/test the package is staged in the build tree, not installed: the tests that
need the wheel skip there and run in scripts/wheel-test (CI) and on the GPU machine."""
import importlib.metadata
import pathlib
import re
import signal
import subprocess
import time

import pytest

import nvfp4_verify as nv
from helpers import REPO


def wheel_install():
    """Skips unless the package under test is a wheel install (it carries bin/nvfp4-verify)."""
    if not (pathlib.Path(nv.__file__).parent / "bin" / "nvfp4-verify").is_file():
        pytest.skip(f"the package under test ({pathlib.Path(nv.__file__).parent}) is not a wheel install: "
                    "scripts/wheel-test runs this")


def test_the_package_the_cli_and_the_cmake_project_have_one_version(cli):
    project = re.search(r"project\(nvfp4_verify VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text()).group(1)
    line = subprocess.run([str(cli), "--version"], capture_output=True, text=True, check=True).stdout
    assert re.fullmatch(r"nvfp4-verify (\S+) \((git [0-9a-f]{12}(-dirty)?|release), (CUDA( sm_\w+)+|built without CUDA)\)\n",
                        line), line
    assert line.split()[1] == nv.__version__ == project


def test_the_wheels_metadata_has_the_same_version():
    wheel_install()
    distribution = importlib.metadata.distribution("nvfp4_verify")
    assert pathlib.Path(distribution.locate_file("nvfp4_verify/__init__.py")) == pathlib.Path(nv.__file__)
    assert distribution.version == nv.__version__


def test_the_bundled_cli_is_the_console_scripts_and_plugins_follow_the_cuda_build(cli):
    wheel_install()
    assert nv.cli_path().is_file()
    line = subprocess.run([str(nv.cli_path()), "--version"], capture_output=True, text=True, check=True).stdout
    assert line == subprocess.run([str(cli), "--version"], capture_output=True, text=True, check=True).stdout
    for name in ("device", "cublaslt"):
        if "built without CUDA" in line:
            with pytest.raises(nv.Nvfp4Error, match="built without CUDA"):
                nv.plugin_path(name)
        else:
            assert nv.plugin_path(name).is_file()
    with pytest.raises(nv.Nvfp4Error, match="unknown plugin"):
        nv.plugin_path("mine")


def test_the_console_script_passes_exit_status_and_signals_through(cli, tmp_path):
    wheel_install()
    assert subprocess.run([str(cli), "--version"], capture_output=True).returncode == 0
    bad = subprocess.run([str(cli), "profiles", "--no-such-option"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--no-such-option" in bad.stderr, bad
    # The console script execs the CLI: the process the caller signals is the CLI itself.
    campaign = subprocess.Popen([str(cli), "fuzz", "--time", "60s", "--corpus", str(tmp_path / "found")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    assert open(f"/proc/{campaign.pid}/comm").read().strip() == "nvfp4-verify"
    campaign.send_signal(signal.SIGTERM)
    assert campaign.wait(timeout=30) == -signal.SIGTERM


def test_a_package_without_the_cli_names_where_the_source_build_keeps_it():
    if (pathlib.Path(nv.__file__).parent / "bin").exists():
        pytest.skip("a wheel install: its CLI is bundled")
    with pytest.raises(nv.Nvfp4Error, match="build/cli/nvfp4-verify"):
        nv.cli_path()
