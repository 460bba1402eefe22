"""The NVFP4 GEMM in EXACT mode (docs/NUMERICS.md §3.20.1, §3.20.3, §3.20.4), written from the spec
alone: integer accumulation of the block products, one correct rounding to binary32, then RNout.

    gemm(inputs, params, fault=None) -> {"d": array [M, N] of output_dtype}

inputs and params are the worker protocol's (registry names). Faults (docs/spec/faults.md), each
placed in the kernel step a buggy kernel gets wrong:
  nibble-order-swapped      B's element 2i read from the high nibble, 2i+1 from the low one
                            (see _codes: swapping both operands cannot change D)
  swizzle-row-order         swizzled scales addressed with the tile's rows in plain order
  scale-layout-swapped      scales addressed with the other layout's formula
  gemm-scale-per-32         block j reads scale column 2*(j//2) (MXFP4 indexing)
  gemm-alpha-missing        alpha = alpha_in (1 without `alpha`): the amaxes never enter it
  gemm-alpha-inverted       alpha replaced by RN(1/alpha)
"""
import math

import numpy as np

from hadamard import bf16_rne, rn_f32

FAULTS = ("nibble-order-swapped", "swizzle-row-order", "scale-layout-swapped",
          "gemm-scale-per-32", "gemm-alpha-missing", "gemm-alpha-inverted")

R7225344 = np.uint32(0x34149B93).view(np.float32)  # RN(1/(36·448²)), NUMERICS §1.2
# Twice the E2M1 value of each code (§2.1.1): integers, so block sums are integers too.
_TWICE_F4 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.int64)


class GemmError(ValueError):
    """A rejected case: code is one of the registry's error codes."""

    def __init__(self, code, message):
        super().__init__(f"gemm: {code}: {message}")
        self.code = code


def _roundup(v, m):
    return (v + m - 1) // m * m


def _f32(p):
    """An f32_bits parameter ({"bits": "0x..."} or None) as a numpy float32, bits kept."""
    return None if p is None else np.uint32(int(p["bits"], 16)).view(np.float32)


# ---- operand decoding ---------------------------------------------------------------------------

def _codes(data, swapped):
    """int64 [rows, K] of 2·f4(code). Packing §2.1.3: element 2i in the low nibble.

    swapped: the odd element read from the low nibble. Read that way in BOTH operands the fault is
    invisible: elements 2i and 2i+1 share a block scale, so exchanging them in A and in B only
    reorders the terms of each block sum. The buggy path that shows is an operand packed the other
    way, e.g. weights from an exporter with the opposite convention; the kernel applies the wrong
    unpack to B (the weight) only."""
    lo, hi = data & 0x0F, data >> 4
    if swapped:
        lo, hi = hi, lo                       # the kernel unpacks the odd element first
    q = np.stack([lo, hi], axis=-1).reshape(data.shape[0], -1)
    return _TWICE_F4[q]


