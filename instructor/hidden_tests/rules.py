"""The exercises' rules, enforced by the hidden tests: the student's own code, and "without X".

A graded coding exercise earns nothing when the submitted answer is not the student's own code:

* **is** course_lib's: the function or class (or a class it derives from, a ``functools.partial``, a bound
  method) is defined in the ``course_lib`` package;
* **names** course_lib: its code (or code it defines inside itself) imports ``course_lib`` in any form
  (``import course_lib.x as y``, ``from course_lib… import …``, ``__import__``, ``importlib``, a string
  naming ``course_lib``), or uses a global, default argument or closure variable that is a course_lib
  module, function or class (an alias made in another cell);
* **imports** course_lib in the exercise cell (the cell that defines the answer);
* **calls** course_lib: while the answer runs, ``sys.setprofile`` records every Python call; a call that
  enters course_lib's files from outside them must be one the exercise allows (the methods of the objects
  the exercise hands over, e.g. ``model.decode`` in 09.3), whatever name the student reached it by.

"Without X" rules (:class:`Forbidden`) are checked at run time, by name, on every function the answer
calls: torch functions and tensor methods through a ``TorchFunctionMode`` (which sees ``x.softmax``,
``torch.softmax``, ``F.softmax``, ``nn.Softmax``, ``torch.ops.aten._softmax`` alike), other libraries'
Python and C functions through the profiler. Calls made by course_lib code the exercise allows (e.g. the
softmax inside a handed-over attention module) do not count. "No Python loops" is read off the bytecode
of every piece of the student's code that ran (``for``, ``while`` and comprehensions all jump backwards).

Everything here runs in the process that calls the student's code (the grading kernel). Library and
course_lib code is told apart from the student's by file: the student's code lives in notebook cells
(``/tmp/ipykernel_…/….py`` in a kernel), everything else in the Python installation or this repository.
"""

from __future__ import annotations

import ast
import dis
import fnmatch
import functools
import inspect
import linecache
import re
import sys
import sysconfig
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

import course_lib

COURSE_LIB_DIR = Path(course_lib.__file__).resolve().parent  # .../course_lib
HIDDEN_TESTS_DIR = Path(__file__).resolve().parent
_LIBRARY_DIRS = tuple(sorted({str(Path(p).resolve()) for p in (
    sys.prefix, sys.base_prefix, sys.exec_prefix, *(sysconfig.get_paths().get(k) for k in ("stdlib", "purelib", "platlib")),
    Path(torch.__file__).parent.parent) if p}))
_OWN_RULES = ("this exercise is graded on your own code: course_lib may be used only through the objects the "
              "exercise hands to your function")
_enforced = True
THREAD_STARTERS = ("start_new_thread", "start_joinable_thread", "start_new")  # _thread's, by Python version


@dataclass(frozen=True)
class Forbidden:
    """A "without X" rule: calls whose function name matches ``pattern`` break it.

    Attributes:
        pattern: a regular expression matched (case-insensitive, ``re.search``) against the called function's
            name and qualified name, e.g. ``"softmax"`` (also catches ``log_softmax``, ``Softmax.forward``).
        rule: the rule as the student reads it, e.g. ``"without softmax (use exp, sum and amax)"``.
        only_if: optional ``(args, kwargs) -> bool`` on the call's arguments (for ``__getitem__``: only
            indexing by token ids breaks 02.1's rule, not ``ids[..., None]``); None means always.
    """

    pattern: str
    rule: str
    only_if: Callable[[tuple, dict], bool] | None = None

    def matches(self, *names: str) -> bool:
        return any(re.search(self.pattern, name or "", re.IGNORECASE) for name in names)


