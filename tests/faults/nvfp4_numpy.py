"""NVFP4 under profile `te`, written from docs/NUMERICS.md in plain numpy, the way a kernel author
would: independent of nvfp4_verify's numerics and of the C++ reference, so that the fault suite
tests the harness against a second implementation rather than against itself.

Every RN(...) of NUMERICS.md is one numpy float32 operation on float32 operands (numpy 2 keeps
float32 op float32 in float32; Python scalars are weak, but every constant here is np.float32 so
nothing leans on that rule). Subnormals are kept: numpy does not flush them.

`fault` names one pattern of docs/spec/faults.md (or None for the correct kernel). Each fault is
the single line a buggy kernel would have got wrong, at the place it would be wrong, not a
transform of correct outputs. The `if fault == ...` branches are those lines.
"""
import ml_dtypes
import numpy as np

from nvfp4_verify.errors import Nvfp4Error

F32 = np.float32


def bits_f32(bits):
    """The float32 whose bit pattern is `bits`."""
    return np.array(bits, np.uint32).view(F32)[()]


R6 = bits_f32(0x3E2AAAAB)        # RN(1/6)
R2688 = bits_f32(0x39C30C31)     # RN(1/2688)
FLT_MAX = bits_f32(0x7F7FFFFF)
C2688 = F32(2688)
ONE, ZERO = F32(1), F32(0)
FLT_MIN = bits_f32(0x00800000)

# E2M1 code -> value (NUMERICS §2.1.1).
F4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], F32)


def _e4m3_table(subnormal_as_normal=False):
    """E4M3 byte -> value (§2.2.1); 0x7F/0xFF are NaN. The faulty decoder has no e == 0 branch."""
    b = np.arange(256)
    s, e, m = b >> 7, (b >> 3) & 15, b & 7
    normal = (1 + m / 8) * np.exp2(e - 7.0)
    mag = normal if subnormal_as_normal else np.where(e == 0, m * 2.0**-9, normal)
    v = np.where(s == 1, -mag, mag)
    v[(e == 15) & (m == 7)] = np.nan
    return v.astype(F32)  # every value is exact in binary32


F8 = _e4m3_table()
F8_SUBNORMAL_AS_NORMAL = _e4m3_table(subnormal_as_normal=True)


def fail(op, code, message):
    raise Nvfp4Error(f"{op}: {code}: {message}", code)


# ---- E4M3 cast (§2.2.2, §2.2.3) ---------------------------------------------------------------

def e4m3_cast(v, fault=None):
    """Round binary32 `v` to E4M3 bytes: RNE onto the grid, satfinite (|v| > 464 -> 448)."""
    nan, sign, a = np.isnan(v), np.signbit(v), np.abs(v)
    # Exponent of the grid interval holding a; below 2^-6 the subnormal quantum 2^-9 applies.
    e = np.frexp(a)[1] - 1
    e = np.where(a < F32(2.0**-6), -6, e)
    n = np.ldexp(a, 3 - e)  # a in units of its quantum 2^(e-3): exact, and below 16 for finite a
    if fault == "e4m3-ties-up":
        # A hand-written cast: half a quantum always rounds up, 2^-10 (half of 2^-9) included;
        # n + 0.5 is exact for n < 16.
        n = np.floor(n + F32(0.5))
    elif fault == "e4m3-truncated":
        n = np.floor(n)  # a cast that drops the bits below the quantum: toward zero
    else:
        n = np.rint(n)  # ties to even (n even <=> the code's lowest bit is clear)
    with np.errstate(invalid="ignore"):  # inf/NaN lanes are replaced below
        # One formula covers subnormals (e = -6, n < 8 gives byte n) and the carry n = 16 into
        # the next binade; a <= 2^-10 gives n <= 0.5 -> 0 -> byte 0.
        byte = ((e + 7) << 3) + n.astype(np.int64) - 8
    byte = np.minimum(np.where(a > F32(464), 0x7E, byte), 0x7E)  # satfinite; 464 itself is a tie -> 448
    if fault == "e4m3-overflow-nan":
        byte = np.where(a > F32(464), 0x7F, byte)  # PyTorch's cast: beyond 464 is NaN, not 448
    byte = np.where(sign, byte | 0x80, byte)
    byte = np.where(nan, 0x7F, byte)  # the float entry point canonicalises NaN: positive
    return byte.astype(np.uint8)


