"""safetensors images (https://github.com/huggingface/safetensors) with numpy and ml_dtypes:
[u64 LE N][N bytes of JSON header][data]. Pure Python, for the worker protocol's frames and for
reading and writing the CLI's files (BF16 and F8_E4M3 included, which safetensors.numpy lacks)."""
import json
import math

import numpy as np

from .dtypes import numpy_dtype, safetensors_name


def decode(buffer, origin="safetensors image"):
    """(tensors, metadata) of an image. Arrays are views of `buffer` (writable when it is, e.g. a
    bytearray). Raises ValueError, prefixed with `origin`, when the image is malformed."""
    view = memoryview(buffer)
    if len(view) < 8:
        raise ValueError(f"{origin}: {len(view)} bytes, shorter than the 8-byte header length")
    n = int.from_bytes(view[:8], "little")
    if 8 + n > len(view):
        raise ValueError(f"{origin}: header of {n} bytes overruns the {len(view)}-byte image")
    try:
        header = json.loads(bytes(view[8:8 + n]))
    except ValueError as e:
        raise ValueError(f"{origin}: header is not JSON: {e}") from None
    metadata = header.pop("__metadata__", None) or {}
    start, size = 8 + n, len(view) - 8 - n
    tensors = {}
    for name, info in header.items():
        dtype = numpy_dtype(info["dtype"])
        shape = [int(d) for d in info["shape"]]
        begin, end = info["data_offsets"]
        count = math.prod(shape)
        if end - begin != count * dtype.itemsize or not 0 <= begin <= end <= size:
            raise ValueError(f"{origin}: tensor {name!r}: data_offsets [{begin}, {end}] do not hold "
                             f"{info['dtype']} {shape} inside the {size}-byte data section")
        tensors[name] = np.frombuffer(buffer, dtype=dtype, count=count, offset=start + begin).reshape(shape)
    return tensors, metadata


def encode(tensors, metadata=None):
    """The image of {name: numpy array} as a list of byte buffers to write in order (the tensors'
    data is not copied): tensors contiguous in name order, the header padded with spaces to a
    multiple of 8 bytes so that the data stays aligned."""
    header, parts, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.asarray(tensors[name])
        raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        header[name] = {"dtype": safetensors_name(a.dtype), "shape": list(a.shape),
                        "data_offsets": [offset, offset + raw.size]}
        parts.append(raw.data)
        offset += raw.size
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return [len(text).to_bytes(8, "little"), text, *parts]


def load(path):
    """(tensors, metadata) of a .safetensors file."""
    with open(path, "rb") as f:
        return decode(bytearray(f.read()), origin=str(path))


def save(path, tensors, metadata=None):
    with open(path, "wb") as f:
        f.writelines(encode(tensors, metadata))
