"""Parameter values as the registry encodes them. f32_bits parameters (quantize's amax) are exact
binary32 bit patterns; Python code may give a float, "0x40C00000", {"bits": "0x40C00000"} or None."""
import struct

import numpy as np


def f32_bits(value):
    """The "0x%08X" bit string of an f32_bits value, or None."""
    if value is None:
        return None
    if isinstance(value, dict):
        return value["bits"]
    if isinstance(value, str):
        return value
    return "0x%08X" % struct.unpack("<I", struct.pack("<f", value))[0]  # packing rounds to nearest


def f32(value):
    """The float of an f32_bits value (as a Python float, exact), or None."""
    bits = f32_bits(value)
    return None if bits is None else struct.unpack("<f", int(bits, 16).to_bytes(4, "little"))[0]


def encode_params(types, params):
    """params ready for json.dumps, for an operation whose parameter types are `types` (name ->
    registry type). Unknown names pass unchanged, for the registry to reject with its message."""
    out = {}
    for name, value in params.items():
        if types.get(name) == "f32_bits":
            bits = f32_bits(value)
            value = None if bits is None else {"bits": bits}
        elif isinstance(value, np.generic):
            value = value.item()
        out[name] = value
    return out
