"""Safetensors dtype names (those of `nvfp4-verify ops --json`) and their numpy dtypes; BF16 and the
FP8 formats come from ml_dtypes."""
import ml_dtypes
import numpy as np

_BY_NAME = {
    "F64": np.dtype(np.float64),
    "F32": np.dtype(np.float32),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "I64": np.dtype(np.int64),
    "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16),
    "I8": np.dtype(np.int8),
    "U8": np.dtype(np.uint8),
    "BOOL": np.dtype(np.bool_),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
}
_BY_DTYPE = {dtype: name for name, dtype in _BY_NAME.items()}


def numpy_dtype(name):
    """The numpy dtype of a safetensors dtype name ("BF16" -> ml_dtypes.bfloat16)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown safetensors dtype {name!r} (known: {', '.join(_BY_NAME)})") from None


def safetensors_name(dtype):
    """The safetensors name of a numpy dtype (ml_dtypes.bfloat16 -> "BF16")."""
    try:
        return _BY_DTYPE[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"dtype {np.dtype(dtype)} has no safetensors name nvfp4-verify reads "
                         f"(it reads {', '.join(_BY_NAME)})") from None


def normalize(spec):
    """A safetensors name from "f32", "BF16", "bfloat16", np.float16, ml_dtypes.bfloat16, torch.bfloat16, ..."""
    if isinstance(spec, str) and spec.upper() in _BY_NAME:
        return spec.upper()
    text = spec if isinstance(spec, str) else str(spec)
    if text.startswith("torch."):  # torch dtypes print as torch.bfloat16, torch.float32, ...
        spec = text[len("torch."):]
    try:
        return safetensors_name(np.dtype(spec))
    except TypeError:
        raise ValueError(f"unknown dtype {spec!r} (use a safetensors name: {', '.join(_BY_NAME)})") from None