@dataclass(frozen=True)
class Rules:
    """What a coding exercise's answer may use.

    Attributes:
        allow: course_lib functions the answer may call, as ``fnmatch`` patterns of their qualified names
            (``"Tokenizer.*"``, ``"Transformer.decode"``); a leading ``!`` excludes (checked first).
            Everything else in course_lib is off limits.
        forbid: the exercise's "without X" rules.
        no_loops: the exercise asks for code without Python loops.
        stated: where the rule comes from, for the instructors' table (the exercise text, or "implied").
    """

    allow: tuple[str, ...] = ()
    forbid: tuple[Forbidden, ...] = ()
    no_loops: bool = False
    stated: str = ""

    def allows(self, qualname: str) -> bool:
        if any(fnmatch.fnmatchcase(qualname, p[1:]) for p in self.allow if p.startswith("!")):
            return False
        return any(fnmatch.fnmatchcase(qualname, p) for p in self.allow if not p.startswith("!"))


def looks_up_rows(args: tuple, kwargs: dict) -> bool:
    """For ``__getitem__``: ``tensor[index]`` picks rows by token id (an integer tensor, a list, or an int on a
    float table), as ``weight[ids]`` does; ``ids[..., None]`` does not.

    Args:
        args: the call's arguments, ``(tensor, index)``.
        kwargs: its keyword arguments (unused).
    """
    if len(args) < 2 or not isinstance(args[0], torch.Tensor):
        return False
    table, index = args[0], args[1]
    for item in index if isinstance(index, tuple) else (index,):
        if isinstance(item, torch.Tensor) and not item.dtype.is_floating_point and item.dtype != torch.bool:
            return True
        if isinstance(item, list):
            return True
        if isinstance(item, int) and not isinstance(item, bool) and table.dtype.is_floating_point and table.dim() >= 2:
            return True
    return False


def takes_complex(args: tuple, kwargs: dict) -> bool:
    """A call that takes a complex number, a complex tensor or a complex dtype.

    Args:
        args: the call's arguments.
        kwargs: its keyword arguments.
    """
    for value in (*args, *kwargs.values()):
        if isinstance(value, complex) or (isinstance(value, torch.Tensor) and value.is_complex()) or (
                isinstance(value, torch.dtype) and value.is_complex):
            return True
    return False


class RuleViolation(AssertionError):
    """The answer breaks one of the exercise's rules: 0 points, whatever it computes.

    Attributes:
        exercise: the exercise number, e.g. ``"04.3"``.
        rule: ``"own code"`` (course_lib used), ``"without"`` (a forbidden call) or ``"no loops"``.
        detail: what was found, in words a student can act on.
    """

    def __init__(self, exercise: str, rule: str, detail: str):
        self.exercise, self.rule, self.detail = exercise, rule, detail
        super().__init__(f"Exercise {exercise}: 0 points, {detail}.")

    def __reduce__(self):  # picklable (a grader may carry it from the kernel to another process)
        return type(self), (self.exercise, self.rule, self.detail)


@contextmanager
def rules_enforced(enforced: bool) -> Iterator[None]:
    """Switch rule checking off (``False``) or on inside a ``with`` block (tests use it to show that the rule,
    not a wrong value, is what stops an answer)."""
    global _enforced
    previous, _enforced = _enforced, enforced
    try:
        yield
    finally:
        _enforced = previous


def enforced() -> bool:
    """Whether rules are being checked (True except inside ``rules_enforced(False)``)."""
    return _enforced


# ------------------------------------------------------------------------------------------------
# where code lives
# ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _where(filename: str) -> str:
    """``"course_lib"``, ``"library"`` (Python, site-packages, the hidden tests, generated code) or ``"student"``."""
    if filename.startswith("<ipython-input"):
        return "student"  # cells of older IPython versions
    if not filename or filename.startswith("<"):
        return "library"  # <string> (dataclass and namedtuple methods), <frozen ...>, <built-in>
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return "library"
    if path.is_relative_to(COURSE_LIB_DIR):
        return "course_lib"
    if path.is_relative_to(HIDDEN_TESTS_DIR) or str(path).startswith(_LIBRARY_DIRS):
        return "library"
    return "student"


