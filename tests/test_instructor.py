"""The instructor tools: student edition (no solutions, runs clean), grading with hidden tests, offline slides.

Costs about ten notebook executions (notebooks 00 and 02: the student edition of each, and three
synthetic submissions of each graded by nbgrader) and one headless-Chromium page load.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from instructor.synthetic import CODE_BLOCK, make_submission
from scripts import build_slides, grade, student_edition

ROOT = Path(__file__).resolve().parent.parent

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# nbgrader's gradebook code triggers SQLAlchemy session warnings that say nothing about the course
pytestmark = pytest.mark.filterwarnings("ignore:Object of type .* not in session")
GRADED = ["00_welcome", "02_embeddings"]  # the two quickest notebooks to execute


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    """The student edition of every course notebook, built once."""
    out = tmp_path_factory.mktemp("build")
    student_edition.kernel_environment()
    folder, exercises = student_edition.build_student_edition(NOTEBOOKS, out)
    return folder, exercises


def _solution_only_lines(nb) -> set[str]:
    """Lines of the collapsed solutions' code that appear nowhere else in the course notebook."""
    elsewhere = "\n".join(c.source for c in nb.cells if not student_edition.is_solution_cell(c))
    lines = set()
    for cell in nb.cells:
        if student_edition.is_solution_cell(cell):
            for block in CODE_BLOCK.findall(cell.source):
                for line in block.splitlines():
                    line = line.strip()
                    if len(line) >= 12 and not line.startswith("#") and line not in elsewhere:
                        lines.add(line)
    return lines


def test_student_edition_has_every_notebook_and_no_solution(edition):
    folder, _ = edition
    assert sorted(p.name for p in folder.glob("*.ipynb")) == [p.name for p in NOTEBOOKS]
    assert (folder / "mask_card.md").is_file(), "the notebooks link the mask card by a relative path"
    checked = 0
    for path in NOTEBOOKS:
        course = nbformat.read(path, as_version=4)
        handed_out = nbformat.read(folder / path.name, as_version=4)
        text = "\n".join(c.source for c in handed_out.cells)
        assert not any(student_edition.is_solution_cell(c) for c in handed_out.cells), path.name
        assert "<details" not in text, path.name
        assert "HIDDEN TESTS" not in text and "hidden_tests" not in text, path.name
        assert "prose.check" not in text and "course-check" not in str([c.metadata for c in handed_out.cells]), (
            f"{path.name}: the course's own prose checks are not part of the student edition")
        leaked = [line for line in _solution_only_lines(course) if line in text]
        assert not leaked, f"{path.name} hands out solution code: {leaked[:3]}"
        checked += len(_solution_only_lines(course))
        # every exercise cell is handed out unchanged, followed by its locked test cell
        for exercise in student_edition.find_exercises(course, path.stem, student_edition.hidden_registry()):
            assert course.cells[exercise.cell_index].source in text, (path.name, exercise.checker)
        # a one-value answer's point is for a justification, in a manually graded cell after its test cell
        values = [e for e in student_edition.find_exercises(course, path.stem, student_edition.hidden_registry())
                  if e.kind == "value"]
        why = [c for c in handed_out.cells if "graded-justification" in c.metadata.get("tags", [])]
        assert len(why) == len(values), (path.name, len(why), len(values))
        assert all(c.cell_type == "markdown" and c.metadata["nbgrader"]["solution"] for c in why), path.name
    assert checked > 100  # the check above looked at real solution code


def test_every_exercise_is_graded_by_a_hidden_test(edition):
    _, exercises = edition
    assert len(exercises) >= 2 * len(NOTEBOOKS)
    graded = {(e.notebook, e.exercise) for e in exercises if e.points}
    for stem in GRADED:
        mine = [e for e in exercises if e.notebook == stem]
        assert mine and all(e.points for e in mine), f"{stem}: exercises without a hidden test"
    assert len(graded) == len({e.exercise for e in exercises if e.points})  # exercise numbers are unique


def test_hidden_peak_rate_rule_is_the_recipe_s():
    """Hidden test 14.1 writes the recipe's rule out on its own (it must not import course_lib's answer);
    when the recipe changes, this fails instead of the hidden test failing the notebook's own solution."""
    from course_lib.recipe import peak_lr_for
    from instructor.hidden_tests import nb14

    for d_model, layers in [(32, 1), (64, 2), (96, 5), (256, 3), (384, 4), (512, 6), (1024, 8)]:
        assert nb14._recipe_peak(d_model, layers) == pytest.approx(peak_lr_for(d_model, layers), rel=1e-9), (d_model, layers)


