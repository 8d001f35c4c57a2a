"""The grader's helper inside a student's kernel: hands the student's answers to the grader, nothing else.

``scripts/grade.py`` copies this file into a read-only folder of the sandbox (``instructor/sandbox.py``)
and imports it in the student's kernel before the first cell. It holds no hidden test and no reference
answer: the hidden tests run in the grader's own process (``instructor/remote.py``), which asks this
module to call the student's function on an input, read an attribute, and so on. The results go back
as tagged JSON (numbers, strings, tensors as raw bytes, containers of those; anything else as a numbered
handle), which the grader decodes without ever unpickling anything the student's code made. A student's
cell that replaces this module can only spoil its own answers: the verdicts are computed elsewhere.

Requests come from the grader as pickles (the grader trusts itself, the kernel trusts the grader).

The exercises' rules (``instructor/hidden_tests/rules.py``) are not a module of this kernel: the grader
sends their source with every graded call, and :func:`fresh_rules` compiles it into a new module object
that no cell can import or has seen, so no flag or function a notebook changed can switch them off. Before
such a call the grader checks, with code of its own, that this helper's functions and the hooks the rules
rely on are the ones it sent (``instructor/remote.py``, ``INTEGRITY_CHECK``). Answers are written with
``repr`` (builtin, unpatchable) and read with ``ast.literal_eval``; the functions used to write them are
bound here at import time, before any cell of the notebook runs.
"""

from __future__ import annotations

import base64
import builtins
import marshal
import os
import pickle
import sys
import types

_open, _replace, _join, _repr = builtins.open, os.replace, os.path.join, builtins.repr
OBJECTS: dict[int, object] = {}
EXCHANGE = os.environ.get("COURSE_GRADER_EXCHANGE", "")
MAX_DEPTH, MAX_ITEMS = 20, 100_000


def _tensor(value) -> dict:
    """A plain tensor of any dtype as raw bytes (its dtype, shape and the bytes of its elements)."""
    torch = sys.modules["torch"]
    t = value.detach()
    if t.layout != torch.strided:  # sparse: its dense values
        t = t.to_dense()
    t = t.cpu().contiguous()
    data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return {"t": "tensor", "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "data": base64.b64encode(data).decode("ascii")}


def _ndarray(value) -> dict:
    """A NumPy array of numbers or booleans as raw bytes (its dtype string, shape and bytes)."""
    array = value if value.flags.c_contiguous else value.copy(order="C")
    return {"t": "ndarray", "dtype": array.dtype.str, "shape": list(array.shape),
            "data": base64.b64encode(array.tobytes()).decode("ascii")}


def _type_name(value) -> str:
    """``module.qualname`` of ``value``'s class, or a name no grader class has when the class poses as another.

    A student's class can set ``__module__`` and ``__qualname__`` to read "torch.Tensor"; the grader would
    then treat the handle as a tensor. Only a class that really is what its name says keeps its name.
    """
    kind = type(value)
    module, qualname = str(getattr(kind, "__module__", "")), str(getattr(kind, "__qualname__", ""))
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None) if found is not None else None
    if found is not kind:
        return f"<a class of the notebook named {module}.{qualname}>"
    return f"{module}.{qualname}"


def _handle(value) -> dict:
    handle = len(OBJECTS) + 1
    OBJECTS[handle] = value
    return {"t": "handle", "id": handle, "type": _type_name(value)}


def _plain(value):
    """``value`` as JSON when it is None, a bool, an int, a float, a str or a complex number (subclasses
    included: NumPy's float64 is a float); else ``NotImplemented``."""
    if value is None or type(value) is bool:
        return value
    if isinstance(value, int):
        number = int.__int__(value)
        return number if abs(number) < 2**53 else {"t": "int", "v": str(number)}
    if isinstance(value, float):
        return {"t": "float", "v": float.__repr__(float.__float__(value))}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, complex):
        number = complex.__complex__(value)
        return {"t": "complex", "v": [float.__repr__(number.real), float.__repr__(number.imag)]}
    if isinstance(value, (bytes, bytearray)) and len(value) <= 50_000_000:
        return {"t": "bytes", "v": base64.b64encode(bytes(value)).decode("ascii")}
    return NotImplemented


