"""Re-execute notebooks top to bottom in a fresh kernel and store their outputs (``make regenerate``).

Keeps cell tags, slide metadata and the kernelspec; drops per-cell timing metadata, widget
state and progress bars (without their widget state a reader would see a frozen "0%" line), so a
regenerated notebook differs from the last one only where its outputs changed. The Colab badge and set-up cell are stamped first (scripts/stamp_colab.py). Runs with one torch thread
(COURSE_NUM_THREADS=1), as CI does.

Usage:
    python -m scripts.regenerate_notebooks notebooks/*.ipynb
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from scripts.stamp_colab import repository_url, stamp

KERNEL_NAME = "python3"
PROGRESS_BAR = re.compile(r"\d+%\|")  # tqdm's "training:  40%|████      | 400/1000"


def is_progress_bar(output) -> bool:
    """A tqdm bar: without the widget state it would be stored as a frozen "0%" line."""
    text = output.get("data", {}).get("text/plain", "") if output.get("output_type") == "display_data" else ""
    return bool(PROGRESS_BAR.search("".join(text)))


def clean_metadata(nb) -> None:
    """Remove what changes on every run and means nothing to a reader."""
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": KERNEL_NAME}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams([output for output in cell.get("outputs", []) if not is_progress_bar(output)])
            for output in cell.outputs:
                output.get("metadata", {}).pop("execution", None)


def coalesce_streams(outputs: list) -> list:
    """Join neighbouring stdout (or stderr) chunks: how a print is cut into chunks depends on the machine's load."""
    joined: list = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
            previous["text"] = "".join(previous["text"]) + "".join(output["text"])
        else:
            joined.append(output)
    return joined


def regenerate(path: Path, timeout: int = 900) -> float:
    """Execute one notebook in place; return the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    stamp(nb, path, repository_url())
    os.environ.setdefault("COURSE_NUM_THREADS", "1")
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL_NAME,
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
        store_widget_state=False,
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    clean_metadata(nb)
    nbformat.write(nb, path)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.notebooks:
        seconds = regenerate(path)
        print(f"{path}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
