"""numpy <-> torch, on any device, without copies where the memory allows. torch is imported only
when these are called: it is an optional dependency. BF16 and FP8 travel as same-size integers,
since numpy knows them only through ml_dtypes."""
import ml_dtypes
import numpy as np

# numpy dtype -> (same-size integer numpy dtype, torch dtype name)
_VIA_INTEGERS = {
    np.dtype(ml_dtypes.bfloat16): (np.int16, "bfloat16"),
    np.dtype(ml_dtypes.float8_e4m3fn): (np.uint8, "float8_e4m3fn"),
    np.dtype(ml_dtypes.float8_e5m2): (np.uint8, "float8_e5m2"),
}


def from_torch(t):
    """A numpy array of the tensor's bits (copied to the CPU when it lives elsewhere); torch.bfloat16
    gives ml_dtypes.bfloat16, the float8 dtypes their ml_dtypes twins."""
    import torch

    t = t.detach().cpu().contiguous()
    for np_dtype, (integer, name) in _VIA_INTEGERS.items():
        if t.dtype == getattr(torch, name):
            return t.view(getattr(torch, np.dtype(integer).name)).numpy().view(np_dtype)
    return t.numpy()


def _tensor(a, device):
    import torch

    a = np.asarray(a)
    if not (a.flags.c_contiguous and a.flags.writeable):  # torch.from_numpy wants both
        a = a.copy()
    via = _VIA_INTEGERS.get(a.dtype)
    t = torch.from_numpy(a.view(via[0])).view(getattr(torch, via[1])) if via else torch.from_numpy(a)
    return t if device is None else t.to(device)


def to_torch(outputs, device=None):
    """Torch tensors of an operation's outputs (a dict of numpy arrays) or of one array, moved to
    `device` ("cuda", torch.device(...)) when given; the bits are unchanged."""
    if isinstance(outputs, dict):
        return {name: _tensor(a, device) for name, a in outputs.items()}
    return _tensor(outputs, device)
