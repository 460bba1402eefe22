"""safetensors images: an image written byte by byte here (BF16, F8_E4M3, a scalar) decodes to the
right arrays, re-encodes to an image that decodes the same, and malformed images are rejected."""
import json
import struct

import ml_dtypes
import numpy as np
import pytest

from helpers import same_bits
from nvfp4_verify.safetensors_image import decode, encode


def handmade():
    header = {"b": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
              "e": {"dtype": "F8_E4M3", "shape": [1, 2], "data_offsets": [4, 6]},
              "s": {"dtype": "F32", "shape": [], "data_offsets": [6, 10]},
              "__metadata__": {"k": "v"}}
    text = json.dumps(header).encode()
    data = struct.pack("<HH", 0x3F80, 0xC000) + bytes([0x38, 0xFE]) + struct.pack("<f", -0.0)
    return struct.pack("<Q", len(text)) + text + data


def test_decode_handmade_image():
    tensors, metadata = decode(handmade())
    assert metadata == {"k": "v"}
    assert same_bits(tensors["b"], np.array([1.0, -2.0], ml_dtypes.bfloat16))
    assert same_bits(tensors["e"], np.array([[1.0, -448.0]], ml_dtypes.float8_e4m3fn))
    assert same_bits(tensors["s"], np.array(-0.0, np.float32))


def test_encode_round_trip():
    tensors, metadata = decode(handmade())
    image = b"".join(encode(tensors, metadata))
    assert struct.unpack("<Q", image[:8])[0] % 8 == 0  # the data section stays aligned
    again, meta = decode(bytearray(image))
    assert meta == metadata and sorted(again) == sorted(tensors)
    for name in tensors:
        assert same_bits(again[name], tensors[name])
        assert again[name].flags.writeable


def image_of(header, data=b""):
    return struct.pack("<Q", len(header)) + header + data


@pytest.mark.parametrize("image", [b"\x01", struct.pack("<Q", 100) + b"{}", image_of(b"{x"),
                                   image_of(b'{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', bytes(4)),
                                   image_of(b'{"t":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}}', bytes(4))])
def test_malformed_images_are_rejected(image):
    with pytest.raises(ValueError):
        decode(image)
