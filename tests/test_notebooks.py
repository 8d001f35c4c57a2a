"""Notebook hygiene: what strict nbval, students on Colab and instructors presenting would trip over.

Checks every notebook under notebooks/ (without executing it; nbval does that):
executed top to bottom in one kernel, no stored errors or stderr, no machine-specific paths,
addresses or timings in compared outputs, no huge outputs, the standard opening cell (badge,
goals, prerequisites, run time), the stamped Colab set-up cell, a seed cell, slide metadata on
every cell, ignore tags only with a written reason, CI's checks out of the reader's view, at least two self-checking exercises, and a
closing summary. Also builds slides for one notebook.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SLIDE_TYPES = {"slide", "subslide", "fragment", "-", "skip", "notes"}
IGNORE_TAGS = ("nbval-ignore-output", "raises-exception", "nbval-skip")
MACHINE_PATH = re.compile(r"(?<![\w.:/])/(?:[\w.-]+/){2,}[\w.-]*|site-packages")
ADDRESS = re.compile(r"0x[0-9a-fA-F]{8,}")
TIMING = re.compile(r"\b\d+(\.\d+)?\s?(s/it|it/s|ms|µs|sec|seconds)\b")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # everything below space except tab and newline
MAX_OUTPUT_BYTES = 300_000
MAX_NOTEBOOK_BYTES = 3_000_000


def load_sanitizer() -> list[tuple[re.Pattern, str]]:
    text = (ROOT / "tests" / "nbval_sanitize.cfg").read_text(encoding="utf-8")
    return [(re.compile(r), s) for r, s in re.findall(r"^regex: (.*)$\n^replace: (.*)$", text, re.M)]


SANITIZER = load_sanitizer()


def text_of(output: dict) -> str:
    if "text" in output:
        return "".join(output["text"])
    return "".join(output.get("data", {}).get("text/plain", ""))


def sanitized(text: str) -> str:
    for pattern, replacement in SANITIZER:
        text = pattern.sub(replacement, text)
    return text


def source(cell: dict) -> str:
    return "".join(cell.get("source", ""))


def tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


@pytest.fixture(params=NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def notebook(request):
    path = request.param
    return path, json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code" and source(c).strip()]


def test_notebooks_are_numbered_in_order():
    numbers = [p.name[:2] for p in NOTEBOOKS]
    assert all(n.isdigit() for n in numbers), numbers
    assert numbers == sorted(set(numbers)), f"notebook numbers must be unique: {numbers}"


def test_executed_top_to_bottom_in_one_kernel(notebook):
    path, nb = notebook
    counts = [c.get("execution_count") for c in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: execution counts {counts}"


def test_no_errors_or_stderr_stored(notebook):
    path, nb = notebook
    for i, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", f"{path.name} cell {i}: stored error {output.get('ename')}"
            if output.get("name") == "stderr" and not set(tags(cell)) & set(IGNORE_TAGS):
                pytest.fail(f"{path.name} cell {i}: stderr output (warnings differ between machines): {text_of(output)[:200]}")


def test_outputs_are_portable_and_small(notebook):
    path, nb = notebook
    assert path.stat().st_size <= MAX_NOTEBOOK_BYTES, f"{path.name} is {path.stat().st_size // 1000} kB"
    for i, cell in enumerate(nb["cells"]):
        ignored = "nbval-ignore-output" in tags(cell)
        for output in cell.get("outputs", []):
            text = sanitized(text_of(output))
            assert not MACHINE_PATH.search(text), f"{path.name} cell {i}: machine path {MACHINE_PATH.search(text)[0]}"
            assert len(json.dumps(output)) <= MAX_OUTPUT_BYTES, f"{path.name} cell {i}: output too large"
            if not ignored:
                assert not ADDRESS.search(text), f"{path.name} cell {i}: memory address in a compared output"
                assert not TIMING.search(text), f"{path.name} cell {i}: timing in a compared output: {text[:200]}"


def test_no_control_characters_in_markdown_or_code_strings(notebook):
    """A control character in a cell is almost always a LaTeX command eaten by a string escape:
    `\\rVert` stored as a carriage return + "Vert", or "\\beta" in a non-raw code string (a backspace).
    Tabs and newlines are allowed."""
    path, nb = notebook
    for i, cell in enumerate(nb["cells"]):
        text = source(cell)
        found = CONTROL.search(text)
        assert not found, f"{path.name} cell {i}: control character {found[0]!r} in the cell source near {text[max(0, found.start() - 30):found.end() + 30]!r}"
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue  # IPython syntax (magics); nbval runs the cell anyway
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                bad = CONTROL.search(node.value)
                assert not bad, (f"{path.name} cell {i}, line {node.lineno}: a string literal holds the control character "
                                 f"{bad[0]!r} (write a raw string r\"...\" or double the backslash)")


def test_the_control_character_check_can_fail():
    assert CONTROL.search("\\lVert u \rVert")  # what a non-raw "\\lVert u \\rVert" turns into
    assert CONTROL.search("\x08eta")  # "\\beta" in a non-raw string
    assert not CONTROL.search("line one\n\tline two")


def test_opening_cell_has_badge_goals_prerequisites_and_run_time(notebook):
    path, nb = notebook
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown"
    text = source(first)
    assert "colab.research.google.com/assets/colab-badge.svg" in text, f"{path.name}: no Open in Colab badge"
    assert f"/notebooks/{path.name})" in text, f"{path.name}: badge does not point at this notebook"
    for needle in ("learn", "Prerequisites", "run time"):
        assert needle.lower() in text.lower(), f"{path.name}: opening cell does not mention '{needle}'"


def test_colab_setup_and_seed_cells(notebook):
    path, nb = notebook
    setup = [c for c in nb["cells"] if "colab-setup" in tags(c)]
    assert len(setup) == 1, f"{path.name}: needs exactly one code cell tagged colab-setup"
    assert setup[0]["metadata"]["slideshow"]["slide_type"] == "skip"
    first_code = [source(c) for c in code_cells(nb)[:3]]
    assert any("seed_everything(" in s for s in first_code), f"{path.name}: seed in one of the first code cells"


def test_colab_stamp_is_up_to_date():
    if not NOTEBOOKS:
        pytest.skip("no notebooks yet")
    result = subprocess.run(
        [sys.executable, "-m", "scripts.stamp_colab", "--check", *map(str, NOTEBOOKS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_cell_has_slide_metadata(notebook):
    path, nb = notebook
    for i, cell in enumerate(nb["cells"]):
        slide_type = cell.get("metadata", {}).get("slideshow", {}).get("slide_type")
        assert slide_type in SLIDE_TYPES, f"{path.name} cell {i}: slide_type {slide_type!r}"
    assert nb["cells"][0]["metadata"]["slideshow"]["slide_type"] == "slide"


def test_ignore_tags_have_a_written_reason(notebook):
    """Each nbval tag has its reason beside it, in the cell's metadata (``tag_reasons``), not in the code."""
    path, nb = notebook
    for i, cell in enumerate(nb["cells"]):
        reasons = cell.get("metadata", {}).get("tag_reasons", {})
        for tag in set(tags(cell)) & set(IGNORE_TAGS):
            reason = reasons.get(tag, "")
            assert len(reason.strip()) > 10, f"{path.name} cell {i}: tag {tag} needs metadata.tag_reasons[{tag!r}]"
        for tag in reasons:  # and the other way round: a reason without its tag does nothing in nbval
            assert tag in tags(cell), f"{path.name} cell {i}: has a reason for {tag} but no {tag} tag"


