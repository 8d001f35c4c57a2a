"""The course on a GPU: the unit tests and every notebook executed with CUDA (``make test-gpu``).

Runs the unit tests with ``COURSE_DEVICE=cuda`` (so every ``train()`` and ``get_device()`` picks the GPU),
then executes every notebook top to bottom in a fresh kernel with the same setting: every assertion
(thresholds, equality checks) must hold; the stored outputs are not compared (they are the CPU run's, and
nbval in CI keeps checking those on the CPU). The result goes to ``benchmarks/results/gpu_tests.json``
(date, GPU, torch, passed/failed, seconds per notebook), from which the README's syllabus takes its GPU
column (``--readme`` rewrites it; ``tests/test_gpu_results.py`` checks they agree).

Stops with exit status 2 and one line when the machine has no CUDA GPU. ``--emulate`` runs the notebooks on
a CPU-only machine with a second device emulated on the CPU (``tests/emulated_device.py``: every tensor
mix-up a GPU would reveal raises), several times slower, for a check without a GPU; its results go to
``build/`` and never into the results file.

Usage:
    python -m scripts.test_gpu                      # unit tests + every notebook on CUDA, results file
    python -m scripts.test_gpu --notebooks-only notebooks/10_training.ipynb
    python -m scripts.test_gpu --emulate notebooks/10_training.ipynb   # no GPU: emulated device
    python -m scripts.test_gpu --readme             # rewrite README's GPU column from the results file
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "gpu_tests.json"
EMULATED_RESULTS = REPO / "build" / "gpu_tests_emulated.json"
README = REPO / "README.md"
NOT_MEASURED = "not measured yet"
SYLLABUS_HEADER = "| # | notebook | you will learn | CPU time | GPU time |"
ROW = re.compile(r"^\| (\d\d) \| (.*) \| (≈ [\d.]+ min) \|(?: ([^|]*) \|)?$")

# An IPython start-up file: loads tests/emulated_device.py by its path (the kernel's import path stays as it is)
EMULATION_STARTUP = """\
import importlib.util, os, sys
_spec = importlib.util.spec_from_file_location("emulated_device", {module!r})
sys.modules["emulated_device"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sys.modules["emulated_device"])
_course_emulated_device = sys.modules["emulated_device"].EmulatedDevice()
_course_emulated_device.__enter__()
os.environ["COURSE_DEVICE"] = "meta"
del _spec
"""


def machine() -> dict:
    """What the run ran on: GPU, torch and CUDA versions."""
    import torch

    return {"gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (emulated on the CPU)",
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "bf16": bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())}


def run_unit_tests(env: dict) -> dict:
    """``pytest tests`` with CUDA chosen; counts from pytest's summary line."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                            cwd=REPO, env=env, capture_output=True, text=True)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|error)", summary)}
    failed = [line.split(" - ")[0].removeprefix("FAILED ").removeprefix("ERROR ")
              for line in result.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    return {"passed": counts.get("passed", 0), "failed": counts.get("failed", 0) + counts.get("error", 0),
            "skipped": counts.get("skipped", 0), "failures": failed, "seconds": round(time.perf_counter() - start, 1)}


def run_notebook(path: Path, env_updates: dict, timeout: int = 1800) -> dict:
    """Execute one notebook in a fresh kernel (cells tagged ``raises-exception`` may raise); time it."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    saved = {key: os.environ.get(key) for key in env_updates}
    os.environ.update(env_updates)
    start = time.perf_counter()
    error = None
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    except CellExecutionError as exc:
        error = _first_line_of_error(str(exc))
    except Exception as exc:  # a dead kernel or a timeout: recorded, and the other notebooks still run
        error = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    return {"ok": error is None, "seconds": round(time.perf_counter() - start, 1), "error": error}


def _first_line_of_error(text: str) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    lines = [line for line in text.splitlines() if re.match(r"^\w*(Error|Exception|Mismatch)\b", line)]
    return (lines[-1] if lines else text.strip().splitlines()[-1])[:300]


def emulation_env(workdir: Path) -> dict:
    """Environment for kernels that run on the emulated device (an IPython start-up file enters it)."""
    startup = workdir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-emulated-device.py").write_text(EMULATION_STARTUP.format(module=str(REPO / "tests" / "emulated_device.py")))
    return {"IPYTHONDIR": str(workdir), "COURSE_NUM_THREADS": os.environ.get("COURSE_NUM_THREADS", "1")}


def syllabus_column(results: dict | None) -> dict[str, str]:
    """``{"10": "≈ 0.4 min (H100)", ...}`` from a results file; "not measured yet" for what it lacks."""
    column = {}
    for name, run in (results or {}).get("notebooks", {}).items():
        number = Path(name).name[:2]
        if run["ok"]:
            column[number] = f"≈ {max(run['seconds'] / 60, 0.1):.1f} min ({_short_gpu(results['machine']['gpu'])})"
        else:
            column[number] = f"fails on {_short_gpu(results['machine']['gpu'])}"
    return column


def _short_gpu(name: str) -> str:
    match = re.search(r"(H100|H200|A100|L4|T4|V100|A10G?|RTX \w+)", name)
    return match.group(1) if match else name


def render_readme(text: str, results: dict | None) -> str:
    """README with the syllabus's GPU column filled from ``results`` (added if missing)."""
    column = syllabus_column(results)
    out = []
    for line in text.splitlines():
        if line.startswith("| # | notebook | you will learn | CPU time |"):
            line = SYLLABUS_HEADER
        elif line.startswith("|---|---|---|---|") and out and out[-1] == SYLLABUS_HEADER:
            line = "|---|---|---|---|---|"
        else:
            match = ROW.match(line)
            if match:
                number, middle, cpu = match.group(1), match.group(2), match.group(3)
                line = f"| {number} | {middle} | {cpu} | {column.get(number, NOT_MEASURED)} |"
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def load_results(path: Path = RESULTS) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook")
    parser.add_argument("--notebooks-only", action="store_true", help="skip the unit tests")
    parser.add_argument("--emulate", action="store_true", help="no GPU: run the notebooks on an emulated device")
    parser.add_argument("--readme", action="store_true", help="only rewrite README's GPU column from the results")
    args = parser.parse_args(argv)
    if args.readme:
        README.write_text(render_readme(README.read_text(), load_results()))
        print(f"README's GPU column rewritten from {RESULTS.relative_to(REPO)}")
        return 0
    import torch

    notebooks = args.notebooks or sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if args.emulate:
        env_updates = emulation_env(Path(tempfile.mkdtemp(prefix="emulated-ipython-")))
        results_path, args.notebooks_only = EMULATED_RESULTS, True
    elif not torch.cuda.is_available():
        print("make test-gpu: no CUDA GPU on this machine; nothing was run (the CPU suite is `make test`; "
              "`--emulate` checks the notebooks on an emulated device)", file=sys.stderr)
        return 2
    else:
        env_updates = {"COURSE_DEVICE": "cuda"}
        results_path = RESULTS
    print(f"make test-gpu: running on {machine()['gpu']} (torch {torch.__version__})", flush=True)
    results = {"date": datetime.date.today().isoformat(), "machine": machine(),
               "command": "python -m scripts.test_gpu " + " ".join(argv if argv is not None else sys.argv[1:]),
               "notebooks": {}}
    if not args.notebooks_only:
        results["unit_tests"] = run_unit_tests({**os.environ, **env_updates})
        print(f"unit tests: {results['unit_tests']['passed']} passed, {results['unit_tests']['failed']} failed "
              f"in {results['unit_tests']['seconds']} s", flush=True)
    for path in notebooks:
        run = run_notebook(path, env_updates)
        results["notebooks"][path.name] = run
        print(f"{path.name}: {'ok' if run['ok'] else 'FAILED'} in {run['seconds']} s"
              f"{'' if run['ok'] else ' — ' + run['error']}", flush=True)
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(results, indent=1) + "\n")
    if results_path == RESULTS and not args.notebooks:
        README.write_text(render_readme(README.read_text(), results))
    failed = [name for name, run in results["notebooks"].items() if not run["ok"]]
    failed_tests = results.get("unit_tests", {}).get("failed", 0)
    print(f"results: {results_path.relative_to(REPO)}; {len(failed)} notebook(s) and {failed_tests} unit test(s) failed")
    return 1 if failed or failed_tests else 0


if __name__ == "__main__":
    sys.exit(main())