def test_hidden_tests_are_not_in_the_package():
    from setuptools import find_packages

    match = re.search(r"^\[tool\.setuptools\.packages\.find\]\ninclude = \[([^\]]*)\]", (ROOT / "pyproject.toml").read_text(),
                      flags=re.MULTILINE)
    assert match, "pyproject.toml must list the packages with [tool.setuptools.packages.find] include = [...]"
    find = {"include": [name.strip().strip('"') for name in match.group(1).split(",")]}
    packaged = find_packages(str(ROOT), include=find["include"])
    assert "course_lib" in packaged and "course_lib.exercises" in packaged, packaged
    assert not [p for p in packaged if not p.startswith("course_lib")], packaged  # instructor/ stays out
    assert not list((ROOT / "course_lib").rglob("hidden_tests*"))
    assert (ROOT / "instructor" / "hidden_tests" / "__init__.py").exists()


@pytest.mark.parametrize("stem", GRADED)
def test_student_edition_runs_clean_with_exercises_unattempted(edition, stem):
    from nbclient import NotebookClient

    folder, _ = edition
    nb = nbformat.read(folder / f"{stem}.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert printed.count("not attempted yet") == len(re.findall(r"^nb\d\d\.check_", "\n".join(
        c.source for c in nb.cells), flags=re.MULTILINE))


def test_grading_three_synthetic_submissions(edition, tmp_path):
    """Graded in sandboxes (scripts/grade.py); tests/test_grading.py has the attacks and the incremental runs."""
    folder, exercises = edition
    submissions = tmp_path / "submissions"
    for kind in ("right", "wrong", "hardcoded"):
        for stem in GRADED:
            make_submission(ROOT / "notebooks" / f"{stem}.ipynb", folder / f"{stem}.ipynb", kind,
                            submissions / kind / f"{stem}.ipynb")
    out = tmp_path / "grading"
    grade.grade(submissions, out, jobs=2, notebooks=GRADED)

    graded = [e for e in exercises if e.notebook in GRADED]
    tests = student_edition.hidden_registry()
    automatic = {e.exercise: getattr(tests[(e.module, e.checker)], "auto_points", e.points) for e in graded}
    with (out / "grades_long.csv").open() as handle:
        long = list(csv.DictReader(handle))
    points = {(row["student"], row["exercise"]): float(row["points"]) for row in long}
    status = {(row["student"], row["exercise"]): row["status"] for row in long}
    assert len(points) == 3 * len(graded)
    for e in graded:  # one-value answers may earn their point by hand (a justification): automatic points only
        assert points[("right", e.exercise)] == automatic[e.exercise] and status[("right", e.exercise)] == "passed"
        assert status[("wrong", e.exercise)] != "passed", e.exercise
        # a lookup table of the visible cases does not pass the hidden ones; a one-value answer is just the value
        if e.kind == "value":
            assert status[("hardcoded", e.exercise)] == "passed", e.exercise
        else:
            assert points[("hardcoded", e.exercise)] < e.points, e.exercise
    assert any(e.kind == "function" for e in graded) and any(e.kind == "value" for e in graded)

    with (out / "grades.csv").open() as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    total = sum(e.points for e in graded)
    assert rows["right"]["total"] == f"{sum(automatic.values()):g}" and float(rows["wrong"]["total"]) < total / 2
    assert rows["(max points)"]["total"] == str(total)
    for student in ("right", "wrong", "hardcoded"):
        assert f"Feedback for {student}" in (out / "feedback" / f"{student}.md").read_text()
        assert (out / "feedback" / f"{student}.html").exists()
        for stem in GRADED:
            assert (out / "graded" / student / f"{stem}.ipynb").exists()
    assert "hidden case" in (out / "feedback" / "hardcoded.md").read_text()
    assert "not right" in (out / "feedback" / "wrong.md").read_text()


# ------------------------------------------------------------------------------------------------
# slides
# ------------------------------------------------------------------------------------------------

SLIDES_NOTEBOOK = ROOT / "notebooks" / "05_multi_head_attention.ipynb"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--proxy-server=127.0.0.1:9",
                  "--proxy-bypass-list=<-loopback>", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost",
                  "--virtual-time-budget=15000"]


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    build_slides.copy_assets(out)
    return build_slides.build_slides(SLIDES_NOTEBOOK, out)


