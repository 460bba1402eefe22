"""The 16-point random Hadamard transform of docs/NUMERICS.md §3.19, written from the spec alone
(numpy and Python integers; nothing from nvfp4_verify's numerics).

    rht_sums(x, mask, fault=None) -> float32 [N, M]: RN(exact sum), the binary32 sums
    rht(x, mask, fault=None)      -> ml_dtypes.bfloat16 [N, M]: those sums RNE to BF16

x is a float32 (or bfloat16) array [M, N] of BF16 values; chunk b of column c is
x[16b .. 16b+15][c] and its 16 outputs land in Y[c][16b .. 16b+15].

Faults (docs/spec/faults.md), each written where a buggy kernel would get it wrong:
  rht-mask-bit-order  the sign of input k is bit 15-k of the mask (mask packed MSB first)
  rht-missing-norm    the 1/4 normalisation is never applied (sums four times too large)

rn_f32 (the single correct rounding of an exact dyadic n·2^e to binary32) is shared with
gemm_exact.py.
"""
import math

import ml_dtypes
import numpy as np

FAULTS = ("rht-mask-bit-order", "rht-missing-norm")

# Sylvester-order H16[k][n] = (-1)^popcount(k & n): True where the entry is -1.
_H_NEG = np.array([[bin(k & n).count("1") & 1 for n in range(16)] for k in range(16)], dtype=bool)


def rn_f32(n, e):
    """RN(n · 2^e) as a Python float holding a binary32 value (or ±inf): round to nearest even,
    gradual underflow, overflow to infinity. n and e are Python ints; the rounding is done on the
    integer itself, so there is no double rounding through binary64. n = 0 gives +0.0 (callers
    decide the sign of an exact zero)."""
    if n == 0:
        return 0.0
    sign, a = (-1.0 if n < 0 else 1.0), abs(n)
    top = a.bit_length() - 1 + e          # exponent of the leading bit
    q = max(top - 23, -149)               # exponent of the result's last bit (-149: subnormal ulp)
    if q > e:                             # bits below 2^q must be rounded off
        shift = q - e
        mant, rem = a >> shift, a & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and mant & 1):
            mant += 1                     # may carry to 2^24: still exact, just one binade up
    else:
        mant = a << (e - q)
    if mant.bit_length() - 1 + q >= 128:  # mant·2^q >= 2^128: beyond FLT_MAX's binade
        return sign * math.inf
    return sign * math.ldexp(mant, q)     # mant < 2^25 and q >= -149: exact in binary64


def _signs(mask, fault):
    """neg[k]: whether input k of a chunk is negated (s_k = -1)."""
    mask = int(mask)
    if fault == "rht-mask-bit-order":
        return np.array([(mask >> (15 - k)) & 1 for k in range(16)], dtype=bool)  # MSB-first reading
    return np.array([(mask >> k) & 1 for k in range(16)], dtype=bool)


def _exact_chunks(v, neg_kn, log2_norm):
    """The binary32 sums [n_chunks, 16] of chunks v [n_chunks, 16] (float64 holding BF16 values)
    the slow, obviously exact way: Python integers on the common scale 2^-133 (the BF16 quantum),
    IEEE rules for NaN and infinities."""
    w = np.where(neg_kn, -1, 1).astype(object)                          # [k, n]
    ints = [[0 if not math.isfinite(t) else int(math.ldexp(t, 133)) for t in row] for row in v.tolist()]
    totals = (np.array(ints, dtype=object).reshape(-1, 16) @ w).tolist()  # exact integer sums
    out = np.empty((len(ints), 16), dtype=np.float32)
    for i, row in enumerate(v):
        if np.isnan(row).any():
            out[i] = np.nan                   # one NaN input: all 16 outputs NaN
            continue
        inf = np.isinf(row)
        if inf.any():                         # the signs of the infinite products per output
            pos = ((row[inf] > 0)[:, None] != neg_kn[inf]).astype(int)   # [infinite k, n]
            out[i] = np.where(pos.min(axis=0) == 1, np.inf, np.where(pos.max(axis=0) == 0, -np.inf, np.nan))
            continue
        out[i] = [rn_f32(t, -133 + log2_norm) for t in totals[i]]
    return out