def _course_lib_name(obj: Any) -> str | None:
    """``course_lib.x.Name`` when ``obj`` is a course_lib module, function, class or method, else None."""
    if isinstance(obj, types.ModuleType):
        name = getattr(obj, "__name__", "")
        return name if name == "course_lib" or name.startswith("course_lib.") else None
    if isinstance(obj, (types.MethodType, functools.partial)):
        return _course_lib_name(getattr(obj, "__func__", None) or getattr(obj, "func", None))
    if not (isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)) or hasattr(obj, "__code__")):
        return None
    module = getattr(obj, "__module__", None) or ""
    code = getattr(obj, "__code__", None)
    if module == "course_lib" or module.startswith("course_lib.") or (
            isinstance(code, types.CodeType) and _where(code.co_filename) == "course_lib"):
        return f"{module}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"
    return None


def _module_of(filename: str) -> str:
    relative = Path(filename).resolve().relative_to(COURSE_LIB_DIR.parent).with_suffix("")
    parts = [p for p in relative.parts if p != "__init__"]
    return ".".join(parts)


# ------------------------------------------------------------------------------------------------
# static checks: what the answer is and what its code names
# ------------------------------------------------------------------------------------------------


def _functions_of(answer: Any) -> Iterator[Any]:
    """The Python functions that make up ``answer`` (a function, class, instance, partial or bound method)."""
    if isinstance(answer, functools.partial):
        yield from _functions_of(answer.func)
        return
    if isinstance(answer, types.MethodType):
        yield answer.__func__
        return
    if isinstance(answer, types.FunctionType):
        yield answer
        return
    cls = answer if isinstance(answer, type) else type(answer)
    for klass in cls.__mro__:
        for value in vars(klass).values():
            for item in (value, getattr(value, "__func__", None), getattr(value, "fget", None)):
                if isinstance(item, types.FunctionType) and _where(item.__code__.co_filename) == "student":
                    yield item


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _global_names(code: types.CodeType) -> set[str]:
    """The global names the code object reads (not attribute names, which ``co_names`` lists too)."""
    return {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}


def _names_course_lib(code: types.CodeType, namespace: dict, extra: dict | None = None) -> str | None:
    """Why the code object ``code`` (run with globals ``namespace``) uses course_lib, or None."""
    for inner in _code_objects(code):
        for name in inner.co_names:
            if name == "course_lib" or name.startswith("course_lib."):
                return f"your code uses or imports {name}"
        for const in inner.co_consts:
            if isinstance(const, str) and "course_lib" in const:
                return f"your code names course_lib ({const!r})"
        for name in _global_names(inner):
            found = _course_lib_name(namespace.get(name, getattr(namespace.get("__builtins__"), name, None)))
            if found:
                return f"your code uses {found} (as {name!r}), which is course_lib's"
    for name, value in (extra or {}).items():
        found = _course_lib_name(value)
        if found:
            return f"your code uses {found} (as {name}), which is course_lib's"
    return None


LOOP_OPCODES = {"FOR_ITER", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE"}


def _has_loop(code: types.CodeType) -> bool:
    """True when the code (or a comprehension or function inside it) contains a ``for``/``while`` loop."""
    return any(ins.opname in LOOP_OPCODES for inner in _code_objects(code) for ins in dis.get_instructions(inner))


def _cell_imports(filename: str) -> str | None:
    """The first line of the cell ``filename`` that imports course_lib, or None (also None when the cell's
    source is unknown)."""
    lines = linecache.getlines(filename)
    if not lines:
        return None
    source = "".join(lines)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value]
        if any("course_lib" in name for name in names):
            return (ast.get_source_segment(source, node) or "").splitlines()[0]
    return None


