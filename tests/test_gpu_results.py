"""``make test-gpu`` (scripts/test_gpu.py): it stops on a machine without a GPU, and README's GPU column is
what its results file says ("not measured yet" for a notebook it has not timed)."""

from pathlib import Path

import pytest
import torch

from scripts import test_gpu

ROOT = Path(__file__).resolve().parent.parent

FAKE = {"machine": {"gpu": "NVIDIA H100 80GB HBM3"},
        "notebooks": {"10_training.ipynb": {"ok": True, "seconds": 24.0, "error": None},
                      "11_decoding_and_attention.ipynb": {"ok": False, "seconds": 3.0, "error": "RuntimeError: x"}}}


def test_readme_gpu_column_is_the_results_file():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert test_gpu.SYLLABUS_HEADER in readme
    assert test_gpu.render_readme(readme, test_gpu.load_results()) == readme, \
        "README's GPU column is stale: run python -m scripts.test_gpu --readme"


def test_the_column_shows_times_failures_and_what_was_not_measured():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rendered = test_gpu.render_readme(readme, FAKE)
    rows = {line[2:4]: line for line in rendered.splitlines() if test_gpu.ROW.match(line)}
    assert len(rows) == len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    assert rows["10"].endswith("| ≈ 0.4 min (H100) |")
    assert rows["11"].endswith("| fails on H100 |")
    assert rows["00"].endswith(f"| {test_gpu.NOT_MEASURED} |")
    assert test_gpu.render_readme(rendered, FAKE) == rendered  # rendering twice changes nothing


def test_without_a_gpu_it_says_so_and_runs_nothing(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert test_gpu.main([]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "no CUDA GPU" in error


@pytest.mark.parametrize("text, expected", [
    ("Traceback ...\nDeviceMismatch: Expected all tensors to be on the same device\n", "DeviceMismatch: Expected"),
    ("\x1b[31mAssertionError\x1b[0m: only 0.5 copied", "AssertionError: only 0.5 copied"),
])
def test_a_failing_notebook_is_summed_up_in_its_error_line(text, expected):
    assert test_gpu._first_line_of_error(text).startswith(expected)
