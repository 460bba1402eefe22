"""assert_matches: silent on the reference's own outputs, an AssertionError that names the tensor,
the block and the classification when one bit differs, and the report page."""
import re

import numpy as np
import pytest

import nvfp4_verify as nv
from helpers import random_matrix


def quantized(rng, **params):
    x = random_matrix(rng, str(rng.choice(["F32", "BF16", "F16"])))
    return x, nv.quantize(x, **params)


@pytest.mark.parametrize("params", [dict(), dict(direction="both", block="2d"), dict(profile="torchao", direction="both"),
                                    dict(direction="columnwise", scale_layout="swizzled")], ids=str)
def test_passes_on_the_references_outputs(rng, params):
    x, q = quantized(rng, **params)
    nv.assert_matches(q, x, **params)
    nv.assert_matches({**q, "data_t": q.get("data_t")}, {"x": x}, op="quantize", **params)  # None is dropped


def test_other_operations(rng):
    x = random_matrix(rng, "BF16")
    mask = int(rng.integers(2**16))
    y = nv.rht(x, rht_mask=mask)
    nv.assert_matches(y, x, op="rht", rht_mask=mask)
    y["x_t"].view(np.uint16)[0, 0] ^= 1
    with pytest.raises(AssertionError, match=r"^rht .*tensor 'x_t': 1 element\(s\) differ, the first at flat index 0"):
        nv.assert_matches(y, x, op="rht", rht_mask=mask)


def test_one_flipped_scale_bit_is_named_and_classified(rng, tmp_path):
    x, q = quantized(rng, direction="both")
    rows, blocks = x.shape[0], x.shape[1] // 16
    r, j = int(rng.integers(rows)), int(rng.integers(blocks))
    q["scale"][r, j] ^= 1  # the lowest bit: one E4M3 code away
    page = tmp_path / "page.html"
    with pytest.raises(AssertionError) as e:
        nv.assert_matches(q, x, direction="both", report=page)
    message = str(e.value)
    assert "tensor 'scale': 1 element(s) differ" in message
    assert f"first mismatching block: data row {r} block {j}" in message
    assert f"first mismatch: scale[{r}, {j}]" in message and "classified as 'scale byte off by one code'" in message
    assert f"report: {page}" in message
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "scale byte off by one code" in html


def test_one_flipped_data_bit_is_named_and_classified(rng, tmp_path):
    x, q = quantized(rng, direction="both")
    tensor = str(rng.choice(["data", "data_t"]))
    flat = q[tensor].reshape(-1)
    i = int(rng.integers(flat.size))
    flat[i] ^= np.uint8(1 << int(rng.integers(8)))
    with pytest.raises(AssertionError) as e:
        nv.assert_matches(q, x, direction="both", report=tmp_path)
    message = str(e.value)
    assert f"tensor '{tensor}': 1 element(s) differ, the first at flat index {i}" in message
    assert re.search(rf"first mismatch: {tensor}\[\d+, \d+\] expected 0x[0-9A-F], actual 0x[0-9A-F], classified as '[^']+'",
                     message)
    assert (tmp_path / "quantize-mismatch.html").is_file()


def test_schema_differences_are_named(rng):
    x, q = quantized(rng, direction="both")
    with pytest.raises(AssertionError, match=r"\(schema\); tensor 'data_t': missing in actual"):
        nv.assert_matches({**q, "data_t": None}, x, direction="both")
    with pytest.raises(AssertionError, match=r"tensor 'amax': expected F32 \[1\], actual F32 \[1, 1\]"):
        nv.assert_matches({**q, "amax": q["amax"].reshape(1, 1)}, x, direction="both")


def test_only_nan_is_relaxed(rng):
    x = random_matrix(rng, "F32")
    x[int(rng.integers(x.shape[0])), int(rng.integers(x.shape[1]))] = np.nan
    amax = nv.amax_global(x, profile="torchao")  # torchao's amax propagates NaN
    assert np.isnan(amax["amax"][0])
    other_nan = np.array([0x7FC00001 | int(rng.integers(2)) << 31], np.uint32).view(np.float32)
    nv.assert_matches({"amax": other_nan}, x, op="amax_global", profile="torchao")
    zeros = np.zeros((16, 16), np.float32)
    with pytest.raises(AssertionError, match="expected 0x00000000, actual 0x80000000"):
        nv.assert_matches({"amax": np.array([-0.0], np.float32)}, zeros, op="amax_global")


def test_the_verdict_comes_first_and_names_the_bug(rng):
    # A kernel that packs the odd element into the low nibble: the message's second sentence names
    # the fault catalogue's pattern (docs/spec/faults.md) before the per-tensor details.
    x, q = quantized(rng, direction="both")
    for name in ("data", "data_t"):
        q[name] = ((q[name] << 4) | (q[name] >> 4)).astype(np.uint8)
    with pytest.raises(AssertionError) as e:
        nv.assert_matches(q, x, direction="both")
    parts = str(e.value).split("; ")
    assert parts[1].startswith("verdict: nibble-order-swapped: "), str(e.value)
