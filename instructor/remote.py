"""The grader's side of a student's kernel: the student's answers as proxies that the hidden tests can call.

The hidden tests (``instructor/hidden_tests/``) run in the grader's process, never in the student's
kernel. What they receive as "the student's function" is a :class:`Remote`: calling it sends the inputs
to the kernel (``instructor/grader_kernel_side.py``), runs the student's code there, and brings the
result back as data (numbers, strings, tensors, containers of those) decoded by :func:`decode`, which
builds nothing but those types. Anything else stays in the kernel and comes back as another Remote, so
a test can read ``module.embedding.weight`` or call ``module(x)`` as it would on a local object.

Errors the student's code raises come back as the same built-in exception type (``NotImplementedError``
stays "not attempted"; an ``AssertionError`` from the student becomes a ``RuntimeError``, so that it is
never mistaken for a hidden test's verdict); anything the kernel does not answer in time raises
:class:`StudentTimeout`.
"""

from __future__ import annotations

import base64
import builtins
import importlib
import io
import json
import marshal
import os
import pickle
import types
from pathlib import Path

import grader_kernel_side
import numpy as np
import torch

MAX_RESPONSE_BYTES = 512 << 20
SAFE_MODULES = ("torch", "builtins", "collections", "numpy")  # whose classes a Remote may claim as its own


class StudentTimeout(RuntimeError):
    """The student's code did not finish within the time limit."""


class RuleBroken(RuntimeError):
    """The exercise's rules (checked in the kernel, where the student's code runs) were broken."""


class KernelGone(RuntimeError):
    """The student's kernel died (it crashed, ran out of memory or CPU time, or called exit)."""


class Remote:
    """An object that lives in the student's kernel (a function, a class, a module instance)."""

    __slots__ = ("_conn", "_id", "_type")

    def __init__(self, conn: Connection, handle: int, type_name: str):
        object.__setattr__(self, "_conn", conn)
        object.__setattr__(self, "_id", handle)
        object.__setattr__(self, "_type", type_name)

    def _ask(self, op: str, payload=None):
        return object.__getattribute__(self, "_conn").request(op, object.__getattribute__(self, "_id"), payload)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._ask("getattr", name)

    def __call__(self, *args, **kwargs):
        return self._ask("call", (args, kwargs))

    def __iter__(self):
        return iter(self._ask("list"))

    def __next__(self):
        return self._ask("next")

    def __len__(self) -> int:
        return self._ask("len")

    def __getitem__(self, key):
        return self._ask("getitem", key)

    def __repr__(self) -> str:
        return f"<the student's {object.__getattribute__(self, '_type')}>"

    @property
    def __class__(self):  # isinstance(remote, nn.Embedding) works for the library's own classes
        local = _local_class(object.__getattribute__(self, "_type"))
        return local or Remote


def _local_class(type_name: str):
    module, _, qualname = type_name.rpartition(".")
    if module.split(".")[0] not in SAFE_MODULES or "<" in qualname:
        return None
    try:
        found = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found if isinstance(found, type) else None


def _rebuildable(fn) -> bool:
    module = fn.__module__ or ""
    return module.startswith("hidden_tests") or "<" in fn.__qualname__


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


class _Pickler(pickle.Pickler):
    """Pickles a request: Remotes by handle, the tests' own lambdas and helpers by byte code."""

    def persistent_id(self, obj):
        if type(obj) is Remote:
            return str(object.__getattribute__(obj, "_id"))
        return None

    def reducer_override(self, obj):
        if isinstance(obj, types.FunctionType) and _rebuildable(obj):
            spec = {}
            for name in sorted(_global_names(obj.__code__)):
                if name in obj.__globals__:
                    value = obj.__globals__[name]
                    spec[name] = ("module", value.__name__) if isinstance(value, types.ModuleType) else ("value", value)
            closure = tuple(cell.cell_contents for cell in obj.__closure__ or ())
            return (grader_kernel_side._rebuild_function,
                    (marshal.dumps(obj.__code__), spec, obj.__name__, obj.__defaults__, closure))
        return NotImplemented


class AnswerUnreadable(ValueError):
    """A value of the student's could not be sent to the grader (the message says which and why)."""


def _raw_tensor(data) -> torch.Tensor:
    dtype = getattr(torch, str(data["dtype"]), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a dtype: {data['dtype']!r}")
    shape = [int(n) for n in data["shape"]]
    raw = base64.b64decode(data["data"])
    if not raw:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)


def _raw_array(data) -> np.ndarray:
    dtype = np.dtype(str(data["dtype"]))
    if dtype.kind not in "biufc":
        raise ValueError(f"not an array of numbers: {dtype}")
    raw = base64.b64decode(data["data"])
    return np.frombuffer(raw, dtype=dtype).copy().reshape([int(n) for n in data["shape"]])


