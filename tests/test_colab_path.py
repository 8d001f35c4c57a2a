"""The Colab path, executed: run notebooks the way Google Colab runs them, set-up cell included.

For each notebook this builds what a fresh Colab runtime looks like and runs the notebook top to bottom:
    * a fresh virtual environment in which the usual scientific packages are already installed (Colab
      ships torch, numpy, matplotlib, spaCy, ipywidgets, ...; here they are the pinned ones of the
      environment running the tests, made visible through a ``.pth`` entry, never installed into the new
      environment, so pip cannot change them) but **not** ``course_lib`` and **not** ``sacrebleu``;
    * a ``google.colab`` module that the kernel imports at start-up, as Colab's does;
    * the working directory outside the repository (Colab's is ``/content``);
    * the repository address of the set-up cell redirected to this checkout by git's
      ``url.<base>.insteadOf`` (so the cell's real ``git clone --depth 1 <address>`` runs unchanged), and
      ``COURSE_COLAB_DIR`` naming a temporary folder instead of ``/content/<repository>``.
The set-up cell must then clone the course, ``pip install -e`` it (which installs sacrebleu from the
package index, as on Colab) and make it importable; every later cell must run. The clone is of the
committed state (HEAD) of this checkout, as Colab clones the committed repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from scripts.stamp_colab import SETUP_TAG, repository_url

ROOT = Path(__file__).resolve().parent.parent

NOTEBOOKS = ["00_welcome.ipynb", "11_decoding_and_attention.ipynb"]
# Never visible in the fresh environment: the course itself, sacrebleu (Colab does not ship it), and
# pip/setuptools (the new environment has its own). .pth files are never linked: the editable install
# of course_lib is one.
HIDDEN_PREFIXES = ("course_lib", "__editable__", "sacrebleu", "pip", "setuptools", "_distutils_hack", "pkg_resources")
FAKE_COLAB = '"""Stand-in for the google.colab module Colab imports at start-up (tests/test_colab_path.py)."""\n'

pytestmark = pytest.mark.slow


def _git_checkout_or_skip() -> None:
    if shutil.which("git") is None:
        pytest.skip("the Colab path clones the course with git, which is not installed")
    inside = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True)
    if inside.stdout.strip() != "true":
        pytest.skip(f"{ROOT} is not a git checkout, so there is nothing to clone")


def _link_preinstalled(target: Path) -> list[str]:
    """Link the running environment's installed packages into ``target``, except the hidden ones.

    Args:
        target: an empty folder that the fresh environment will see through a .pth entry.
    Returns the names of the entries that were left out.
    """
    hidden = []
    sources = {Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"])}
    for source in sources:
        for entry in source.iterdir():
            name = entry.name.lower().replace("-", "_")
            if entry.suffix == ".pth" or name.startswith(HIDDEN_PREFIXES) or name == "__pycache__":
                hidden.append(entry.name)
                continue
            if not (target / entry.name).exists():
                (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return hidden


def _make_colab_like_runtime(base: Path) -> dict:
    """Create the fresh environment, the fake google.colab module and the kernel spec under ``base``.

    Args:
        base: an empty temporary folder outside the repository.
    Returns a dict with the paths the test uses.
    """
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True, symlinks=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site_packages = Path(
        subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       capture_output=True, text=True, check=True).stdout.strip()
    )
    preinstalled = base / "preinstalled"
    preinstalled.mkdir()
    _link_preinstalled(preinstalled)
    (site_packages / "colab_preinstalled.pth").write_text(f"{preinstalled}\n", encoding="utf-8")

    fake = base / "fake_colab"
    (fake / "google" / "colab").mkdir(parents=True)  # google stays a namespace package (protobuf shares it)
    (fake / "google" / "colab" / "__init__.py").write_text(FAKE_COLAB, encoding="utf-8")

    content = base / "content"  # Colab's working directory
    content.mkdir()
    course_dir = content / repository_url().rsplit("/", 1)[-1]
    kernel_env = {
        "PYTHONPATH": str(fake),
        "PYTHONNOUSERSITE": "1",
        "COURSE_COLAB_DIR": str(course_dir),
        "COURSE_NUM_THREADS": "1",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{ROOT.as_uri()}.insteadOf",
        "GIT_CONFIG_VALUE_0": repository_url(),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "VIRTUAL_ENV": str(env_dir),
        "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    kernel_dir = base / "jupyter" / "kernels" / "colab_like"
    kernel_dir.mkdir(parents=True)
    spec = {
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}",
                 "--IPKernelApp.exec_lines=['import google.colab']"],
        "display_name": "Colab-like runtime",
        "language": "python",
        "env": kernel_env,
    }
    (kernel_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return {"python": python, "content": content, "course_dir": course_dir, "env": kernel_env,
            "jupyter_path": base / "jupyter"}


def _run_in_runtime(runtime: dict, code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **runtime["env"]}
    return subprocess.run([str(runtime["python"]), "-c", code], cwd=runtime["content"], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_the_colab_way(name, tmp_path, monkeypatch):
    _git_checkout_or_skip()
    runtime = _make_colab_like_runtime(tmp_path)
    assert not runtime["content"].resolve().is_relative_to(ROOT), "the working directory must be outside the repository"

    # The fresh runtime is what Colab gives: google.colab present; course_lib and sacrebleu absent.
    probe = _run_in_runtime(runtime, (
        "import importlib.util, sys\n"
        "import google.colab, torch, ipykernel\n"
        "print(importlib.util.find_spec('course_lib') is None, importlib.util.find_spec('sacrebleu') is None)\n"
    ))
    assert probe.returncode == 0, f"the Colab-like runtime is broken:\n{probe.stderr}"
    assert probe.stdout.split() == ["True", "True"], f"course_lib or sacrebleu is visible before set-up: {probe.stdout}"

    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    assert any(SETUP_TAG in c.metadata.get("tags", []) for c in nb.cells), f"{name} has no Colab set-up cell"
    # After the last cell: where did course_lib and sacrebleu come from?
    nb.cells.append(nbformat.v4.new_code_cell(
        "import course_lib, sacrebleu\nprint('COLAB-PATH', course_lib.__file__, sacrebleu.__file__, sep='\\n')"
    ))
    monkeypatch.setenv("JUPYTER_PATH", str(runtime["jupyter_path"]))
    client = NotebookClient(nb, timeout=600, kernel_name="colab_like",
                            resources={"metadata": {"path": str(runtime["content"])}})
    client.execute()

    lines = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream").split()
    assert lines[0] == "COLAB-PATH", f"unexpected output of the final check: {lines}"
    course_lib_file, sacrebleu_file = Path(lines[1]), Path(lines[2])
    assert course_lib_file.is_relative_to(runtime["course_dir"]), (
        f"course_lib was imported from {course_lib_file}, not from the clone in {runtime['course_dir']}"
    )
    assert sacrebleu_file.is_relative_to(tmp_path / "venv"), f"sacrebleu did not come from the set-up cell: {sacrebleu_file}"
    assert (runtime["course_dir"] / "data" / "checkpoints" / "toy_de_en.pt").is_file(), "the clone has no checkpoint"
