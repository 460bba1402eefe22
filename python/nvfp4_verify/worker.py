"""The worker side of docs/spec/worker-protocol.md, version 2, in pure Python: it needs numpy and
ml_dtypes but not the native extension, so a worker runs with only PYTHONPATH=python.

    from nvfp4_verify import worker

    @worker.implements("quantize", profile=["te"], amax=worker.ANY, dtype=["f32", "bf16"])
    def quantize(inputs, params):      # inputs: {name: numpy array}; params: every parameter
        ...
        return {"data": data, "scale": scale, "amax": amax}   # numpy arrays or torch tensors

    if __name__ == "__main__":
        worker.serve()

A handler's exception rejects the case (`ok: false` with its message, and its `code` when it is an
Nvfp4Error that has one). f32_bits parameters arrive as the protocol encodes them; worker.f32(v)
gives their float.
"""
import contextlib
import json
import os
import sys
import traceback
from collections.abc import Mapping

from ._convert import as_numpy
from ._params import f32
from .dtypes import normalize
from .errors import Nvfp4Error
from .safetensors_image import decode, encode

__all__ = ["implements", "serve", "ANY", "f32", "Nvfp4Error", "ProtocolError", "read_message", "write_message"]

PROTOCOL = 2
ANY = "*"  # a parameter declared ANY accepts every value the registry allows
MAX_FRAME = 2**31
_handlers = {}  # operation name -> (handler, its entry of the hello's "implements")


class ProtocolError(Exception):
    """The harness's bytes are not a well-formed request."""


def _values(v):
    if isinstance(v, str) and v == ANY:
        return ANY
    return [v] if isinstance(v, (str, bool, int, float)) or v is None else list(v)


def implements(op, dtype=None, **allowed):
    """Registers the decorated function as the handler of registry operation `op`. Each keyword
    lists the values that parameter accepts (encoded as in case files), or is ANY for every value the
    registry allows; a parameter not named accepts only its default, so that a parameter the
    registry gains later never reaches this handler. `dtype` restricts the dtype of the inputs that
    allow several ("f32", "bf16", "F16", np.float32, ...); without it, any. The harness generates
    only cases inside the declaration."""
    def register(handler):
        if op in _handlers:
            raise ValueError(f"operation {op!r} already has a handler ({_handlers[op][0].__name__})")
        entry = {"op": op, "params": {name: _values(v) for name, v in allowed.items()}}
        if dtype is not None:
            entry["dtype"] = [normalize(d) for d in ([dtype] if isinstance(dtype, str) else dtype)]
        _handlers[op] = (handler, entry)
        return handler
    return register


def _read_exactly(stream, n, eof_ok=False):
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = stream.readinto(view[got:])
        if not k:
            if got == 0 and eof_ok:
                return None
            raise ProtocolError(f"end of input inside a frame ({got} of {n} bytes)")
        got += k
    return buf


def read_message(stream):
    """(message, {name: numpy array}) of the next frame on a binary stream, or None at end of input
    between frames. The arrays are writable views of the frame."""
    head = _read_exactly(stream, 8, eof_ok=True)
    if head is None:
        return None
    n = int.from_bytes(head, "little")
    if n > MAX_FRAME:
        raise ProtocolError(f"frame of {n} bytes, more than 2^31")
    frame = _read_exactly(stream, n)
    try:
        tensors, metadata = decode(frame, "frame")
        message = json.loads(metadata["nvfp4-verify"])
    except (ValueError, KeyError, TypeError) as e:
        raise ProtocolError(f"malformed frame: {e!r}") from None
    if not isinstance(message, dict) or "type" not in message:
        raise ProtocolError(f"a message must be a JSON object with a type, not {message!r}")
    return message, tensors


def _frame(message, tensors=None):
    parts = encode(tensors or {}, {"nvfp4-verify": json.dumps(message)})
    return [sum(len(p) for p in parts).to_bytes(8, "little"), *parts]


def write_message(stream, message, tensors=None):
    """Writes one frame (message and tensors) and flushes it."""
    stream.writelines(_frame(message, tensors))
    stream.flush()


def _result(message, inputs):
    """The result frame of a run request: the handler's outputs, or its exception as a rejection."""
    reply = {"type": "result", "id": message.get("id")}
    try:
        op = message["op"]
        if op not in _handlers:
            raise LookupError(f"this worker does not implement operation {op!r}")
        outputs = _handlers[op][0](inputs, message["params"])
        if not isinstance(outputs, Mapping):
            raise TypeError(f"the handler of {op!r} returned {type(outputs).__name__}, not a dict of tensors")
        tensors = {name: as_numpy(t) for name, t in outputs.items() if t is not None}
        return _frame({**reply, "ok": True}, tensors)  # encoding inside the try: a bad dtype rejects the case
    except Exception as e:
        traceback.print_exc()
        reply.update(ok=False, error=str(e) if isinstance(e, Nvfp4Error) else f"{type(e).__name__}: {e}")
        if isinstance(e, Nvfp4Error) and e.code:
            reply["code"] = e.code
        return _frame(reply)


def _serve(requests, responses, name):
    while (request := read_message(requests)) is not None:
        message, tensors = request
        kind = message["type"]
        if kind == "bye":
            return
        if kind == "hello":
            hello = {"type": "hello", "protocol": PROTOCOL, "worker": name,
                     "implements": [entry for _, entry in _handlers.values()]}
            responses.writelines(_frame(hello))
        elif kind == "run":
            responses.writelines(_result(message, tensors))
        else:
            raise ProtocolError(f"unexpected message type {kind!r}")
        responses.flush()


def serve(name=None):
    """Answers the harness on stdin/stdout until `bye` or end of input, then returns (exit status 0).
    Everything else written to stdout, by print or by C code, goes to stderr instead. A malformed
    request exits with status 2."""
    requests = sys.stdin.buffer
    responses = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # file descriptor 1 is stderr from now on: nothing can write between frames
    with responses, contextlib.redirect_stdout(sys.stderr):
        try:
            _serve(requests, responses, name or os.path.basename(sys.argv[0]))
        except ProtocolError as e:
            print(f"{name or sys.argv[0]}: worker protocol error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