def decode(data, conn: Connection):
    """Rebuild a value from the kernel's tagged JSON; only plain data, tensors, arrays and Remotes come out.

    Raises:
        AnswerUnreadable: the kernel could not encode one of the values (its type and the cause).
        ValueError: the data is not what ``grader_kernel_side.encode`` writes.
    """
    if data is None or isinstance(data, (bool, int, str)):
        return data
    if isinstance(data, list):
        raise ValueError("untagged list in a kernel response")
    if not isinstance(data, dict):
        raise ValueError(f"unexpected {type(data).__name__} in a kernel response")
    tag = data.get("t")
    if tag == "float":
        return float(data["v"])
    if tag == "int":
        return int(data["v"])
    if tag == "complex":
        return complex(float(data["v"][0]), float(data["v"][1]))
    if tag == "bytes":
        return base64.b64decode(data["v"])
    if tag in ("tuple", "list", "set"):
        items = [decode(v, conn) for v in data["v"]]
        return {"tuple": tuple, "list": list, "set": set}[tag](items)
    if tag == "dict":
        return {decode(k, conn): decode(v, conn) for k, v in data["v"]}
    if tag == "size":
        return torch.Size(int(v) for v in data["v"])
    if tag == "dtype":
        dtype = getattr(torch, str(data["v"]), None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"not a dtype: {data['v']!r}")
        return dtype
    if tag == "tensor":
        return _raw_tensor(data)
    if tag == "ndarray":
        return _raw_array(data)
    if tag == "handle":
        return Remote(conn, int(data["id"]), str(data["type"]))
    if tag == "unreadable":
        raise AnswerUnreadable(f"a value of type {str(data.get('type'))[:100]} could not be sent to the grader "
                               f"({str(data.get('why'))[:300]})")
    raise ValueError(f"unknown tag {tag!r} in a kernel response")


class Connection:
    """Requests to one student's kernel, through an exchange folder shared with it.

    Args:
        execute: runs code in the kernel: ``execute(code, timeout=..., silent=True)`` returning an object
            with ``status`` "ok", "error", "timeout" or "dead" (``instructor/kernel.py``).
        exchange: the folder shared with the kernel (request and response files).
        timeout: seconds one request may take before the kernel is interrupted.
    """

    def __init__(self, execute, exchange: Path, timeout: float):
        self.execute, self.exchange, self.timeout = execute, exchange, timeout
        self.last_rng = None  # the kernel's random state after the last request

    def run(self, code: str):
        """Execute ``code`` in the kernel (silently) and return the decoded response it wrote."""
        return decode(self.run_raw(code), self)

    def run_raw(self, code: str):
        """Execute ``code`` in the kernel (silently) and return the tagged JSON it answered (not decoded)."""
        response = self.exchange / "response.json"
        response.unlink(missing_ok=True)
        done = self.execute(code, timeout=self.timeout, silent=True)
        if done.status == "dead":
            raise KernelGone(done.error or "the kernel died")
        if done.status == "timeout":
            raise StudentTimeout(f"your code took longer than {self.timeout:g} s")
        if not response.exists():
            raise KernelGone("the grader's helper in the kernel gave no answer (was it replaced?)")
        if response.stat().st_size > MAX_RESPONSE_BYTES:
            raise RuntimeError("your answer is too large to be checked")
        try:
            data = json.loads(response.read_text(encoding="utf-8"))
        except (ValueError, RecursionError):
            raise RuntimeError("your answer could not be read back from the notebook") from None
        if not isinstance(data, dict):
            raise RuntimeError("your answer could not be read back from the notebook")
        if "error" in data:
            raise _exception(data["error"])
        self.last_rng = data.get("rng")
        return data["ok"]

    def request(self, op: str, target: int, payload=None):
        buffer = io.BytesIO()
        # The grader's random state goes with every request and comes back with the answer, so a hidden case
        # that seeds the generator (dropout in training mode) draws the same numbers as in one process.
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(
            (op, target, payload, torch.is_grad_enabled(), torch.get_rng_state()))
        part = self.exchange / "request.pkl.part"
        part.write_bytes(buffer.getvalue())
        os.replace(part, self.exchange / "request.pkl")
        self.last_rng = None
        result = decode(self.run_raw("import sys as _s; _s.modules['grader_kernel_side'].serve()"), self)
        if self.last_rng is not None:
            state, own = decode(self.last_rng, self), torch.get_rng_state()
            if isinstance(state, torch.Tensor) and state.dtype == own.dtype and state.shape == own.shape:
                torch.set_rng_state(state)  # anything else (a kernel that was tampered with) is ignored
        return result


def _exception(error: dict) -> BaseException:
    name, message = str(error.get("type")), str(error.get("message"))
    if error.get("rule"):
        return RuleBroken(message)
    kind = getattr(builtins, name, None) if error.get("builtin") else None
    if not (isinstance(kind, type) and issubclass(kind, Exception)) or issubclass(kind, AssertionError):
        kind = RuntimeError
    if name in ("KeyboardInterrupt", "SystemExit"):
        return StudentTimeout("your code was interrupted")
    try:
        return kind(message)
    except Exception:
        return RuntimeError(message)