def check_answer(exercise: str, answer: Any, rules: Rules) -> None:
    """Static checks on ``answer`` before it runs; raises :class:`RuleViolation`.

    Args:
        exercise: the exercise number, for the message.
        answer: what the student handed in (function, class, module instance, partial, bound method).
        rules: the exercise's rules (``no_loops`` is checked here too).
    """
    if not _enforced or answer is None:
        return
    cls = answer if isinstance(answer, type) else None
    if cls is None and not isinstance(answer, (types.FunctionType, types.MethodType, functools.partial)) and \
            not isinstance(answer, types.BuiltinFunctionType):
        cls = type(answer)  # an instance, e.g. the student's nn.Module
    if cls is not None:
        for klass in cls.__mro__:
            found = _course_lib_name(klass)
            if found:
                what = "is" if klass is cls else "derives from"
                raise RuleViolation(exercise, "own code", f"your class {what} {found}, course_lib's code, not "
                                    f"your own; {_OWN_RULES}")
    else:
        found = _course_lib_name(answer)
        if found:
            raise RuleViolation(exercise, "own code", f"your answer is {found}, course_lib's code, not your own; "
                                f"{_OWN_RULES}")
    if isinstance(answer, functools.partial):
        for value in (*answer.args, *answer.keywords.values()):
            found = _course_lib_name(value)
            if found:
                raise RuleViolation(exercise, "own code", f"your answer wraps {found}, course_lib's code; {_OWN_RULES}")
    for fn in _functions_of(answer):
        _check_function(exercise, fn, rules)


def _check_function(exercise: str, fn: types.FunctionType, rules: Rules) -> None:
    extra = {}
    for index, cell in enumerate(fn.__closure__ or ()):
        try:
            extra[fn.__code__.co_freevars[index]] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    for index, value in enumerate(fn.__defaults__ or ()):
        extra[f"default argument {index + 1}"] = value
    extra.update({f"default {k}": v for k, v in (fn.__kwdefaults__ or {}).items()})
    why = _names_course_lib(fn.__code__, fn.__globals__, extra)
    if why:
        raise RuleViolation(exercise, "own code", f"{why} in {fn.__qualname__}; {_OWN_RULES}")
    line = _cell_imports(fn.__code__.co_filename)
    if line:
        raise RuleViolation(exercise, "own code", f"the cell that defines {fn.__qualname__} imports course_lib "
                            f"(`{line}`); {_OWN_RULES}")
    if rules.no_loops and _has_loop(fn.__code__):
        raise RuleViolation(exercise, "no loops", f"{fn.__qualname__} uses a Python loop (for, while or a "
                            "comprehension), and this exercise asks for code without Python loops")


# ------------------------------------------------------------------------------------------------
# run-time checks: what the answer calls
# ------------------------------------------------------------------------------------------------


@dataclass
class _Trace:
    rules: Rules
    violation: tuple[str, str] | None = None  # (rule, detail), the first one found
    student_code: dict = field(default_factory=dict)  # code object -> globals, every piece of student code that ran
    inside_allowed: int = 0  # depth of allowed course_lib calls on the stack

    def flag(self, rule: str, detail: str) -> None:
        if self.violation is None:
            self.violation = (rule, detail)

    def forbidden(self, names: tuple[str, ...], args: tuple = (), kwargs: dict | None = None) -> None:
        if self.inside_allowed:
            return
        for rule in self.rules.forbid:
            if rule.matches(*names) and (rule.only_if is None or rule.only_if(args, kwargs or {})):
                self.flag("without", f"your code calls {names[-1]}, and this exercise is {rule.rule}")


class _ForbiddenCalls(TorchFunctionMode):
    """Sees every torch function and tensor method the answer calls (by any name)."""

    def __init__(self, trace: _Trace):
        super().__init__()
        self.trace = trace

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "") or str(func)
        qualname = getattr(func, "__qualname__", "") or name
        module = getattr(func, "__module__", None) or ""
        self.trace.forbidden((name, qualname, f"{module}.{name}" if module else qualname), args, kwargs)
        return func(*args, **kwargs)


