"""``make present`` starts as root too (RISE's server refuses root unless allowed) and passes extra options on."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def dry_run(*extra: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    stamp = ROOT / ".venv" / ".installed"
    if not stamp.exists():
        pytest.skip("the course environment is not set up (make setup)")
    result = subprocess.run(["make", "-n", "present", "NB=notebooks/04_attention.ipynb", *extra], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return next(line for line in result.stdout.splitlines() if "jupyterlab_rise" in line)


def test_present_allows_root_only_as_root():
    command = dry_run()
    assert '"notebooks/04_attention.ipynb"' in command
    assert ("--ServerApp.allow_root=True" in command) == (os.geteuid() == 0)


def test_present_passes_extra_server_options():
    assert "--no-browser --port 8890" in dry_run("PRESENT_FLAGS=--no-browser --port 8890")