# ---- E2M1 encoders (§2.1.2) --------------------------------------------------------------------

# The hardware encoder's bins on |v|: (code, low, low included, high, high included). Every tie
# lies on an inclusive edge of the even code's bin.
_HW_BINS = [(1, 0.25, False, 0.75, False), (2, 0.75, True, 1.25, True), (3, 1.25, False, 1.75, False),
            (4, 1.75, True, 2.5, True), (5, 2.5, False, 3.5, False), (6, 3.5, True, 5.0, True),
            (7, 5.0, False, np.inf, True)]
# A threshold-table encoder whose table stops at 6: nothing above 6 matches a bin (fault).
_NO_TOP_BINS = _HW_BINS[:-1] + [(7, 5.0, False, 6.0, True)]


def _bin_code(a, bins):
    """The code of the bin holding |v| = a, 0 where none does."""
    conds = [((a >= F32(lo)) if lo_in else (a > F32(lo))) & ((a <= F32(hi)) if hi_in else (a < F32(hi)))
             for _, lo, lo_in, hi, hi_in in bins]
    return np.select(conds, [c for c, *_ in bins], 0)


def _grid_step(a):
    """Spacing of the E2M1 grid at magnitude a: 0.5 below 2, 1 below 4, 2 above."""
    return np.where(a >= F32(4), F32(2), np.where(a >= F32(2), F32(1), F32(0.5)))


def _code_of_magnitude(v):
    """Code of an exact grid magnitude v in {0, 0.5, ..., 6}."""
    return np.searchsorted(F4[:8], v).astype(np.int64)


def e2m1_encode(y, fault=None):
    """E2M1 codes (uint8, one per element) of binary32 y, round to nearest (§2.1.2 `HW`)."""
    nan, a = np.isnan(y), np.abs(y)
    if fault == "e2m1-half-up":
        # floor(y / step + 0.5) on the signed value: positive ties go up, negative ties toward zero.
        step = _grid_step(a)
        units = np.floor((np.where(np.signbit(y), -a, a) / step).astype(np.float64) + 0.5)
        with np.errstate(invalid="ignore"):
            mag = np.minimum(np.abs(units) * step, 6.0)
        m = _code_of_magnitude(np.where(nan, 0.0, mag))
    elif fault in ("e2m1-ties-away", "e2m1-toward-zero"):
        # A software encoder that scales |y| to units of the grid step and rounds that number.
        step = _grid_step(a)
        units = (a / step).astype(np.float64)  # exact; float64 keeps "+ 0.5" exact too
        units = np.floor(units + 0.5) if fault == "e2m1-ties-away" else np.floor(units)
        with np.errstate(invalid="ignore"):
            mag = np.minimum(units * step, 6.0)
        m = _code_of_magnitude(np.where(nan, 0.0, mag))
    else:
        m = _bin_code(a, _NO_TOP_BINS if fault == "e2m1-no-saturation" else _HW_BINS)
    m = np.where(nan, 7, m)  # NaN -> +6 (cuda_fp4.h), sign dropped
    return (m | ((np.signbit(y) & ~nan) << 3)).astype(np.uint8)


# ---- stochastic rounding (§3.18) ---------------------------------------------------------------

_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (np.uint64(0x9E3779B9), np.uint64(0xBB67AE85))
_LO = np.uint64(0xFFFFFFFF)


