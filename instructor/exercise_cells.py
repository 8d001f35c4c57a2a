"""Which cells of a course notebook are exercises and solutions, and the hidden tests that grade them.

Shared by the grader (``instructor/executor.py``, ``instructor/synthetic.py``) and the commands that build
the student edition, the instructor's pack and the grading run (``scripts/``), which import it from here:
``instructor/`` needs nothing from ``scripts/``.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKER_MODULE = re.compile(r"nb\d\d")
SOLUTION_SUMMARY = re.compile(r"<summary>[^<]*solution[^<]*</summary>", re.IGNORECASE)


def hidden_registry() -> dict:
    """The hidden tests' registry {(module, checker): HiddenTest} (``instructor/hidden_tests``)."""
    from instructor import hidden_tests

    return hidden_tests.load_all()


def is_solution_cell(cell) -> bool:
    """A collapsed solution: a markdown cell with a ``<details>`` whose summary mentions a solution."""
    return cell.cell_type == "markdown" and "<details" in cell.source and bool(SOLUTION_SUMMARY.search(cell.source))


def check_call(source: str) -> tuple[str, str, str] | None:
    """``(module, checker, arguments)`` of the last top-level ``nbNN.check_…(…)`` call in a code cell, or None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics and the like: not an exercise cell
        return None
    found = None
    for node in tree.body:
        call = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        owner = call.func.value
        if isinstance(owner, ast.Name) and CHECKER_MODULE.fullmatch(owner.id) and call.func.attr.startswith("check_"):
            parts = [ast.get_source_segment(source, arg) for arg in call.args]
            parts += [f"{kw.arg}={ast.get_source_segment(source, kw.value)}" for kw in call.keywords if kw.arg != "quiet"]
            found = (owner.id, call.func.attr, ", ".join(parts))
    return found


def kernel_environment() -> None:
    """Make the notebooks' ``python3`` kernel this environment's Python, with the hidden tests importable.

    Kernels started from here (nbgrader's, ``instructor/verify_hidden_tests.py``'s) get the repository root
    on their ``PYTHONPATH``, so that ``from instructor import hidden_tests`` works in them as it does here.
    """
    bin_dir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ.setdefault("COURSE_NUM_THREADS", "1")
