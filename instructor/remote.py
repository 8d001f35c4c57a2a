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

import ast
import base64
import builtins
import importlib
import io
import marshal
import os
import pickle
import types
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from instructor import grader_kernel_side

MAX_RESPONSE_BYTES = 512 << 20
RULES_FILE = Path(__file__).resolve().parent / "hidden_tests" / "rules.py"
SKIPPED_GLOBALS = ("OBJECTS", "EXCHANGE")  # the helper's state: changes as it works

# Describes a value of the helper's module by what it is (a function by its byte code, a builtin by its name
# and module), the same way in the grader and in the kernel; uses no name a notebook cell could redefine
# except the two it receives. Runs in both processes: the kernel's description must equal the grader's.
DESCRIBE = """
def _grader_describe(value, modules):
    T = (0).__class__.__class__
    F, B, C = T(_grader_describe), T([].append), T(_grader_describe.__code__)

    def code(c):
        return (c.co_code, c.co_names, c.co_varnames, c.co_freevars,
                tuple(code(k) if T(k) is C else (T(k).__name__, k) for k in c.co_consts))

    kind = T(value)
    if kind is F:
        return ("function", code(value.__code__), value.__defaults__)
    if kind is B:
        owner = value.__self__
        return ("builtin", value.__name__, owner.__name__ if T(owner) is T(modules) else T(owner).__name__)
    if kind is T(modules):
        return ("module", value.__name__, value is modules.modules.get(value.__name__))
    if kind is T:
        return ("class", value.__name__, tuple((k, _grader_describe(v, modules)) for k, v in value.__dict__.items()
                                              if T(v) in (F, B)))
    if kind in (T(""), T(0), T(0.0), T(()), T(None), T(True)):
        return ("value", value)
    return ("other", kind.__name__)
"""

# Run in the kernel (in the notebook's own namespace) before every graded call; raises when the notebook
# changed what the rules rely on. The expected values are the grader's, written into the code as literals.
# Threads: one started after the kernel's start that is running code of the notebook's cells (a thread could
# change things after this check); library threads (a timer, a progress bar's monitor) are left alone.
INTEGRITY_CHECK = DESCRIBE + """
def _grader_check(expected, boot_threads):
    import sys
    T = (0).__class__.__class__
    B = T([].append)
    problems = []
    side = sys.modules.get("grader_kernel_side")
    if T(side) is not T(sys):
        problems.append("the grader's helper module was replaced")
    else:
        names = side.__dict__
        for name, want in expected.items():
            if name not in names or _grader_describe(names[name], sys) != want:
                problems.append(f"the grader's helper {name} was changed")
    for name in ("setprofile", "getprofile", "settrace", "gettrace", "_current_frames", "_getframe"):
        hook = sys.__dict__.get(name)
        if T(hook) is not B or hook.__self__ is not sys or hook.__name__ != name:
            problems.append(f"sys.{name} was replaced")
    if not problems and (sys.getprofile() is not None or sys.gettrace() is not None):
        problems.append("a profile or trace function of the notebook is running")
    torch = sys.modules.get("torch")
    mode = torch.overrides.__dict__.get("TorchFunctionMode") if torch is not None else None
    if mode is not None:
        for name in ("__enter__", "__exit__", "__init__", "push", "__torch_function__"):
            method = mode.__dict__.get(name)
            method = method if method is None or T(method) is T(_grader_check) else method.__func__
            if method is not None and not method.__code__.co_filename.endswith("overrides.py"):
                problems.append(f"torch's function mode ({name}) was replaced")
    if not problems:
        here = sys._getframe(0)
        for ident, frame in sys._current_frames().items():
            while frame is not None and frame is not here and ident not in boot_threads:
                name = frame.f_code.co_filename
                if "ipykernel_" in name or (name.startswith("<") and not name.startswith("<frozen")):
                    problems.append(f"a thread running the notebook's {frame.f_code.co_name} is still running")
                    break
                frame = frame.f_back
    if problems:
        raise RuntimeError("GRADER-INTEGRITY: " + "; ".join(problems))
"""
SAFE_MODULES = ("torch", "builtins", "collections", "numpy")  # whose classes a Remote may claim as its own


@lru_cache(maxsize=1)
def _rules_source() -> str:
    return RULES_FILE.read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def expected_helper() -> dict:
    """{name: description} of every global of the kernel-side helper, as the grader's own copy has it."""
    import sys

    namespace: dict = {}
    exec(compile(DESCRIBE, "<grader>", "exec"), namespace)
    describe = namespace["_grader_describe"]
    return {name: describe(value, sys) for name, value in vars(grader_kernel_side).items()
            if not name.startswith("__") and name not in SKIPPED_GLOBALS}


def ruled_request_code(boot_threads: tuple[int, ...]) -> str:
    """The code that carries out a graded call in the kernel: the integrity check, then the call with the rules."""
    return (f"{INTEGRITY_CHECK}\n_grader_check({expected_helper()!r}, {tuple(boot_threads)!r})\n"
            "del _grader_check, _grader_describe\n"
            f"import sys as _s; _s.modules['grader_kernel_side'].serve({_rules_source()!r})")


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
    return module.startswith("instructor.hidden_tests") or "<" in fn.__qualname__


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

    def __init__(self, execute, exchange: Path, timeout: float, boot_threads: tuple[int, ...] = ()):
        self.execute, self.exchange, self.timeout = execute, exchange, timeout
        self.boot_threads = boot_threads  # the kernel's threads before the notebook ran (see INTEGRITY_CHECK)
        self.last_rng = None  # the kernel's random state after the last request

    def run(self, code: str):
        """Execute ``code`` in the kernel (silently) and return the decoded response it wrote."""
        return decode(self.run_raw(code), self)

    def run_raw(self, code: str, ruled: bool = False):
        """Execute ``code`` in the kernel (silently) and return the tagged data it answered (not decoded).

        Args:
            code: what to run.
            ruled: a graded call (see :func:`ruled_request_code`): when it answers nothing because its
                integrity check failed, the exercise's rules were broken (:class:`RuleBroken`).
        """
        response = self.exchange / "response.json"
        response.unlink(missing_ok=True)
        done = self.execute(code, timeout=self.timeout, silent=True)
        if done.status == "dead":
            raise KernelGone(done.error or "the kernel died")
        if done.status == "timeout":
            raise StudentTimeout(f"your code took longer than {self.timeout:g} s")
        if not response.exists():
            if ruled and done.status == "error":
                why = str(done.error).partition("GRADER-INTEGRITY: ")[2] or f"the grader's check failed: {done.error}"
                raise RuleBroken(f"your notebook changed what the grader relies on to check the exercise's rules "
                                 f"({why[:300]}), so they cannot be checked")
            raise KernelGone("the grader's helper in the kernel gave no answer (was it replaced?)")
        if response.stat().st_size > MAX_RESPONSE_BYTES:
            raise RuntimeError("your answer is too large to be checked")
        try:
            data = ast.literal_eval(response.read_text(encoding="utf-8"))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
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
        if op == "call_ruled":
            raw = self.run_raw(ruled_request_code(self.boot_threads), ruled=True)
        else:
            raw = self.run_raw("import sys as _s; _s.modules['grader_kernel_side'].serve()")
        result = decode(raw, self)
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
