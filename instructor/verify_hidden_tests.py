"""Check the hidden tests against the course notebooks (run after editing a notebook or a hidden test).

For every exercise of the given notebooks, executes the course notebook with cells added after the
exercise: the course's own solution must pass the hidden test; for exercises that ask for code, a lookup
table of the public checker's visible cases must fail it, and so must the course's solution in a cell
that imports course_lib and (for a function) the solution wrapped so that it also calls course_lib
through a name built at run time (both "own code" rule violations, checked in a real kernel, whose cells
live in files of their own); then the solution is restored so that the rest of the notebook runs as
usual. One notebook execution per notebook, one torch thread.

``--rules`` prints the table of every coding exercise's rules instead (Markdown).

Usage (from the repository root):
    python -m instructor.verify_hidden_tests notebooks/04_attention.ipynb [...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat

from instructor import hidden_tests
from instructor.exercise_cells import check_call, hidden_registry, is_solution_cell, kernel_environment
from instructor.synthetic import ROOT, _split_check, hardcoded_source, solution_code, with_solution

MARK = "# verify_hidden_tests"
OWN_CODE_CHECK = """from instructor import hidden_tests as _ht
_verdict = {call}
if (_verdict.status, _verdict.rule) != ("broke a rule", "own code"):
    raise RuntimeError("an answer {what} was not rejected: " + _verdict.message)
print("{what} rejected:", _verdict.message)"""
# The student's function wrapped so that it also calls course_lib, by a name no static check can read.
RUNTIME_WRAPPER = """import types as _types
if isinstance({name}, _types.FunctionType):
    def _wrap(inner):
        def wrapped(*args, **kwargs):
            getattr(__import__("_".join(["course", "lib"]) + ".masks", fromlist=["x"]), "causal_mask")(2)
            return inner(*args, **kwargs)
        return wrapped
    {name} = _wrap({name})
else:  # a class: its constructor calls course_lib
    class _Wrapped({name}):
        def __init__(self, *args, **kwargs):
            getattr(__import__("_".join(["course", "lib"]) + ".masks", fromlist=["x"]), "causal_mask")(2)
            super().__init__(*args, **kwargs)
    {name} = _Wrapped"""


def verification_notebook(path: Path):
    """The course notebook with verification cells after every exercise that has a hidden test."""
    registry = hidden_registry()
    nb = nbformat.read(path, as_version=4)
    cells = []
    for index, cell in enumerate(nb.cells):
        if is_solution_cell(cell):
            continue
        cells.append(cell)
        found = check_call(cell.source) if cell.cell_type == "code" else None
        if not found or found[:2] not in registry:
            continue
        module, checker, arguments = found
        test = registry[(module, checker)]
        before, _ = _split_check(cell.source)
        solution = solution_code(nb, index)
        call = f"_ht.grade({module!r}, {checker!r}, {arguments})"
        right = with_solution(before, solution)
        cells.append(nbformat.v4.new_code_cell(f"{MARK}: the course's solution passes\n{right}\nfrom instructor import hidden_tests as _ht\n"
                                               f"{call}"))
        if test.kind == "function":
            table = hardcoded_source(before, solution, module, checker, arguments)
            cells.append(nbformat.v4.new_code_cell(
                f"{MARK}: a lookup table of the visible cases fails\n{table}\n"
                f"try:\n    {call}\nexcept AssertionError as _error:\n"
                f"    print('hard-coded answer rejected:', str(_error).splitlines()[0])\n"
                f"else:\n    raise RuntimeError('a lookup table of the visible cases passed the hidden test of {checker}')"))
            cells.append(nbformat.v4.new_code_cell(
                f"{MARK}: the solution in a cell that imports course_lib fails\nimport course_lib as _course\n{right}\n"
                f"{OWN_CODE_CHECK.format(call=call.replace('_ht.grade', '_ht.evaluate'), what='importing course_lib')}"))
            first = arguments.split(",")[0].strip()
            cells.append(nbformat.v4.new_code_cell(
                f"{MARK}: the solution calling course_lib at run time fails\n{right}\n"
                f"{RUNTIME_WRAPPER.format(name=first)}\n"
                f"{OWN_CODE_CHECK.format(call=call.replace('_ht.grade', '_ht.evaluate'), what='calling course_lib')}"))
            cells.append(nbformat.v4.new_code_cell(f"{MARK}: restore the solution\n{right}"))
    nb.cells = cells
    return nb


def verify(path: Path) -> tuple[int, float]:
    """Execute the verification notebook of ``path``; return (number of checks, seconds)."""
    from nbclient import NotebookClient

    nb = verification_notebook(path)
    start = time.perf_counter()
    NotebookClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    checks = sum(c.source.startswith(MARK) and "restore" not in c.source for c in nb.cells)  # restoring checks nothing
    return checks, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook")
    parser.add_argument("--rules", action="store_true", help="print the table of the coding exercises' rules")
    args = parser.parse_args(argv)
    if args.rules:
        print(hidden_tests.rules_table())
        return 0
    kernel_environment()
    os.environ["COURSE_NUM_THREADS"] = "1"
    for path in args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        checks, seconds = verify(path)
        print(f"{path.name}: {checks} checks passed in {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
