"""Runs a worker adapter (a module such as nvfp4_verify.adapters.torchao, or a worker script's path)
with its peer replaced by stubs, so that CI can check the adapter against today's registry without
torch or the peer installed:

    python3 stubbed_adapter.py nvfp4_verify.adapters.torchao [the adapter's options]
    python3 stubbed_adapter.py python/examples/quantize_worker.py

Every module outside the standard library and the worker's own dependencies (numpy, ml_dtypes,
safetensors, nvfp4_verify) imports as a stub whose attributes are MagicMocks (a stub module's
__version__ is "stub"), so the adapter's declaration, its command line and its own checks
(check_shape and the like) run as written: the adapter runs as __main__, as `python3 -m MODULE` or
`python3 PATH` would run it, and its call to worker.serve serves its handlers wrapped as follows.
Each case runs the adapter's handler: an exception raised before the handler calls into a stub is
the adapter's own rejection and is answered as such; anything else (the handler returning, or
failing on the stubs' values) means the adapter accepted the case, which is answered with the
reference's outputs. So a campaign fails exactly where the adapter declares a value the registry no
longer has, or rejects a case inside its declaration that the reference runs."""
import importlib.abc
import importlib.machinery
import runpy
import sys
import types
from unittest import mock

OWN = {"numpy", "ml_dtypes", "safetensors", "nvfp4_verify"}
_calls = [0]  # calls into stubs so far


class _Stub(mock.MagicMock):
    """A MagicMock that counts calls (its children are _Stubs too)."""

    def _mock_call(self, *args, **kwargs):
        _calls[0] += 1
        return super()._mock_call(*args, **kwargs)


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name == "__version__":  # for the adapter's worker name
            return "stub"
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Stub(name=f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stubs every module whose top-level package is neither standard nor the worker's own."""

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in sys.stdlib_module_names or top in OWN:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def main(adapter, *options):
    sys.meta_path.insert(0, _StubFinder())
    from nvfp4_verify import _ops, worker

    def stubbed(op, handler):
        def run(inputs, params):
            before = _calls[0]
            try:
                handler(inputs, params)
            except Exception:
                if _calls[0] == before:  # raised before touching the peer: the adapter's own rejection
                    raise
            return _ops.run(op, inputs, params)
        return run

    serve = worker.serve

    def serve_stubbed(name=None):  # the adapter's handlers are all registered by now
        for op, (handler, entry) in list(worker._handlers.items()):
            worker._handlers[op] = (stubbed(op, handler), entry)
        serve(f"{adapter} (peer stubbed)")

    worker.serve = serve_stubbed
    sys.argv = [adapter, *options]  # runpy puts the adapter's file in sys.argv[0]
    if adapter.endswith(".py"):
        runpy.run_path(adapter, run_name="__main__")
    else:
        OWN.add(adapter.partition(".")[0])  # the adapter's own package is never a stub
        runpy.run_module(adapter, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