def test_deck_loads_nothing_from_the_internet(deck):
    html = deck.read_text(encoding="utf-8")
    assert build_slides.remote_assets(html) == []
    assert not re.search(r"""(src|href)=["']https?://(unpkg|cdnjs|cdn\.jsdelivr)""", html)
    for local in re.findall(r"""<(?:script|link)[^>]*(?:src|href)=["']([^"'?#]+)""", html):
        assert (deck.parent / local).is_file(), local  # every script and style sheet is in the build
    theme = re.search(r"dist/theme/(\w+)\.css", html).group(1)
    assert build_slides.remote_assets((deck.parent / "reveal.js/dist/theme" / f"{theme}.css").read_text()) == []
    assert "<section" in html and "reveal.js/dist/reveal.js" in html


def test_remote_asset_detection_can_fail():
    assert build_slides.remote_assets('<script src="https://unpkg.com/reveal.js@4.0.2/dist/reveal.js"></script>')
    assert build_slides.remote_assets('<link rel="stylesheet" href="https://cdn.jsdelivr.net/x.css">')
    assert build_slides.remote_assets("@import url(https://fonts.googleapis.com/css?family=Lato);")
    assert not build_slides.remote_assets('<a href="https://colab.research.google.com/">Open in Colab</a>')


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _rendered_dom(browser: str, page: Path, profile: Path) -> str:
    result = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                            capture_output=True, text=True, timeout=120, env={**os.environ, "TZ": "UTC"})
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_deck_renders_in_headless_chromium_with_the_network_blocked(deck, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium installed: `apt-get install -y chromium` (as .ci/run does) to run this browser test")
    dom = _rendered_dom(browser, deck, tmp_path / "profile")
    assert re.search(r'<div class="reveal[^"]*\bready\b', dom), "reveal.js did not initialise"
    assert re.search(r'<section[^>]*class="[^"]*\bpresent\b', dom), "no slide is shown"
    assert dom.count("<section") >= 5
    assert 'class="MathJax' in dom, "MathJax did not typeset the formulas"

    # the same browser, a deck that needs the network: reveal.js never starts, so the check above can fail
    online = deck.parent / "needs_network.html"
    online.write_text(deck.read_text(encoding="utf-8").replace('src="reveal.js/dist/reveal.js"',
                                                               'src="https://unpkg.com/reveal.js@5.2.0/dist/reveal.js"'))
    assert not re.search(r'<div class="reveal[^"]*\bready\b', _rendered_dom(browser, online, tmp_path / "profile2"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_live_presentation_with_rise_works_offline(tmp_path):
    """`make present` (jupyterlab-rise) serves a live reveal.js slideshow of a notebook, with no internet."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium installed: `apt-get install -y chromium` (as .ci/run does) to run this browser test")
    port, token = _free_port(), "course-test"
    url = f"http://localhost:{port}/rise/notebooks/{SLIDES_NOTEBOOK.name}?token={token}"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "COURSE_NUM_THREADS": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab_rise", "--no-browser", f"--port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={ROOT}", "--ServerApp.allow_root=True"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    assert response.status == 200
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError("the RISE server did not start") from None
                time.sleep(1)
        flags = [f for f in CHROMIUM_FLAGS if not f.startswith("--proxy-bypass-list")]  # localhost only
        flags = [f if not f.startswith("--virtual-time-budget") else "--virtual-time-budget=30000" for f in flags]
        result = subprocess.run([browser, *flags, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", url],
                                capture_output=True, text=True, timeout=180)
        dom = result.stdout
        assert "rise-enabled" in dom, "RISE did not start its slideshow"
        assert re.search(r'<section[^>]*class="[^"]*\bpresent\b', dom), "no slide is shown"
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_collect_sorts_an_archive_into_one_folder_per_student(tmp_path):
    import zipfile

    from scripts import collect

    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("alice/04_attention.ipynb", "{}")
        zf.writestr("alice/notes.txt", "not a notebook")
        zf.writestr("bob_smith - 02_embeddings.ipynb", "{}")
        zf.writestr("carol_06_masking.ipynb", "{}")
        zf.writestr("random.ipynb", "{}")
        zf.writestr("__MACOSX/alice/._04_attention.ipynb", "")
    placed = collect.collect(archive, tmp_path / "submissions")
    assert {k: sorted(v.notebooks) for k, v in placed.items()} == {
        "alice": ["04_attention"], "bob_smith": ["02_embeddings"], "carol": ["06_masking"]}
    assert sorted(str(p.relative_to(tmp_path / "submissions")) for p in (tmp_path / "submissions").rglob("*.ipynb")) == [
        "alice/04_attention.ipynb", "bob_smith/02_embeddings.ipynb", "carol/06_masking.ipynb"]
