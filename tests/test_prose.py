"""Every figure in a notebook's prose is checked against the computation or declared a fact.

The mechanism (notebooks/README.md, "Figures in the prose"): a code cell after the computation calls
``prose.check("about 24,000 training pairs", n_train, rel=0.05)``; nbval executes it. This test,
which runs nothing, makes sure that
1. every phrase passed to ``prose.check`` occurs word for word in a markdown cell of its notebook;
2. every figure in the prose (the same selection as ``../shared/tools/prose_numbers.py``: numbers
   above 12 that are not years) lies inside a checked phrase or inside a phrase listed in
   ``notebooks/prose_facts.txt`` (facts from the paper or other projects, inputs an exercise sets);
3. every line of ``notebooks/prose_facts.txt`` still matches its notebook.

Blocks between ``<!-- results:begin NAME -->`` and ``<!-- results:end -->`` are generated from the
benchmarks' results files by ``benchmarks/report.py``; ``tests/test_real_data_benchmark.py`` checks them
against those files, so their figures count as checked here.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from course_lib import prose

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
FACTS = ROOT / "notebooks" / "prose_facts.txt"
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?(?:e[+-]?\d+)?)")
SKIP_WORDS = ("notebook", "exercise", "section", "step ", "cell", "figure", "layer ")
GENERATED = re.compile(r"<!-- results:begin [\w-]+ -->.*?<!-- results:end -->", re.S)
HIDDEN = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\(https?://[^)]*\)|<[^>]*>", re.S)


def squash(text: str) -> str:
    """Collapse runs of white space (markdown wraps lines anywhere)."""
    return " ".join(text.split())


def source(cell: dict) -> str:
    return "".join(cell.get("source", ""))


def checked_phrases(nb: dict) -> list[str]:
    """The first argument of every ``prose.check(...)`` call in the notebook's code cells."""
    phrases = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or "prose.check(" not in source(cell):
            continue
        for node in ast.walk(ast.parse(source(cell))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "prose"):
                first = node.args[0] if node.args else None
                assert isinstance(first, ast.Constant) and isinstance(first.value, str), (
                    "prose.check needs the phrase as a string literal, so this test can find it")
                phrases.append(squash(first.value))
    return phrases


def read_facts() -> dict[str, list[str]]:
    """notebooks/prose_facts.txt: ``NN | phrase | why it is not computed here``, one per line."""
    facts: dict[str, list[str]] = {}
    for number, line in enumerate(FACTS.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" | ")]
        assert len(parts) == 3 and all(parts), f"prose_facts.txt line {number}: want 'NN | phrase | reason'"
        facts.setdefault(parts[0], []).append(squash(parts[1]))
    return facts


def figures_in_prose(text: str) -> list[tuple[int, int, str]]:
    """(start, end, figure) of every figure worth checking in one markdown cell (already squashed)."""
    hidden = HIDDEN.sub(lambda m: " " * len(m.group()), text)  # keep offsets
    found = []
    for match in NUMBER.finditer(hidden):
        value = float(match.group(1).replace(",", ""))
        before = hidden[max(0, match.start() - 12):match.start()].lower()
        if (value.is_integer() and value <= 12) or 1900 <= value <= 2030 or any(w in before for w in SKIP_WORDS):
            continue
        found.append((match.start(), match.end(), match.group(1)))
    return found


def spans(text: str, phrase: str) -> list[tuple[int, int]]:
    return [(m.start(), m.start() + len(phrase)) for m in re.finditer(re.escape(phrase), text)]


@pytest.fixture(params=NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def notebook(request):
    path = request.param
    return path, json.loads(path.read_text(encoding="utf-8"))


def markdown_cells(nb: dict) -> list[str]:
    return [squash(source(c)) for c in nb["cells"] if c["cell_type"] == "markdown"]


def test_checked_phrases_occur_in_the_markdown(notebook):
    path, nb = notebook
    markdown = "\n".join(markdown_cells(nb))
    for phrase in checked_phrases(nb):
        assert phrase in markdown, f"{path.name}: prose.check({phrase!r}) but no markdown cell says that"
        assert prose.figures(phrase), f"{path.name}: prose.check({phrase!r}) quotes no figure"


def test_every_prose_figure_is_checked_or_a_declared_fact(notebook):
    path, nb = notebook
    covering = checked_phrases(nb) + read_facts().get(path.name[:2], [])
    missing = []
    for text in markdown_cells(nb):
        covered = [span for phrase in covering for span in spans(text, phrase)]
        covered += [(m.start(), m.end()) for m in GENERATED.finditer(text)]
        for start, end, figure in figures_in_prose(text):
            if not any(a <= start and end <= b for a, b in covered):
                missing.append(f"{figure} in '...{text[max(0, start - 60):end + 30]}...'")
    assert not missing, (f"{path.name}: figures in the prose that no prose.check covers and "
                         "notebooks/prose_facts.txt does not declare:\n  " + "\n  ".join(missing))


def test_declared_facts_are_current():
    by_number = {p.name[:2]: json.loads(p.read_text(encoding="utf-8")) for p in NOTEBOOKS}
    for number, phrases in read_facts().items():
        assert number in by_number, f"prose_facts.txt names notebook {number}, which does not exist"
        markdown = "\n".join(markdown_cells(by_number[number]))
        for phrase in phrases:
            assert phrase in markdown, f"prose_facts.txt: notebook {number} no longer says {phrase!r}"


def test_check_reads_the_figures_from_the_phrase():
    assert prose.figures("about 24,000 pairs and −1.9247, $d_{12}$ `x = 99` 355 thousand") == [
        (24000.0, 0.5), (-1.9247, 0.00005), (355000.0, 500.0)]
    prose.check("BLEU 99.0 and 1,928 steps", 98.96, 1928)
    prose.check("a ratio of 1.6e+19", 1.62e19)
    prose.check("about 24,000 training pairs", 24_013, rel=0.05)
    with pytest.raises(AssertionError, match="24,000"):
        prose.check("about 24,000 training pairs", 20_000, rel=0.05)
    with pytest.raises(AssertionError, match=r"99\.0"):
        prose.check("BLEU 99.0", 98.9)
    with pytest.raises(ValueError, match="quotes 2 figures"):
        prose.check("720 German and 415 English", 720)


def test_the_coverage_test_can_fail():
    text = squash("The corpus has about 20,000 training pairs; the paper used 4,500,000.")
    assert [f for _, _, f in figures_in_prose(text)] == ["20,000", "4,500,000"]
    covered = spans(text, "about 20,000 training pairs")
    assert [f for s, e, f in figures_in_prose(text) if not any(a <= s and e <= b for a, b in covered)] == ["4,500,000"]


def test_survey_mode_reports_every_mismatch_without_raising(monkeypatch, capsys):
    monkeypatch.setenv("COURSE_PROSE_SURVEY", "1")
    prose.check("about 1.6 and then 24,000", 1.43, 24000)  # the first figure is stale
    prose.check("exactly 7 things", 8)
    reported = capsys.readouterr().err
    assert reported.count("prose mismatch:") == 2 and "1.43" in reported and "for 7" in reported
    monkeypatch.delenv("COURSE_PROSE_SURVEY")
    with pytest.raises(AssertionError, match="for 7"):
        prose.check("exactly 7 things", 8)