def _profiler(trace: _Trace):
    frames_in_allowed: set[int] = set()

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            where = _where(code.co_filename)
            if where == "course_lib":
                if not trace.inside_allowed:  # an entry into course_lib (not course_lib calling itself)
                    qualname = code.co_qualname
                    if trace.rules.allows(qualname):
                        frames_in_allowed.add(id(frame))
                        trace.inside_allowed += 1
                    else:
                        trace.flag("own code", f"your code calls {_module_of(code.co_filename)}.{qualname}, "
                                   f"which is course_lib's; {_OWN_RULES}")
            elif where == "student":
                trace.student_code.setdefault(code, frame.f_globals)
            elif not trace.inside_allowed:
                trace.forbidden((code.co_name, code.co_qualname))
        elif event == "return" and id(frame) in frames_in_allowed:
            frames_in_allowed.discard(id(frame))
            trace.inside_allowed -= 1
        elif event == "c_call" and getattr(arg, "__name__", "") in THREAD_STARTERS and \
                getattr(arg, "__module__", "") == "_thread":
            trace.flag("without", "your code starts a thread, and the exercise's rules are checked in the thread "
                       "that calls your code only")
        elif event == "c_call" and not trace.inside_allowed:
            name = getattr(arg, "__name__", "") or ""
            trace.forbidden((name, getattr(arg, "__qualname__", name) or name))

    return profile


@contextmanager
def traced(exercise: str, rules: Rules) -> Iterator[_Trace]:
    """Run the ``with`` block (one call of the student's code) under the run-time checks.

    On leaving the block, raises :class:`RuleViolation` when the code called course_lib outside what the
    exercise allows, broke a "without X" rule, or ran student code (a helper from another cell) that names
    course_lib or loops where loops are not allowed. A violation wins over any exception of the block.

    Args:
        exercise: the exercise number, for the message.
        rules: the exercise's rules.
    """
    trace = _Trace(rules)
    if not _enforced:
        yield trace
        return
    previous = sys.getprofile()
    mode = _ForbiddenCalls(trace)
    error: BaseException | None = None
    try:
        with mode:
            profiler = _profiler(trace)
            sys.setprofile(profiler)
            try:
                yield trace
            finally:
                if sys.getprofile() is not profiler:  # the answer replaced the profiler: it hid what it called
                    trace.flag("own code", "your code switched off the grader's call trace (sys.setprofile)")
                sys.setprofile(previous)
    except BaseException as exc:  # re-raised below unless a rule was broken
        error = exc
    for code, namespace in trace.student_code.items():
        why = _names_course_lib(code, namespace)
        if why:
            trace.flag("own code", f"{why} in {code.co_qualname}; {_OWN_RULES}")
        elif rules.no_loops and _has_loop(code):
            trace.flag("no loops", f"{code.co_qualname} uses a Python loop (for, while or a comprehension), and "
                       "this exercise asks for code without Python loops")
    if trace.violation:
        raise RuleViolation(exercise, *trace.violation) from None
    if error is not None:
        raise error


def describe(rules: Rules) -> str:
    """The rules in one line, for the instructors' table."""
    parts = [f"own code; course_lib only via {', '.join(p for p in rules.allow if not p.startswith('!'))}"
             if rules.allow else "own code; no course_lib"]
    parts += list(dict.fromkeys(rule.rule for rule in rules.forbid))
    if rules.no_loops:
        parts.append("no Python loops")
    return "; ".join(parts)


def is_student_code(obj: Any) -> bool:
    """True when ``obj`` is a function defined in the student's code (a notebook cell), not a library's."""
    code = getattr(obj, "__code__", None)
    return isinstance(code, types.CodeType) and _where(code.co_filename) == "student" and inspect.isfunction(obj)
