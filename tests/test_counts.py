"""What the prose says about the course itself agrees with the repository, so it cannot go stale.

1. Every count of notebooks or slide decks written in README.md or in notebook 00's markdown ("fifteen
   Jupyter notebooks", "15 decks") equals the number of course notebooks, ``notebooks/NN_*.ipynb``
   (``make slides`` builds one deck per notebook). A count followed by a list of notebook numbers in
   parentheses names a subset and is skipped ("2 notebooks (04, 06)"); a figure measured on an older
   course names its notebooks instead of counting them ("notebooks 00–12").
2. Only the highest-numbered notebook may call itself the last one.
3. The README's syllabus lists every notebook once, with the run time its opening cell states
   ("about 0.5 min on a laptop CPU" is "≈ 0.5 min").

This test runs nothing; it reads the files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
README = ROOT / "README.md"
NUMBER_WORDS = {word: value for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four twenty-five".split())}
# longest words first, so that "twenty-one" is not read as "twenty"
COUNT = re.compile(r"\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r"|\d+)\s+(?:Jupyter\s+)?"
                   r"(notebooks|decks)\b(?!\s*\(\d\d)", re.IGNORECASE)
LAST = re.compile(r"\blast notebook\b", re.IGNORECASE)
# the CPU time is the fourth column; a GPU time column (scripts/test_gpu.py) may follow it
SYLLABUS_ROW = re.compile(r"^\| (\d\d) \| \[[^]]*\]\(notebooks/(\d\d_\w+\.ipynb)\) \|[^|]*\| ≈ ([\d.]+) min \|(?:[^|]*\|)?$",
                          re.MULTILINE)
RUN_TIME = re.compile(r"\*\*Expected run time:\*\* about ([\d.]+) min on a laptop CPU")


def markdown(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def counts(text: str) -> list[tuple[str, int]]:
    """(the phrase, its number) for every count of notebooks or decks in ``text``."""
    found = []
    for match in COUNT.finditer(text):
        number = match.group(1).lower()
        found.append((" ".join(match.group().split()), int(number) if number.isdigit() else NUMBER_WORDS[number]))
    return found


def test_the_course_has_numbered_notebooks():
    assert len(NOTEBOOKS) >= 2
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(len(NOTEBOOKS))], "gaps in the numbering"


def test_stated_counts_of_notebooks_and_decks_are_current():
    sources = {"README.md": README.read_text(encoding="utf-8"), NOTEBOOKS[0].name: markdown(NOTEBOOKS[0])}
    for name, text in sources.items():
        stated = counts(text)
        assert stated, f"{name} states no count of notebooks (this test would check nothing)"
        wrong = [phrase for phrase, number in stated if number != len(NOTEBOOKS)]
        assert not wrong, f"{name}: the course has {len(NOTEBOOKS)} notebooks, but the text says {wrong}"


def test_only_the_last_notebook_calls_itself_the_last():
    for path in NOTEBOOKS[:-1]:
        assert not LAST.search(markdown(path)), f"{path.name} calls itself the last notebook; {NOTEBOOKS[-1].name} follows"


def test_syllabus_run_times_match_the_notebooks():
    rows = SYLLABUS_ROW.findall(README.read_text(encoding="utf-8"))
    assert [file for _, file, _ in rows] == [p.name for p in NOTEBOOKS], "the README's syllabus must list every notebook once, in order"
    for number, file, minutes in rows:
        assert file.startswith(number)
        opening = "".join(json.loads((ROOT / "notebooks" / file).read_text(encoding="utf-8"))["cells"][0]["source"])
        stated = RUN_TIME.search(opening)
        assert stated, f"{file}: the opening cell states no 'about N min on a laptop CPU'"
        assert stated.group(1) == minutes, (f"{file}: the README's syllabus says ≈ {minutes} min, "
                                            f"the notebook's opening cell about {stated.group(1)} min")


def test_the_count_reader_can_fail():
    text = "A course in twelve Jupyter\nnotebooks; 4 min for 3 students × 2 notebooks (04, 06); 34 s for 13 decks."
    assert counts(text) == [("twelve Jupyter notebooks", 12), ("13 decks", 13)]
    assert counts("twenty-one notebooks") == [("twenty-one notebooks", 21)]