def test_no_scaffolding_in_the_readers_view(notebook):
    """What a student reads is teaching: CI's checks sit in hidden, tagged cells (notebooks/README.md)."""
    path, nb = notebook
    hidden_tags = {"course-check", "colab-setup"}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        text, meta = source(cell), cell.get("metadata", {})
        if set(tags(cell)) & hidden_tags:
            assert meta.get("jupyter") == {"source_hidden": True, "outputs_hidden": True}, (
                f"{path.name} cell {i}: a hidden cell must be collapsed in JupyterLab")
            assert meta.get("cellView") == "form" and text.startswith("# @title "), (
                f"{path.name} cell {i}: a hidden cell shows only its '# @title' line on Colab")
            assert meta["slideshow"]["slide_type"] == "skip", f"{path.name} cell {i}: hidden cells are not slides"
            continue
        assert "prose" not in re.sub(r"#.*", "", text), (
            f"{path.name} cell {i}: prose checks belong in a hidden cell tagged course-check")
        assert not re.search(r"nbval|NBVAL", text), f"{path.name} cell {i}: nbval markers are tags, not code"
    for i, cell in enumerate(nb["cells"]):
        if "course-check" in tags(cell):
            assert not cell.get("outputs"), f"{path.name} cell {i}: a course-check cell prints nothing"


def test_no_frozen_progress_bars(notebook):
    """A progress bar stored without its widget state shows as a frozen "0%" line: never store one."""
    path, nb = notebook
    for i, cell in enumerate(code_cells(nb)):
        for output in cell.get("outputs", []):
            assert not re.search(r"\d+%\|", text_of(output)), f"{path.name} code cell {i}: a stored progress bar"


def test_at_least_two_self_checking_exercises_with_solutions(notebook):
    path, nb = notebook
    checks = [c for c in code_cells(nb) if re.search(r"\bnb\d\d\.check_\w+\(", source(c))]
    assert len(checks) >= 2, f"{path.name}: {len(checks)} exercise check calls (need >= 2)"
    solutions = [c for c in nb["cells"] if c["cell_type"] == "markdown" and "<details>" in source(c)]
    assert len(solutions) >= 2, f"{path.name}: solutions in collapsed <details> cells (found {len(solutions)})"
    for cell in checks:
        for output in cell.get("outputs", []):
            assert "❌" not in text_of(output), f"{path.name}: a committed exercise check fails: {text_of(output)}"


def test_closing_cell_has_summary_and_whats_next(notebook):
    path, nb = notebook
    last = nb["cells"][-1]
    text = source(last).lower()
    assert last["cell_type"] == "markdown" and "summary" in text and "next" in text, f"{path.name}: closing cell"


def test_kernelspec_is_the_default_python(notebook):
    path, nb = notebook
    assert nb["metadata"]["kernelspec"]["name"] == "python3", path.name
    assert "widgets" not in nb["metadata"], f"{path.name}: stored widget state (regenerate with make regenerate)"


def test_slides_build(tmp_path):
    if not NOTEBOOKS:
        pytest.skip("no notebooks yet")
    from scripts.build_slides import build_slides

    html = build_slides(NOTEBOOKS[0], tmp_path).read_text(encoding="utf-8")
    assert "reveal" in html.lower() and "<section" in html
