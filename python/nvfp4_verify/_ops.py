"""One Python function per registry operation, built from `nvfp4-verify ops --json` (the
registry); nothing here names an operation. Each runs the C++ reference backend."""
import functools
import inspect
import json
from collections.abc import Mapping

from ._convert import from_core, to_core
from ._params import encode_params


def core():
    """The native extension, with a hint when it is missing."""
    try:
        from . import _core
    except ImportError as e:
        raise ImportError("nvfp4_verify's native extension (nvfp4_verify._core) is not importable: install the "
                          "package with `pip install .` from the nvfp4-verify repository (workers need only "
                          "the pure-Python part)") from e
    return _core


@functools.lru_cache(maxsize=None)
def _registry():
    return json.loads(core().registry_json())


def ops():
    """The operation registry (docs/spec/registry.md): registry_format, tool_version, error_codes, operations."""
    return json.loads(core().registry_json())


def profiles():
    """The numerics profiles: [{"name", "reproduces", "unverified", "knobs": {knob: value}}]."""
    return json.loads(core().profiles_json())


def operation(name):
    """The registry entry of operation `name`; ValueError naming the known ones when unknown."""
    for op in _registry()["operations"]:
        if op["name"] == name:
            return op
    known = ", ".join(op["name"] for op in _registry()["operations"])
    raise ValueError(f"unknown operation {name!r} (known: {known})")


def core_params(op, params):
    """JSON of params for the extension (f32_bits given as floats or bit strings encoded)."""
    return json.dumps(encode_params({p["name"]: p["type"] for p in operation(op)["params"]}, params))


def run(op, inputs, params):
    """Runs the reference on {input name: array}; returns {output name: numpy array}."""
    tensors = [to_core(name, a) for name, a in inputs.items()]
    return from_core(core().run(op, core_params(op, params), tensors))


def _inputs_by_name(spec, args):
    names = [t["name"] for t in spec["inputs"]]
    if len(args) == 1 and isinstance(args[0], Mapping):
        return dict(args[0])
    if names == ["*"]:
        raise TypeError(f"{spec['name']}() takes one dict of named tensors")
    if len(args) > len(names):
        raise TypeError(f"{spec['name']}() takes its inputs {', '.join(names)}: {len(args)} given")
    return dict(zip(names, args))


def _signature(spec):
    names = [t["name"] for t in spec["inputs"]]
    inputs = [inspect.Parameter("tensors" if n == "*" else n, inspect.Parameter.POSITIONAL_ONLY) for n in names]
    params = [inspect.Parameter(p["name"], inspect.Parameter.KEYWORD_ONLY, default=p["default"])
              for p in spec["params"]]
    return inspect.Signature(inputs + params)


def _doc(spec):
    lines = [f"{spec['summary']} (docs/NUMERICS.md {spec['specification']}).", "",
             "Inputs (positional in this order, or one dict by name):"]
    lines += [f"    {t['name']}: {', '.join(t['dtypes'])} {t['shape']}" for t in spec["inputs"]]
    lines += ["Parameters (keyword; validated by the registry):"]
    for p in spec["params"]:
        allowed = f" one of {', '.join(p['allowed'])};" if "allowed" in p else ""
        lines.append(f"    {p['name']} ({p['type']};{allowed} default {p['default']!r}): {p['doc']}")
    lines += ["Returns a dict of numpy arrays:"]
    for t in spec["outputs"]:
        when = f" (when {t['when']})" if t.get("optional") else ""
        lines.append(f"    {t['name']}: {', '.join(t['dtypes'])} {t['shape']}{when}")
    return "\n".join(lines)


def _function(spec):
    name = spec["name"]

    def op(*inputs, **params):
        return run(name, _inputs_by_name(spec, inputs), params)

    op.__name__ = op.__qualname__ = name
    op.__module__ = "nvfp4_verify"
    op.__doc__ = _doc(spec)
    op.__signature__ = _signature(spec)
    return op


def operation_functions():
    """{operation name: function} for every registry operation."""
    return {spec["name"]: _function(spec) for spec in _registry()["operations"]}
