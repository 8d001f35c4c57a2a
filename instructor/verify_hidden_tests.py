"""Check the hidden tests against the course notebooks (run after editing a notebook or a hidden test).

For every exercise of the given notebooks, executes the course notebook with three cells added after
the exercise: the course's own solution must pass the hidden test; for exercises that ask for code,
a lookup table of the public checker's visible cases must fail it; then the solution is restored so
that the rest of the notebook runs as usual. One notebook execution per notebook, one torch thread.

Usage:
    python instructor/verify_hidden_tests.py notebooks/04_attention.ipynb [...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "scripts")]
from student_edition import check_call, hidden_registry, is_solution_cell, kernel_environment  # noqa: E402
from synthetic import ROOT, _split_check, hardcoded_source, solution_code, with_solution  # noqa: E402

MARK = "# verify_hidden_tests"


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
        cells.append(nbformat.v4.new_code_cell(f"{MARK}: the course's solution passes\n{right}\nimport hidden_tests as _ht\n"
                                               f"{call}"))
        if test.kind == "function":
            table = hardcoded_source(before, solution, module, checker, arguments)
            cells.append(nbformat.v4.new_code_cell(
                f"{MARK}: a lookup table of the visible cases fails\n{table}\n"
                f"try:\n    {call}\nexcept AssertionError as _error:\n"
                f"    print('hard-coded answer rejected:', str(_error).splitlines()[0])\n"
                f"else:\n    raise RuntimeError('a lookup table of the visible cases passed the hidden test of {checker}')"))
            cells.append(nbformat.v4.new_code_cell(f"{MARK}: restore the solution\n{right}"))
    nb.cells = cells
    return nb


def verify(path: Path) -> tuple[int, float]:
    """Execute the verification notebook of ``path``; return (number of checks, seconds)."""
    from nbclient import NotebookClient

    nb = verification_notebook(path)
    start = time.perf_counter()
    NotebookClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    checks = sum(c.source.startswith(MARK) and "restore" not in c.source for c in nb.cells)
    return checks, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook")
    args = parser.parse_args(argv)
    kernel_environment()
    os.environ["COURSE_NUM_THREADS"] = "1"
    for path in args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        checks, seconds = verify(path)
        print(f"{path.name}: {checks} checks passed in {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
