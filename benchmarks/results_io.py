"""What every benchmark writes into its results file: the commit, the date, the machine, the arguments.

Results files live under ``benchmarks/results/BENCHMARK/`` and are the only source of the figures that
the README, ``benchmarks/README.md`` and notebook 14 quote (``benchmarks/report.py`` renders them).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def machine() -> dict:
    """What ran the benchmark (seconds from different machines or days are not comparable)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
            "platform": platform.platform(), "load_average_at_start": load}


def git_commit() -> str:
    """The checkout's commit, with ``+dirty`` when tracked files differ from it."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def header(benchmark: str, arguments: dict, threads: int) -> dict:
    """The fields every results file starts with."""
    return {"benchmark": benchmark, "format": 1, "commit": git_commit(), "started": now(), "machine": machine(),
            "threads": threads, "arguments": arguments}


def write_atomic(path: Path, record: dict) -> None:
    """Write ``record`` as JSON to ``path`` through a temporary file, so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)


def default_path(benchmark: str, tag: str) -> Path:
    """``benchmarks/results/BENCHMARK/<UTC date and time>-TAG.json``."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return RESULTS / benchmark / f"{stamp}-{tag}.json"
