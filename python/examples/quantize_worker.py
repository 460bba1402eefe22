"""The worker example of docs/guides/python.md, its kernel call replaced by the reference itself, so that it
conforms: `nvfp4-verify worker-selftest --worker 'python3 python/examples/quantize_worker.py'`.
A real worker calls its GPU kernel where this calls nvfp4_verify.quantize."""
import numpy as np

import nvfp4_verify
from nvfp4_verify import worker


@worker.implements("quantize", profile=["te"], block=["1d"], direction=["rowwise", "both"],
                   row_scaled=[False], scale_layout=["compact"], dtype=["f32", "bf16"])
def quantize(inputs, params):
    x = np.ascontiguousarray(inputs["x"])  # numpy: float32, float16, or ml_dtypes.bfloat16
    q = nvfp4_verify.quantize(x, **params)  # params: the case's parameters, names as in `ops --json`
    data, scale, amax = q["data"], q["scale"], q["amax"]
    data_t, scale_t, amax_t = q.get("data_t"), q.get("scale_t"), q.get("amax_t")  # None for rowwise: dropped
    return {"data": data, "scale": scale, "amax": amax, "data_t": data_t, "scale_t": scale_t, "amax_t": amax_t}


if __name__ == "__main__":
    worker.serve()
