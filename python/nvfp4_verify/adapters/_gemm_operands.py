"""What every `gemm` worker reads the same way: the operands' shapes by the reference's rules and
alpha (NUMERICS.md §3.20.1). numpy only, so that importing it registers no handler and needs no torch."""
import numpy as np

from nvfp4_verify import worker

R7225344 = np.array([0x34149B93], dtype=np.uint32).view(np.float32)[0]  # RN(1 / (6·448)^2), §1.2


def roundup(a, b):
    return (a + b - 1) // b * b


def check_operands(inputs):
    """(M, N, K) after the reference's shape rules (NUMERICS.md §3.22); ValueError otherwise."""
    a, b = inputs["a_data"], inputs["b_data"]
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or (2 * a.shape[1]) % 16:
        raise ValueError(f"a_data {list(a.shape)} and b_data {list(b.shape)}: K must be a common multiple of 16")
    K = 2 * a.shape[1]
    for side, rows in (("a", a.shape[0]), ("b", b.shape[0])):
        scale, amax = inputs[f"{side}_scale"], inputs[f"{side}_amax"]
        if list(scale.shape) != [roundup(rows, 128), roundup(K // 16, 4)]:
            raise ValueError(f"{side}_scale is {list(scale.shape)}, expected {[roundup(rows, 128), roundup(K // 16, 4)]}")
        if amax.size != 1:
            raise ValueError(f"{side}_amax holds {amax.size} values, not 1")
    return a.shape[0], b.shape[0], K


def alpha_of(inputs, params):
    """The case's alpha, else RN(RN(RN(1 · amax_a) · amax_b) · r7225344) in FP32 (§3.20.1)."""
    given = worker.f32(params["alpha"])
    if given is not None:
        return np.float32(given)
    amax_a, amax_b = np.float32(inputs["a_amax"].reshape(-1)[0]), np.float32(inputs["b_amax"].reshape(-1)[0])
    with np.errstate(all="ignore"):  # inf and NaN amaxes give what FP32 gives
        return np.float32(np.float32(np.float32(1.0) * amax_a) * amax_b) * R7225344