def encode(value, depth: int = 0, by_reference_tensors: bool = False, parameters_by_reference: bool = False):
    """``value`` as tagged JSON data: plain values by value, anything else as a handle.

    Never raises: a value whose encoding fails becomes ``{"t": "unreadable", ...}``, which the grader reports
    as that exercise's answer not being readable.

    Args:
        value: what to send to the grader.
        depth: nesting depth so far (containers deeper than ``MAX_DEPTH`` become handles).
        by_reference_tensors: send ``value`` itself as a handle if it is a tensor (an attribute the grader
            may change in place, such as ``module.weight``).
        parameters_by_reference: send every ``nn.Parameter`` inside ``value`` as a handle (iterating
            ``module.parameters()``), so that the grader reaches a module's weights the same way whether it
            fetches them by name or by iteration: in place changes land on the student's module.
    """
    try:
        return _encode(value, depth, by_reference_tensors, parameters_by_reference)
    except Exception as exc:  # the student's object misbehaves (a property or __len__ that raises, ...)
        return {"t": "unreadable", "type": str(getattr(type(value), "__name__", "?"))[:80],
                "why": f"{type(exc).__name__}: {exc}"[:300]}


def _encode(value, depth: int, by_reference_tensors: bool, parameters_by_reference: bool):
    torch = sys.modules.get("torch")
    numpy = sys.modules.get("numpy")
    if parameters_by_reference and torch is not None and type(value) is torch.nn.Parameter:
        by_reference_tensors = True
    plain = _plain(value)
    if plain is not NotImplemented:
        return plain
    if depth >= MAX_DEPTH:
        return _handle(value)
    inner = dict(depth=depth + 1, by_reference_tensors=False, parameters_by_reference=parameters_by_reference)
    if torch is not None:
        if type(value) in (torch.Tensor, torch.nn.Parameter) and not by_reference_tensors:
            if value.numel() <= 50_000_000:
                try:
                    return _tensor(value)
                except Exception:  # quantized, on a device it cannot leave, ...: by reference
                    return _handle(value)
        if isinstance(value, torch.Size):
            return {"t": "size", "v": [int(v) for v in value]}
        if isinstance(value, torch.dtype):
            return {"t": "dtype", "v": str(value).removeprefix("torch.")}
    if numpy is not None:
        if type(value) is numpy.ndarray and value.dtype.kind in "biufc" and value.size <= 50_000_000:
            return _ndarray(value)
        if isinstance(value, numpy.generic):  # a NumPy scalar: int64, float32, bool_, ...
            return encode(value.item(), depth + 1)
    if isinstance(value, (tuple, list, set, frozenset)) and len(value) <= MAX_ITEMS:
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
        kind = "tuple" if isinstance(value, tuple) else "list" if isinstance(value, list) else "set"
        return {"t": kind, "v": [encode(v, **inner) for v in items]}
    if isinstance(value, dict) and len(value) <= MAX_ITEMS and all(_plain(k) is not NotImplemented or
                                                                   type(k) is tuple for k in value):
        return {"t": "dict", "v": [[encode(k, depth + 1), encode(v, **inner)] for k, v in value.items()]}
    return _handle(value)


def _rebuild_function(code: bytes, globals_: dict, name: str, defaults, closure):
    """A function of the grader's (a lambda passed as a test input), rebuilt from its byte code."""
    namespace = {"__builtins__": builtins}
    for key, (kind, value) in globals_.items():
        namespace[key] = __import__(value, fromlist=["_"]) if kind == "module" else value
    cells = tuple(types.CellType(v) for v in closure) if closure else None
    return types.FunctionType(marshal.loads(code), namespace, name, defaults, cells)


def fresh_rules(source: str) -> types.ModuleType:
    """The exercises' rules, compiled from ``source`` into a new module object (see the module docstring).

    Args:
        source: the text of ``hidden_tests/rules.py``, sent by the grader with the graded call.
    """
    name = f"_course_rules_{len(OBJECTS)}"
    module = types.ModuleType(name)
    module.__file__ = _join(os.path.dirname(os.path.abspath(__file__)), "course_rules.py")  # library code
    sys.modules[name] = module  # dataclasses look the module up while its classes are made
    try:
        exec(compile(source, module.__file__, "exec"), module.__dict__)
    finally:
        sys.modules.pop(name, None)
    return module


