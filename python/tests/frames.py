"""A minimal codec of the worker protocol's frames, written from docs/spec/worker-protocol.md for the
tests alone, so that the worker is checked against the document and not against its own code.
Tensors are (safetensors dtype, shape, bytes)."""
import json
import struct


def frame(message, tensors=None):
    header, data = {}, b""
    for name, (dtype, shape, raw) in (tensors or {}).items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    header["__metadata__"] = {"nvfp4-verify": json.dumps(message)}
    head = json.dumps(header).encode()
    image = struct.pack("<Q", len(head)) + head + data
    return struct.pack("<Q", len(image)) + image


def read_frame(stream):
    """(message, tensors) of the next frame, or None at end of stream."""
    prefix = stream.read(8)
    if not prefix:
        return None
    (length,) = struct.unpack("<Q", prefix)
    image = stream.read(length)
    assert len(image) == length, f"truncated frame: {len(image)} of {length} bytes"
    (n,) = struct.unpack("<Q", image[:8])
    header = json.loads(image[8:8 + n])
    message = json.loads(header.pop("__metadata__")["nvfp4-verify"])
    data = image[8 + n:]
    tensors = {name: (t["dtype"], t["shape"], data[t["data_offsets"][0]:t["data_offsets"][1]])
               for name, t in header.items()}
    return message, tensors