def rht_sums(x, mask, fault=None):
    """float32 [N, M]: for column c and chunk b, Y[c][16b+n] = RN(Σ_k s_k·H16[k][n]·0.25·x[16b+k][c]).
    fault: one of FAULTS, or anything else (None, a quantize fault such as rht-fp32-output) for
    the canonical transform."""
    x = np.asarray(x, dtype=np.float32)
    M, N = x.shape
    if M % 16 or N % 16:
        raise ValueError(f"rht: x is [{M}, {N}]; M and N must be multiples of 16")
    # The normalisation 0.25 = 2^-2 is a power of two, so it is folded into the exponent.
    log2_norm = 0 if fault == "rht-missing-norm" else -2
    neg_kn = _signs(mask, fault)[:, None] ^ _H_NEG            # the product's coefficient is -1
    w = np.where(neg_kn, -1.0, 1.0)                           # [k, n]
    with np.errstate(invalid="ignore"):                       # signalling-NaN bit patterns
        v = x.astype(np.float64).reshape(M // 16, 16, N).transpose(0, 2, 1)  # [b, c, k]

    # Fast path: binary64 is exact for the whole butterfly when a chunk's nonzero inputs span at
    # most 41 binades (8 significant bits + 4 bits of growth over 16 terms + 41 <= 53), so the
    # sum in any order (BLAS included) is the exact one and one cast rounds it to binary32 once.
    expo = np.frexp(v)[1]                                     # 0 for zeros, garbage for inf/NaN
    nz = v != 0
    hi = np.where(nz, expo, -100000).max(axis=2)
    lo = np.where(nz, expo, 100000).min(axis=2)
    fast = np.isfinite(v).all(axis=2) & (hi - lo <= 41)       # all-zero chunks: hi < lo
    sums = np.where(fast[:, :, None], v, 0.0) @ w             # [b, c, n]
    sums = (sums * 2.0 ** log2_norm).astype(np.float32)       # exact scaling, then one rounding

    slow = ~fast                                              # wide or non-finite chunks
    if slow.any():
        sums[slow] = _exact_chunks(v[slow], neg_kn, log2_norm)

    # An exact zero is -0.0 only when all 16 signed products are -0.0 (numerics-choices #21):
    # every input a zero whose sign bit differs from its coefficient's (-0.0·+1 or +0.0·-1), i.e.
    # the chunk's sign bits spell the complement of column n of neg_kn. BLAS cannot be trusted
    # with the sign of zero, so every zero result takes its sign from this rule.
    bit = 1 << np.arange(16)
    signs = (np.signbit(v) * bit).sum(axis=2)                 # [b, c]: the inputs' sign bits
    column = (~neg_kn * bit[:, None]).sum(axis=0)             # [n]: the pattern that gives -0.0
    all_neg_zero = (~nz.any(axis=2))[:, :, None] & (signs[:, :, None] == column)
    sums = np.where(sums == 0, np.where(all_neg_zero, np.float32(-0.0), np.float32(0.0)), sums)
    return np.ascontiguousarray(sums.transpose(1, 0, 2).reshape(N, M))       # Y[c][16b+n]


def bf16_rne(v):
    """float32 array -> ml_dtypes.bfloat16 array, RNbf16 of NUMERICS §1.1 on the bits."""
    u = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r = np.where(np.isnan(v), np.uint16(0x7FFF), r)
    return r.view(ml_dtypes.bfloat16)


def rht(x, mask, fault=None):
    """ml_dtypes.bfloat16 [N, M]: rht_sums rounded RNE to BF16 (the double rounding of §3.19)."""
    return bf16_rne(rht_sums(x, mask, fault))
