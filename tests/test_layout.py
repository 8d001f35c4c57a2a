"""The import graph of course_lib keeps its shape: the library never imports the command line, the student's side
lives in ``course_lib/student/`` and the model side never reaches up into it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "course_lib"
CLIS = {"train", "translate"}  # the command-line modules (``python -m course_lib.train`` / ``.translate``)
STUDENT_USERS = CLIS | {"exercises"}  # may use the student's side: --my-parts, notebook 13's exercises


def imported_modules(path: Path) -> set[str]:
    """Absolute dotted names of every course_lib module ``path`` imports (top level or inside functions)."""
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("course_lib")}


def library_files():
    return [p for p in ROOT.rglob("*.py") if p.name != "__main__.py"]


def top(path: Path) -> str:
    return path.relative_to(ROOT).parts[0].removesuffix(".py")


def test_the_library_never_imports_the_command_line():
    offenders = {str(p.relative_to(ROOT)): sorted(m for m in imported_modules(p) if m in {"course_lib.train"})
                 for p in library_files() if top(p) != "train"}
    assert not {k: v for k, v in offenders.items() if v}


def test_the_students_side_is_one_subpackage_that_the_model_side_does_not_import():
    student_modules = {p.stem for p in (ROOT / "student").glob("*.py")}
    assert {"contracts", "package", "magic", "assembly", "compare", "bug_finder", "ownership"} <= student_modules
    for old in ("parts", "part_compare", "my_parts", "assembly", "diagnosis", "ownership"):
        assert not (ROOT / f"{old}.py").exists(), f"course_lib/{old}.py: the student's side lives in course_lib/student/"
    offenders = {}
    for path in library_files():
        if top(path) in STUDENT_USERS | {"student"}:
            continue
        reached = sorted(m for m in imported_modules(path) if m.startswith("course_lib.student"))
        if reached:
            offenders[str(path.relative_to(ROOT))] = reached
    assert not offenders, f"the model side imports the student's side: {offenders}"


def test_the_import_reader_sees_relative_imports():
    """A test of the test: the student's package reads the model and its own modules."""
    found = imported_modules(ROOT / "student" / "assembly.py")
    assert "course_lib.model.Transformer" in found and "course_lib.student.contracts.check_parts" in found