def philox4x32_10(ctr, key):
    """Philox4x32-10 on arrays: ctr is 4 uint64 arrays holding 32-bit words, key 2 of them."""
    c = [w & _LO for w in np.broadcast_arrays(*[np.asarray(w, np.uint64) for w in ctr])]
    k = [np.asarray(w, np.uint64) & _LO for w in key]
    for rnd in range(10):
        p0, p1 = _PHILOX_M[0] * c[0], _PHILOX_M[1] * c[2]  # 32x32 -> 64-bit products, no overflow
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k[0], p1 & _LO, (p0 >> np.uint64(32)) ^ c[3] ^ k[1], p0 & _LO]
        if rnd < 9:
            k = [(k[0] + _PHILOX_W[0]) & _LO, (k[1] + _PHILOX_W[1]) & _LO]
    return c


def sr_bytes(seed, offset, direction, M, K, fault=None):
    """The random byte r8 of every element of a stored [M, K] copy (§3.18.3), as uint32 [M, K]."""
    if fault == "sr-bits-reused-copies":
        direction = 0  # one generator state shared by both copies
    blocks = np.arange(M * K // 16, dtype=np.uint64)
    if fault == "sr-bits-reused-blocks":
        blocks = np.zeros_like(blocks)  # per-thread stream never advanced past block 0
    sub = blocks | (np.uint64(direction) << np.uint64(63))
    off, sd = np.uint64(offset), np.uint64(seed)
    o = philox4x32_10([off & _LO, off >> np.uint64(32), sub & _LO, sub >> np.uint64(32)], [sd & _LO, sd >> np.uint64(32)])
    words = np.stack(o, axis=1).reshape(-1, 4)           # [blocks, 4]: one draw per 16-element block
    i = np.arange(16)
    r = (words[:, (i >> 2) & 3] >> (8 * (i & 3)).astype(np.uint64)) & np.uint64(0xFF)
    return r.reshape(M, K).astype(np.uint32)


def sr_e2m1(y, r8):
    """TE's software stochastic E2M1 rounding (§3.18.1) of float32 y with random bytes r8."""
    u = r8.astype(F32) * F32(2.0**-8)
    a = np.abs(y)
    with np.errstate(invalid="ignore"):
        t = a + u * _grid_step(a)  # fma32: u*step is exact (8 bits times a power of 2), one rounding
        step_t = _grid_step(t)
        inv_t = np.where(t >= F32(4), F32(0.5), np.where(t >= F32(2), F32(1), F32(2)))
        qv = np.fmin(np.floor(t * inv_t) * step_t, F32(6))  # NaN t -> 6 through fminf
    v = np.copysign(qv, np.where(np.isnan(y), ONE, y))
    return e2m1_encode(v)  # v is on the grid: the encoder is exact here


# ---- scales (§3.5 - §3.7) ----------------------------------------------------------------------

def global_scale(g, fault=None):
    """(S_enc, S_dec) of global amaxes g (float32 array), GS = TE (§3.5)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if fault == "gs-fast-recip":
            S = np.fmin(C2688 * (ONE / g), FLT_MAX)  # 2688 * (1/g): the reciprocal rounded first
        else:
            S = np.fmin(C2688 / g, FLT_MAX)  # fminf: inf and NaN -> FLT_MAX
        if fault == "gs-no-zero-guard":
            S = np.where(S == 0, ONE, S)  # only the g = inf guard: g = 0 keeps FLT_MAX
        else:
            S = np.where((g == 0) | (S == 0), ONE, S)
        if fault == "gs-bf16":
            S = bf16_round(S.astype(F32)).astype(F32)  # the encode scale kept in a BF16 register
        Sd = ONE / S
    if fault == "gs-reciprocal":
        S, Sd = Sd, S  # a decode scale passed where the encode scale belongs, and back
    return S.astype(F32), Sd.astype(F32)


def abs_max(v, axis):
    """max |v| over axis, NaNs ignored, +0 when empty or all NaN (AMAX = IGNORE, §3.1)."""
    return np.fmax.reduce(np.abs(v), axis=axis, initial=ZERO).astype(F32)


def nan_max_abs(v, axis):
    """max |v| with NaN propagating (torch.amax), +0 when empty."""
    return np.maximum.reduce(np.abs(v), axis=axis, initial=ZERO).astype(F32)


def global_amax(v, axis, fault=None):
    """The amax that sets a global scale: max |v| (or, faulty, the largest signed element)."""
    if fault == "amax-nan-propagates":
        return nan_max_abs(v, axis)
    if fault == "amax-signed-max":
        # max(0, max x), NaN ignored; "+ 0" makes a -0 maximum +0, as max(0, .) would.
        return (np.fmax.reduce(v, axis=axis, initial=ZERO) + ZERO).astype(F32)
    return abs_max(v, axis)


# ---- one copy: the rowwise algorithm on x (rowwise) or x^T (columnwise) ----------------------

def block_amax(xd, block, fault):
    """[M, K/16] amax of each block of the stored copy: 1x16 blocks, or 16x16 tiles per row."""
    M, K = xd.shape
    if block == "2d" and fault != "tile-amax-1x16":  # the fault: a 2D recipe on a 1x16 amax kernel
        tiles = abs_max(xd.reshape(M // 16, 16, K // 16, 16), axis=(1, 3))
        return np.repeat(tiles, 16, axis=0)
    if fault == "block-amax-span-32":
        # MXFP4's amax over 32-element spans, each shared by its two 16-element blocks; a last
        # odd block is alone in its span (the row is padded with zeros to a multiple of 32).
        spans = abs_max(np.pad(xd, ((0, 0), (0, K % 32))).reshape(M, -1, 32), axis=2)
        return np.repeat(spans, 2, axis=1)[:, : K // 16]
    if fault == "amax-nan-propagates":
        return nan_max_abs(xd.reshape(M, K // 16, 16), axis=2)
    return abs_max(xd.reshape(M, K // 16, 16), axis=2)


def encode_rows(xd, A, g_rows, sr, direction, fault):
    """Codes [M, K] and scale bytes [M, K/16] of the stored copy xd [M, K] (§3.9, §3.18)."""
    M, K = xd.shape
    S, Sd = global_scale(g_rows, fault)
    S, Sd = S[:, None], Sd[:, None]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if fault == "bs-div6-first":
            t = np.fmin((A / F32(6)) * S, FLT_MAX)  # A/6 rounded first, then times S
        else:
            t = np.fmin(A * (S * R6), FLT_MAX)  # BS = A_MUL_SR6: one rounding on A; CAP = fminf
        if fault == "zero-scale-one":
            t = np.where(t == 0, ONE, t)  # a zero block's scale replaced by 1 before the cast
        sb = e4m3_cast(t, fault)
        sf = F8[sb]
        if fault == "enc-s-div-sf":
            enc = S / sf  # TE <= 2.13 non-transpose kernel: S_enc / sf, no cap
        else:
            d = t if fault == "enc-unrounded-scale" else sf  # the fault keeps the pre-cast scale
            enc = ONE / (d * Sd)
            if fault != "enc-no-cap":  # the fault lets a zero scale's 1/0 through as inf
                enc = np.fmin(enc, FLT_MAX)
        y = xd.reshape(M, K // 16, 16) * enc[:, :, None]
    y = y.reshape(M, K)
    if sr is None:
        q = e2m1_encode(y, fault)
    else:
        q = sr_e2m1(y, sr_bytes(sr[0], sr[1], direction, M, K, fault))
    return q, sb


def pack(q, fault=None):
    """Two codes per byte, the lower index in the low nibble (§2.1.3)."""
    lo, hi = q[:, 0::2], q[:, 1::2]
    if fault == "nibble-order-swapped":
        return (hi | (lo << 4)).astype(np.uint8)
    return (lo | (hi << 4)).astype(np.uint8)


def roundup(a, b):
    return (a + b - 1) // b * b


def compact_scales(sb, M, K, fault, swizzled):
    """The compact scale tensor [roundup(M, 128), roundup(K/16, 4)], padding 0x00 (§2.4.1)."""
    # The fault sizes the rows by the data; a buffer headed for the 128x4 swizzle is padded anyway.
    rows = M if fault == "scale-rows-unpadded" and not swizzled else roundup(M, 128)
    fill = 0xA5 if fault == "scale-padding-unzeroed" else 0  # an uninitialised buffer's bytes
    out = np.full((rows, roundup(K // 16, 4)), fill, np.uint8)
    out[:M, : K // 16] = sb
    return out


def swizzle(compact, fault=None):
    """The 128x4 GEMM layout (§2.4.2), as a buffer of the compact tensor's shape."""
    R, C = compact.shape
    r, c = np.meshgrid(np.arange(R), np.arange(C), indexing="ij")
    tile = ((r // 128) * (C // 4) + c // 4) * 512
    if fault == "swizzle-row-order":
        off = tile + (r % 128) * 4 + c % 4  # the tile's 128 rows in plain order
    else:
        off = tile + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4
    out = np.zeros(R * C, np.uint8)
    out[off.ravel()] = compact.ravel()
    return out.reshape(R, C)


def quantize_copy(xd, g, p, direction, fault):
    """data, scale, amax of one stored copy xd [M, K] (x, or x^T for the columnwise copy)."""
    M, K = xd.shape
    if p["row_scaled"]:
        # §3.12: one global amax per stored row (a column of x for the columnwise copy).
        g_rows = np.full(M, g, F32) if fault == "row-amax-global" else global_amax(xd, 1, fault)
    else:
        g_rows = np.full(M, g, F32)
    sr = (p["seed"], p["offset"]) if p["rounding"] == "stochastic" else None
    if K:
        q, sb = encode_rows(xd, block_amax(xd, p["block"], fault), g_rows, sr, direction, fault)
    else:
        q, sb = np.zeros((M, 0), np.uint8), np.zeros((M, 0), np.uint8)
    swizzled = p["scale_layout"] == "swizzled"
    if fault == "scale-layout-swapped":
        swizzled = not swizzled  # the exporter skipped (or repeated) the swizzle
    scale = compact_scales(sb, M, K, fault, swizzled)
    if swizzled:
        scale = swizzle(scale, fault)
    amax = g_rows if p["row_scaled"] else np.array([g], F32)
    return pack(q, fault), scale, amax


def widen(x):
    """BF16/F16/F32 input, widened to float32 exactly."""
    if x.dtype not in (np.dtype(F32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        fail("quantize_1d", "E_DTYPE", f"input dtype {x.dtype} is neither FP32, BF16 nor FP16")
    return x.astype(F32)


def quantize(x, p, fault=None):
    """The registry's quantize (profile te, no rht): {data, scale, amax, data_t, scale_t, amax_t}."""
    op = "quantize_row_scaled" if p["row_scaled"] else "quantize_2d" if p["block"] == "2d" else "quantize_1d"
    if p["profile"] != "te" or p.get("rht") or p.get("experts"):
        fail(op, "E_UNSUPPORTED", "this kernel implements profile te without rht and experts only")
    if x.ndim < 2:
        fail(op, "E_RANK", f"rank {x.ndim} < 2")
    K = x.shape[-1]
    M = int(np.prod(x.shape[:-1]))
    if K % 16:
        fail(op, "E_DIM16_K", f"K={K} is not a multiple of 16")
    if M % 16:
        fail(op, "E_DIM16_M", f"M={M} is not a multiple of 16")
    if p["row_scaled"] and p["block"] == "2d":
        fail(op, "E_UNSUPPORTED", "row scaling is not defined for 2D (16x16) blocks")
    override = p.get("amax")
    if p["row_scaled"] and override is not None:
        fail(op, "E_UNSUPPORTED", "an amax override is not defined for row-scaled quantization")
    x2 = widen(x).reshape(M, K)
    if fault == "ftz-inputs":  # a fast-math kernel: subnormal inputs read as zero (sign kept)
        x2 = np.where(np.abs(x2) < FLT_MIN, np.copysign(ZERO, x2), x2).astype(F32)
    g = bits_f32(int(override["bits"], 16)) if override is not None else global_amax(x2, None, fault)
    out = {}
    if p["direction"] != "columnwise":
        out["data"], out["scale"], out["amax"] = quantize_copy(x2, g, p, 0, fault)
    if p["direction"] != "rowwise":  # the rowwise algorithm on x^T (§3.10, §3.11)
        xc = x2
        if fault == "columnwise-from-rowwise":  # the columnwise copy requantized from the rowwise one
            data, scale, amax = quantize_copy(x2, g, {**p, "scale_layout": "compact"}, 0, None)
            xc = dequantize(data, scale, amax, {"profile": "te", "output_dtype": "F32"})["x"]
        out["data_t"], out["scale_t"], out["amax_t"] = quantize_copy(np.ascontiguousarray(xc.T), g, p, 1, fault)
    return out


# ---- dequantize (§3.13) ------------------------------------------------------------------------

def bf16_round(v):
    """RNbf16 of float32 v (§1.1), NaN -> 0x7FFF."""
    u = v.view(np.uint32).astype(np.uint64)
    b = (u + 0x7FFF + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    b = np.where(np.isnan(v), 0x7FFF, b).astype(np.uint16)
    return b.view(ml_dtypes.bfloat16)


def dequantize(data, scale, amax, p, fault=None):
    """The registry's dequantize (profile te): {x} of dtype output_dtype."""
    if p["profile"] != "te":
        fail("dequantize", "E_UNSUPPORTED", "this kernel implements profile te only")
    M, K = data.shape[0], 2 * data.shape[1]
    if K % 16:
        fail("dequantize", "E_DIM16_K", f"K={K} is not a multiple of 16")
    if scale.shape != (roundup(M, 128), roundup(K // 16, 4)):
        fail("dequantize", "E_SCALE_SHAPE", f"scale is {list(scale.shape)} for data [{M}, {K // 2}]")
    amax = amax.reshape(-1).astype(F32)
    if amax.size not in (1, M):
        fail("dequantize", "E_AMAX_SHAPE", f"amax has {amax.size} values, expected 1 or M={M}")
    g = np.broadcast_to(amax, (M,))[:, None]
    table = F8_SUBNORMAL_AS_NORMAL if fault == "e4m3-subnormal-as-normal" else F8
    sf = table[scale[:M, : K // 16]]
    with np.errstate(over="ignore", invalid="ignore"):
        if fault == "dq-senc-for-sdec":
            fs = sf * global_scale(g)[0]  # the encode scale where the decode scale belongs
        elif fault == "dq-drops-global":
            fs = sf  # a single-level dequantizer
        else:
            fs = (sf * g) * R2688  # DQ = TE: amax * RN(1/2688), not S_dec
        lo, hi = data & 0xF, data >> 4
        if fault == "nibble-order-swapped":
            lo, hi = hi, lo  # the odd element read from the low nibble
        q = np.empty((M, K), np.uint8)
        q[:, 0::2], q[:, 1::2] = lo, hi
        out = F4[q] * np.repeat(fs, 16, axis=1)
    dtype = p["output_dtype"]
    if dtype == "BF16":
        return {"x": bf16_round(out)}
    if dtype == "F16":
        with np.errstate(over="ignore"):
            return {"x": out.astype(np.float16)}  # RNE binary16
    return {"x": out}