def _scale_offsets(rows, blocks, cpad, layout, fault):
    """Byte offset of scale entry (r, j) in the scale buffer, as the kernel computes it."""
    r = np.arange(rows)[:, None]
    j = np.arange(blocks)[None, :]
    if fault == "gemm-scale-per-32":
        j = j // 2 * 2                        # one scale per 32 elements: the even block's
    if fault == "scale-layout-swapped":
        layout = "compact" if layout == "swizzled" else "swizzled"
    if layout == "compact":
        return r * cpad + j                   # row-major [R', C'] (§2.4.1)
    # §2.4.2: [r div 128][c div 4][r mod 32][(r mod 128) div 32][c mod 4]
    tile = (r // 128 * (cpad // 4) + j // 4) * 512
    if fault == "swizzle-row-order":
        return tile + (r % 128) * 4 + j % 4   # the 128 rows of a tile taken in plain order
    return tile + (r % 32) * 16 + (r % 128) // 32 * 4 + j % 4


def _scale_units(b, fault):
    """(n, nan): scale bytes as integer multiples of 2^-10, and which are NaN (§2.2.1; signed)."""
    b = b.astype(np.int64)
    e, m = (b >> 3) & 0xF, b & 0x7
    n = (8 + m) << e                          # normal: (1 + m/8)·2^(e-7) = (8+m)·2^(e-10)
    n = np.where(e == 0, 2 * m, n)            # subnormal: m·2^-9 = 2m·2^-10
    n = np.where(b & 0x80, -n, n)
    nan = (b & 0x7F) == 0x7F
    return np.where(nan, 0, n), nan


def _operand(data, scale, layout, fault, swapped=False):
    """(X, nan_row): X[r, k] = 2·f4(q[r, k]) · (scale of block k//16 in units of 2^-10), so that
    Σ_k A[m,k]·B[n,k] = 4 · 2^20 · S_exact; nan_row: a NaN scale byte in the row's blocks."""
    rows, K = data.shape[0], 2 * data.shape[1]
    blocks = K // 16
    off = _scale_offsets(rows, blocks, _roundup(blocks, 4), layout, fault)
    n, nan = _scale_units(np.asarray(scale).reshape(-1)[off], fault)
    x = _codes(data, swapped) * np.repeat(n, 16, axis=1)   # |x| <= 12·448·2^10 < 2^23
    return x, nan.any(axis=1)


# ---- the exact epilogue -------------------------------------------------------------------------

def _dyadic(v):
    """(m, e) with float(v) = m·2^e exactly, for a finite float."""
    f, e = math.frexp(float(v))
    return int(math.ldexp(f, 53)), e - 53


def _element(alpha, t, beta, c):
    """RN(α·T·2^-22 + β·c) for one output (T = Σ_k A·B integer, the 2^-22 undoes both units and
    the doubled codes), IEEE rules for the non-finite cases and +0.0 for an exact zero."""
    if math.isnan(alpha):
        return math.nan
    if math.isinf(alpha):
        if t == 0:
            return math.nan                   # inf · 0
        p_inf = math.copysign(math.inf, alpha) * (1 if t > 0 else -1)
    else:
        p_inf = None
    if beta is not None:                      # (the caller passes None for β = 0: C unread)
        if math.isnan(beta) or math.isnan(c) or (math.isinf(beta) and c == 0):
            return math.nan                   # NaN operand, or inf · 0
        q_inf = beta * c if (math.isinf(beta) or math.isinf(c)) else None
    else:
        beta, c, q_inf = 0.0, 0.0, None
    if p_inf is not None or q_inf is not None:
        if p_inf is not None and q_inf is not None and p_inf != q_inf:
            return math.nan                   # inf - inf
        return p_inf if p_inf is not None else q_inf
    ma, ea = _dyadic(alpha)
    mb, eb = _dyadic(beta)
    mc, ec = _dyadic(c)
    e1, e2 = ea - 22, eb + ec                 # α·T·2^-22 = (ma·t)·2^e1 ; β·c = (mb·mc)·2^e2
    e = min(e1, e2)
    return rn_f32((ma * t << (e1 - e)) + (mb * mc << (e2 - e)), e)  # one rounding; 0 -> +0.0


def _alpha_times(alpha, t):
    """(F, ok): F float64 [M, N] with RN32(F · 2^-22) = RN32(α·T·2^-22) for the entries where ok
    (|T| < 2^53), all at once. T = Th + Tl with Tl = T mod 2^29: α·Th (24 + 25 bits) and α·Tl
    (24 + 29 bits) are exact in binary64, TwoSum gives their sum exactly as s + err, and F is s
    rounded to odd (s, or its neighbour towards err when s is even): rounding to odd at 53 bits,
    then to nearest at 24 or fewer, equals one rounding to nearest (53 >= 24 + 2)."""
    ok = np.abs(t) < 1 << 53
    t = np.where(ok, t, 0)
    tl = t & ((1 << 29) - 1)
    p1, p0 = alpha * (t - tl).astype(np.float64), alpha * tl.astype(np.float64)
    s = p1 + p0
    v = s - p1
    err = (p1 - (s - v)) + (p0 - v)           # Knuth's TwoSum: p1 + p0 = s + err exactly
    even = (s.view(np.uint64) & 1) == 0
    s = np.where((err != 0) & even, np.nextafter(s, np.copysign(np.inf, err)), s)
    return np.where(s == 0, 0.0, s), ok       # an exact zero is +0.0 (α < 0 would give -0.0)


def _epilogue(alpha, t, beta, c, nan_mn):
    """float32 [M, N]: RN(α·S_exact + β·C) for every output (beta None: no C term)."""
    alpha = float(alpha)
    if beta is None and math.isfinite(alpha):   # the common case, vectorised
        f, ok = _alpha_times(alpha, t)
        with np.errstate(over="ignore"):
            d = (f * 2.0 ** -22).astype(np.float32)   # exact scaling, then the one rounding
        ma, ea = _dyadic(alpha)
        for m, n in zip(*np.nonzero(~ok)):      # |T| >= 2^53 (long K, large scales): integers
            d[m, n] = rn_f32(ma * int(t[m, n]), ea - 22)
    else:
        cl = None if beta is None else c.astype(np.float32).tolist()
        b = None if beta is None else float(beta)
        d = np.array([[_element(alpha, v, b, cl[m][n] if cl else 0.0) for n, v in enumerate(row)]
                      for m, row in enumerate(t.tolist())], dtype=np.float32).reshape(t.shape)
    d[nan_mn] = np.nan                          # a NaN scale byte in the row of A or of B
    return d


def _round_out(v, dtype):
    """RNout of float32 array v: identity, RNbf16, or RNE binary16."""
    if dtype == "BF16":
        return bf16_rne(v)
    if dtype == "F16":
        with np.errstate(over="ignore"):
            return v.astype(np.float16)       # numpy's float->half cast is RNE, overflow to inf
    return v


# ---- the operation ------------------------------------------------------------------------------

def _validate(inputs, params):
    a, b = inputs["a_data"], inputs["b_data"]
    M, N, K, Kb = a.shape[0], b.shape[0], 2 * a.shape[1], 2 * b.shape[1]
    if K != Kb:
        raise GemmError("E_GEMM_K", f"A has K={K} and B has K={Kb}")
    if K == 0 or K % 16:
        raise GemmError("E_GEMM_K", f"K={K} is not a positive multiple of 16")
    rs = params.get("row_scaled", False)
    if rs and (params.get("alpha") is not None or params.get("beta") is not None):
        raise GemmError("E_UNSUPPORTED", "row_scaled takes neither alpha nor beta")
    if params.get("accumulate", False) and not rs:
        raise GemmError("E_UNSUPPORTED", "accumulate is the row-scaled path's")
    for side, rows in (("a", M), ("b", N)):
        n = inputs[side + "_amax"].size
        if n != 1 and not (rs and n == rows):
            raise GemmError("E_AMAX_SHAPE", f"{side}_amax has {n} values")
    if params.get("beta") is not None or params.get("accumulate", False):
        if "c" not in inputs:
            raise GemmError("E_UNSUPPORTED", "beta or accumulate given without the tensor c")
        if tuple(inputs["c"].shape) != (M, N):
            raise GemmError("E_DATA_SHAPE", f"c is {list(inputs['c'].shape)}, expected [{M}, {N}]")
    if params.get("with_bias", False) and inputs["bias"].size != N:
        raise GemmError("E_DATA_SHAPE", f"bias has {inputs['bias'].size} values, expected N={N}")
    for side, rows in (("a", M), ("b", N)):
        s = inputs[side + "_scale"].shape
        if tuple(s) != (_roundup(rows, 128), _roundup(K // 16, 4)):
            raise GemmError("E_SCALE_SHAPE", f"{side}_scale is {list(s)}")


def gemm(inputs, params, fault=None):
    _validate(inputs, params)
    layout, out_dtype = params["scale_layout"], params["output_dtype"]
    row_scaled = params.get("row_scaled", False)
    xa, nan_a = _operand(inputs["a_data"], inputs["a_scale"], layout, fault)
    xb, nan_b = _operand(inputs["b_data"], inputs["b_scale"], layout, fault, fault == "nibble-order-swapped")
    # The whole K reduction in integers: |T| <= K·(12·458752)^2 < 2^63 while K <= 2^18, so int64
    # is exact there (the fuzz's longest K is 2^16); beyond, Python integers.
    if xa.shape[1] > 1 << 18:
        xa, xb = xa.astype(object), xb.astype(object)
    t = xa @ xb.T

    amax_a, amax_b = inputs["a_amax"].astype(np.float32), inputs["b_amax"].astype(np.float32)
    alpha_in = _f32(params.get("alpha"))
    if fault == "gemm-alpha-missing":
        alpha = np.float32(1.0) if alpha_in is None else alpha_in   # the amaxes are dropped
    elif alpha_in is not None:
        alpha = alpha_in                      # the `alpha` parameter is α itself (ops --json)
    else:
        ga, gb = (np.float32(1.0), np.float32(1.0)) if row_scaled else (amax_a[0], amax_b[0])
        alpha = np.float32(np.float32(np.float32(1.0) * ga) * gb) * R7225344   # §3.20.1, α_in = 1
    if fault == "gemm-alpha-inverted":
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            alpha = np.float32(1.0) / np.float32(alpha)

    beta, c = _f32(params.get("beta")), inputs.get("c")
    reads_c = beta is not None and beta != 0 and not row_scaled   # β = ±0: C is never read
    d = _epilogue(alpha, t, beta if reads_c else None, c, nan_a[:, None] | nan_b[None, :])

    with np.errstate(over="ignore", invalid="ignore"):
        if row_scaled:                        # §3.20.4: post-scale by the amaxes, binary32 products
            ra, cb = amax_a.reshape(-1, 1), amax_b.reshape(1, -1)
            if amax_b.size == 1:
                d = d * (ra * cb)             # folded: RN(D0 · RN(row · col))
            elif amax_a.size == 1:
                d = d * (cb * ra)
            else:
                d = (d * ra) * cb             # bilateral: two roundings
        if params.get("with_bias", False):
            d = d + inputs["bias"].astype(np.float32)[None, :]   # one binary32 add
        out = _round_out(d.astype(np.float32), out_dtype)
        if params.get("accumulate", False):
            acc = np.asarray(c).astype(np.float32) + np.asarray(out).astype(np.float32)
            out = _round_out(acc, out_dtype)
    return {"d": np.ascontiguousarray(out)}