class _Unpickler(pickle.Unpickler):
    """Requests: handles by number, the rules' classes from the fresh rules module, the rest as usual."""

    def __init__(self, handle, rules: types.ModuleType | None = None):
        super().__init__(handle)
        self.rules = rules

    def persistent_load(self, pid):
        return OBJECTS[int(pid)]

    def find_class(self, module, name):
        if module == "instructor.hidden_tests.rules":  # the exercises' rules (no hidden test in them)
            if self.rules is None:
                raise pickle.UnpicklingError("the rules come with a graded call only")
            return getattr(self.rules, name)
        if module == "instructor.grader_kernel_side":  # this module, as the grader's process names it
            return globals()[name]
        return super().find_class(module, name)


def _respond(payload) -> None:
    path = _join(EXCHANGE, "response.json")
    with _open(path + ".part", "w", encoding="utf-8") as handle:
        handle.write(_repr(payload))
    _replace(path + ".part", path)


def _error(exc: BaseException, rules: types.ModuleType | None = None) -> dict:
    rule = rules is not None and type(exc) is rules.RuleViolation
    return {"error": {"type": type(exc).__name__, "message": str(exc)[:2000],
                      "builtin": type(exc).__module__ == "builtins", "rule": rule}}


def answer(grade_id: str, thunk) -> None:
    """Evaluate the arguments of an exercise's check call (``thunk``) and hand them to the grader."""
    try:
        args, kwargs = thunk()
        _respond({"ok": {"args": [encode(a) for a in args], "kwargs": {k: encode(v) for k, v in kwargs.items()}}})
    except BaseException as exc:
        _respond(_error(exc))


def serve(rules_source: str | None = None) -> None:
    """Carry out the grader's pending request (``request.pkl``) and write ``response.json``.

    Args:
        rules_source: the exercises' rules (for a graded call, "call_ruled"), compiled afresh for it.
    """
    rules = None
    try:
        rules = fresh_rules(rules_source) if rules_source is not None else None
        with _open(_join(EXCHANGE, "request.pkl"), "rb") as handle:
            op, target, payload, grad, rng = _Unpickler(handle, rules).load()
        obj = OBJECTS[target]
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_grad_enabled(grad)
            if rng is not None:  # the grader's random state: a seeded hidden case draws the same numbers here
                torch.set_rng_state(rng)
        by_reference = parameters = False
        if op == "call":
            result = obj(*payload[0], **payload[1])
        elif op == "call_ruled":  # the exercise's rules (hidden_tests/rules.py) watch the student's code run here
            exercise, exercise_rules, args, kwargs = payload
            if rules is None:
                raise ValueError("a graded call needs the rules")
            rules.check_answer(exercise, obj, exercise_rules)
            with rules.traced(exercise, exercise_rules):  # what encoding the result runs is watched too
                encoded = encode(obj(*args, **kwargs))
            _respond(_with_rng({"ok": encoded}))
            return
        elif op == "getattr":
            result = getattr(obj, payload)
            by_reference = True  # a module's weight is changed in place by the tests
        elif op == "list":
            result = list(obj)
            parameters = True  # module.parameters(), named_parameters(): the kernel's own, as by getattr
        elif op == "next":
            result = next(obj)
            parameters = True
        elif op == "len":
            result = len(obj)
        elif op == "getitem":
            result = obj[payload]
            parameters = True  # a ParameterList's item: the kernel's own (state_dict() values are plain tensors: data)
        else:
            raise ValueError(f"unknown request {op!r}")
        _respond(_with_rng({"ok": encode(result, by_reference_tensors=by_reference,
                                         parameters_by_reference=parameters)}))
    except BaseException as exc:
        _respond(_error(exc, rules))
    finally:
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_grad_enabled(True)


def _with_rng(answer: dict) -> dict:
    """``answer`` with the kernel's random state, so that the grader continues from it."""
    torch = sys.modules.get("torch")
    if torch is not None:
        answer["rng"] = encode(torch.get_rng_state())
    return answer
