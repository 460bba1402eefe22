"""Fixtures of the fault suite: the environment its workers run in and the detection table printed
at the end of the run (the command line under test, `cli`, is the repository's conftest.py's)."""
import importlib.util
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
# The suite reads case files with nvfp4_verify (pure Python): the package under test where one is
# importable (python/tests in the same session must keep seeing its native extension), else the
# tree's own. The workers get the tree's through worker_env.
if importlib.util.find_spec("nvfp4_verify") is None:
    sys.path.append(str(REPO / "python"))

_TABLE = []  # one row per fault campaign that ran, printed by pytest_terminal_summary
_OUTSIDE = []  # one row per campaign of a fault outside the catalogue


@pytest.fixture(scope="session")
def worker_env():
    """The environment of the CLI and so of the workers it starts: PYTHONPATH names python/."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")]))}


@pytest.fixture(scope="session")
def detection_table():
    return _TABLE


@pytest.fixture(scope="session")
def outside_table():
    return _OUTSIDE


def _write_table(terminalreporter, title, header, table):
    terminalreporter.section(title)
    rows = [header] + [tuple(str(v) for v in row) for row in table]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        terminalreporter.write_line("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


def pytest_terminal_summary(terminalreporter):
    if _TABLE:
        _write_table(terminalreporter, "fault suite: detection",
                     ("pattern", "ops", "seed", "cases", "cases to detection", "shrunk first input", "first cause"), _TABLE)
    if _OUTSIDE:
        named = sum(1 for row in _OUTSIDE if row[-1] == "named")
        _write_table(terminalreporter, f"faults outside the catalogue: {named} of {len(_OUTSIDE)} named",
                     ("fault", "cases to detection", "first causes", "verdict"), _OUTSIDE)
