"""Tensors into and out of the native extension: any array-like becomes a numpy array, then a
(name, safetensors dtype, shape, uint8 bytes) tuple; outputs come back as such tuples."""
import numpy as np

from .dtypes import numpy_dtype, safetensors_name
from .torch_utils import from_torch


def as_numpy(obj):
    """numpy arrays as they are, torch tensors through from_torch, anything else np.asarray."""
    if isinstance(obj, np.ndarray):
        return obj
    if type(obj).__module__.startswith("torch"):  # torch.Tensor and its subclasses, without importing torch
        return from_torch(obj)
    return np.asarray(obj)


def to_core(name, obj):
    a = as_numpy(obj)
    return name, safetensors_name(a.dtype), list(a.shape), np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def from_core(tuples):
    return {name: data.view(numpy_dtype(dtype)).reshape(shape) for name, dtype, shape, data in tuples}
