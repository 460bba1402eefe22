"""assert_matches: a kernel's outputs against the reference, bit for bit, for pytest and unittest."""
import json
import os
from collections.abc import Mapping

from ._convert import to_core
from ._ops import core, core_params, operation


def _report_target(report, op):
    """(directory, page stem) of `report`: a file path ending in .html, or a directory."""
    if report is None:
        return "", ""
    report = os.fspath(report)
    if report.endswith(".html"):
        return os.path.dirname(report) or ".", os.path.basename(report)[:-len(".html")]
    return report, f"{op}-mismatch"


def _message(r):
    parts = [f"{r['label']}: outputs differ from the reference ({r['verdict']})"]
    x = r.get("explanation")
    if x and x["verdict"]:
        parts.append("verdict: " + x["verdict"])  # the cause first: what a kernel author reads
    for d in r["diffs"]:
        if d["problem"]:
            parts.append(f"tensor '{d['tensor']}': {d['problem']}")
        else:
            parts.append(f"tensor '{d['tensor']}': {d['mismatches']} element(s) differ, the first at flat index "
                         f"{d['first_index']} (expected {d['first_expected']}, actual {d['first_actual']})")
    if x:
        if x["blocks"]:
            b = x["blocks"][0]
            parts.append(f"first mismatching block: {b['tensor']} row {b['row']} block {b['block']}")
        if x["mismatches"]:
            m = x["mismatches"][0]
            parts.append(f"first mismatch: {m['tensor']}[{m['row']}, {m['col']}] expected 0x{m['expected']:X}, "
                         f"actual 0x{m['actual']:X}, classified as '{m['kind']}'")
        if x["kinds"]:
            parts.append("classification: " + ", ".join(f"{k['kind']} x{k['count']}" for k in x["kinds"]))
    if "report" in r:
        parts.append(f"report: {r['report']}")
    return "; ".join(parts) + "."


def assert_matches(outputs, inputs, op="quantize", profile=None, report=None, **params):
    """Raises AssertionError unless `outputs` (a dict of numpy arrays or torch tensors; None values
    are dropped) are bit for bit the reference's outputs of operation `op` on `inputs` (a dict, or
    one array: the operation's first input) with `params`. The only relaxation: a NaN equals any
    NaN of the same format. The message names each differing tensor, the first mismatching block
    and element and, for quantize, the classification (compare/explain.h). On failure with
    `report` (a directory, or a file path ending in .html) the HTML failure page is written there.
    `profile` defaults to the registry's default (te)."""
    spec = operation(op)
    if profile is not None:
        params["profile"] = profile
    if not isinstance(inputs, Mapping):
        inputs = {spec["inputs"][0]["name"]: inputs}
    actual = [to_core(name, a) for name, a in outputs.items() if a is not None]
    given = [to_core(name, a) for name, a in inputs.items()]
    report_dir, stem = _report_target(report, op)
    result = json.loads(core().compare(op, core_params(op, params), given, actual, report_dir, stem))
    if not result["agree"]:
        raise AssertionError(_message(result))
