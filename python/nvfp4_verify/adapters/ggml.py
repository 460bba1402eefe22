"""A worker (docs/spec/worker-protocol.md) around ggml's NVFP4 type (llama.cpp's GGML_TYPE_NVFP4), through
its C API by ctypes: ggml_quantize_chunk(GGML_TYPE_NVFP4, ...) (what llama-quantize calls; for NVFP4 it
is quantize_nvfp4, which ignores the importance matrix and runs quantize_row_nvfp4_ref) and
dequantize_row_nvfp4 (the type's to_float), from libggml-base.so as scripts/build-ggml-peer builds it
from the llama-cpp-python sdist, unmodified.

    scripts/build-ggml-peer    # build-gpu/ggml/libggml-base.so (ggml 0.25.3)
    nvfp4-verify fuzz --ops quantize,dequantize --backends reference,worker \\
        --worker 'python3 -m nvfp4_verify.adapters.ggml [--lib PATH]'

The library is --lib PATH, else $NVFP4_GGML_LIB, else build-gpu/ggml/libggml-base.so relative to the
working directory; the worker checks at start-up that it is the layout described below (type 40 is
"nvfp4", 64 elements in 36 bytes) and exits with status 2 otherwise. Profile `ggml`: single-level
(no global scale), the same bits on every machine (plain binary32 C, no FMA-sensitive step).

The adapter only converts representations; every number of data, scale and x comes from ggml:
- x (quantize): F32 [M, K], passed as ggml's row-major F32 rows. ggml's row length must be a multiple
  of QK_NVFP4 = 64 (ggml_row_size asserts it); the registry's K is a multiple of 16, so each row is
  padded with +0.0 to K' = roundup(K, 64) and the outputs of the padded 16-element sub-blocks are
  dropped. ggml quantizes every 16-element sub-block from its own 16 elements only, so the padding
  changes no byte of the others.
- ggml's block_nvfp4 (36 bytes per 64 elements of a row): d[4], the E4M3 byte of each 16-element
  sub-block s, then qs[32], 8 bytes per sub-block, byte j of sub-block s holding element 16s+j in
  its low nibble and element 16s+j+8 in its high nibble, each nibble an E2M1 code (sign in bit 3,
  the registry's code table, NUMERICS.md §2.1.1).
- data: the codes repacked in the registry's order (NUMERICS.md §2.1.3): uint8 [M, K/2], element 2k
  in the low nibble of byte k, element 2k+1 in the high nibble.
- scale: the d bytes, one per 16 elements, in row order, padded with 0x00 to the registry's compact
  [roundup(M,128), roundup(K/16,4)] (NUMERICS.md §2.4.1). ggml has no swizzled layout: compact only.
- amax (registry: the global amax g, F32 [1]): ggml has none. It is the case's override when given,
  else max |x| over the non-NaN elements (0 when none), the NaN rule of ggml's own block amax
  (`if (amax < fabsf(x)) amax = fabsf(x)`, NUMERICS.md §3.1 IGNORE); ggml reads neither.
- dequantize: the registry's data and compact scale are repacked into ggml blocks (the inverse of the
  above, each row padded with code 0 and scale byte 0x00 to K'), dequantize_row_nvfp4 writes F32
  rows, and the padding columns are dropped. ggml takes no amax: the input is read for its shape
  only. Output F32 only (ggml's to_float writes F32; another dtype would be the adapter's rounding).
Prints nothing to stdout; needs numpy and the library, not torch nor nvfp4_verify's native extension.
"""
import argparse
import ctypes
import os
import sys

import numpy as np

from nvfp4_verify import worker
from nvfp4_verify.adapters._shared import check_shape, padded_scale, roundup, serve_and_exit

GGML_TYPE_NVFP4 = 40  # enum ggml_type in ggml.h
QK_NVFP4 = 64  # elements per block_nvfp4
QK_NVFP4_SUB = 16  # elements per scale byte
BLOCK_BYTES = QK_NVFP4 // QK_NVFP4_SUB + QK_NVFP4 // 2  # d[4] + qs[32]
DEFAULT_LIB = os.path.join("build-gpu", "ggml", "libggml-base.so")
lib = None  # the loaded library, set by load()


def load(path):
    """Loads libggml-base.so and checks that its NVFP4 type is the block layout this adapter reads."""
    global lib
    lib = ctypes.CDLL(os.path.abspath(path))
    lib.ggml_version.restype = ctypes.c_char_p
    lib.ggml_commit.restype = ctypes.c_char_p
    lib.ggml_type_name.argtypes, lib.ggml_type_name.restype = [ctypes.c_int], ctypes.c_char_p
    lib.ggml_blck_size.argtypes, lib.ggml_blck_size.restype = [ctypes.c_int], ctypes.c_int64
    lib.ggml_type_size.argtypes, lib.ggml_type_size.restype = [ctypes.c_int], ctypes.c_size_t
    lib.ggml_row_size.argtypes, lib.ggml_row_size.restype = [ctypes.c_int, ctypes.c_int64], ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.dequantize_row_nvfp4.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    lib.dequantize_row_nvfp4.restype = None
    layout = (lib.ggml_type_name(GGML_TYPE_NVFP4), lib.ggml_blck_size(GGML_TYPE_NVFP4),
              lib.ggml_type_size(GGML_TYPE_NVFP4))
    if layout != (b"nvfp4", QK_NVFP4, BLOCK_BYTES):
        raise RuntimeError(f"{path}: ggml type {GGML_TYPE_NVFP4} is {layout}, "
                           f"not (b'nvfp4', {QK_NVFP4}, {BLOCK_BYTES})")
    return f"ggml {lib.ggml_version().decode()} ({lib.ggml_commit().decode()})"


def ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def padded(a, cols, fill=0):
    """a [rows, n] with columns appended up to `cols`, filled with `fill` (the same dtype, a copy)."""
    out = np.full((a.shape[0], cols), fill, dtype=a.dtype)
    out[:, :a.shape[1]] = a
    return out


def ggml_quantize(x):
    """ggml's blocks of the F32 rows x [M, K'] (K' a multiple of 64): uint8 [M, K'/64, 36]."""
    M, Kp = x.shape
    x = np.ascontiguousarray(x, dtype=np.float32)
    blocks = np.zeros((M, Kp // QK_NVFP4, BLOCK_BYTES), dtype=np.uint8)
    assert lib.ggml_row_size(GGML_TYPE_NVFP4, Kp) == blocks.shape[1] * BLOCK_BYTES
    written = lib.ggml_quantize_chunk(GGML_TYPE_NVFP4, ptr(x), ptr(blocks), 0, M, Kp, None)
    assert written == blocks.nbytes, (written, blocks.nbytes)
    return blocks


def codes_of_blocks(blocks):
    """Unpacked E2M1 codes [M, K'] and scale bytes [M, K'/16] of ggml blocks [M, K'/64, 36]."""
    M, nb, _ = blocks.shape
    scales = blocks[:, :, :QK_NVFP4 // QK_NVFP4_SUB].reshape(M, nb * 4)
    qs = blocks[:, :, QK_NVFP4 // QK_NVFP4_SUB:].reshape(M, nb, 4, QK_NVFP4_SUB // 2)
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # elements j (low nibbles), then j + 8 (high)
    return codes.reshape(M, nb * QK_NVFP4), scales


def blocks_of_codes(codes, scales):
    """The inverse of codes_of_blocks: codes [M, K'] and scale bytes [M, K'/16] as ggml blocks."""
    M, Kp = codes.shape
    nb = Kp // QK_NVFP4
    sub = codes.reshape(M, nb, 4, QK_NVFP4_SUB)
    qs = (sub[..., :8] | (sub[..., 8:] << 4)).astype(np.uint8).reshape(M, nb, QK_NVFP4 // 2)
    return np.ascontiguousarray(np.concatenate([scales.reshape(M, nb, 4), qs], axis=-1))


def pack(codes):
    """Codes [M, K] in the registry's packing [M, K/2]: element 2k low, 2k+1 high."""
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def unpack(data):
    """The registry's packed data [M, K/2] as codes [M, K]."""
    codes = np.empty((data.shape[0], 2 * data.shape[1]), dtype=np.uint8)
    codes[:, 0::2], codes[:, 1::2] = data & 0x0F, data >> 4
    return codes


@worker.implements("quantize", profile=["ggml"], block=["1d"], direction=["rowwise"], row_scaled=[False],
                   scale_layout=["compact"], rounding=["nearest"], rht=[False], amax=worker.ANY, dtype=["f32"])
def quantize(inputs, params):
    check_shape(inputs["x"])
    x = inputs["x"]
    K = x.shape[1]
    Kp = roundup(K, QK_NVFP4)
    codes, scales = codes_of_blocks(ggml_quantize(padded(x, Kp, 0.0)))
    override = worker.f32(params["amax"])
    if override is None:  # not ggml's: the registry's g under ggml's NaN rule (NaN ignored), exact
        amax = np.fmax.reduce(np.abs(x), axis=None, initial=np.float32(0.0))
    else:
        amax = override
    return {"data": pack(codes[:, :K]), "scale": padded_scale(scales[:, :K // 16]),
            "amax": np.array([amax], dtype=np.float32)}


@worker.implements("dequantize", profile=["ggml"], output_dtype=["F32"])
def dequantize(inputs, params):
    data, scale, amax = inputs["data"], inputs["scale"], inputs["amax"]
    M, K = data.shape[0], 2 * data.shape[1]
    if K % 16:
        raise worker.Nvfp4Error(f"dequantize: K={K} is not a multiple of 16", "E_DIM16_K")
    if scale.shape != (roundup(M, 128), roundup(K // 16, 4)):
        raise worker.Nvfp4Error(f"dequantize: scale is {list(scale.shape)}, expected "
                                f"[{roundup(M, 128)}, {roundup(K // 16, 4)}] for data [{M}, {K // 2}]", "E_SCALE_SHAPE")
    if amax.size not in (1, M):
        raise worker.Nvfp4Error(f"dequantize: amax has {amax.size} values, expected 1 or M={M}", "E_AMAX_SHAPE")
    Kp = roundup(K, QK_NVFP4)
    blocks = blocks_of_codes(padded(unpack(data), Kp), padded(scale[:M, :K // 16], Kp // QK_NVFP4_SUB))
    out = np.empty((M, Kp), dtype=np.float32)
    lib.dequantize_row_nvfp4(ptr(blocks), ptr(out), M * Kp)  # M whole rows of blocks: one call
    return {"x": np.ascontiguousarray(out[:, :K])}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=os.environ.get("NVFP4_GGML_LIB") or DEFAULT_LIB,
                        help="libggml-base.so (default: $NVFP4_GGML_LIB, else %(default)s)")
    path = parser.parse_args().lib
    try:
        name = load(path)
    except (OSError, AttributeError, RuntimeError) as e:
        print(f"ggml adapter: cannot use {path}: {e} (scripts/build-ggml-peer builds it)", file=sys.stderr)
        sys.stderr.flush()
        os._exit(2)
    serve_and_exit(f"{name} NVFP4 via {os.path.basename(path)}")
