"""Run the training command line as the README gives it and record what it delivered (issue 37).

The README reports figures from ``benchmarks/real_data.py`` and offers ``python -m course_lib.train`` with
the same flags as the way to get them yourself. This script runs that command unchanged (a subprocess:
``python -m course_lib.train --src-files ... --tgt-files ... FLAGS --output OUT``), keeps its standard output
in a log, samples the machine's 1-minute load while it runs, and writes a results file with what the
command printed (each epoch's validation loss and BLEU, which epoch it kept and why) and the test figures
stored in its checkpoint::

    python -m benchmarks.cli_check --data-dir ../shared/data/multi30k --run stretch-subwords \\
        --log runs/cli_check-stretch-subwords.log -- \\
        --d-model 256 --n-heads 8 --d-ff 512 --layers 3 --dropout 0.1 --min-freq 2 --threads 2 \\
        --epochs 15 --time-budget 0 --subword-merges 4000 --beam 4

Results: ``benchmarks/results/cli_check/RUN-seedN.json`` (``RUN-seedN-keep-K.json`` for ``--keep K`` other than
the default); ``python -m benchmarks.report`` compares it with the benchmark's run of the same name and seed
(``benchmarks/results/real_data/RUN/course-seedN.json``). ``--record-only`` writes the results file from a finished
run's log and checkpoint without training again; ``--resumed-after N`` records that the run was interrupted and
continued from its own checkpoint of epoch N (``--resume``, which repeats the same steps: the log then holds the
first part's lines followed by the second's).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.real_data import find_file
from benchmarks.results_io import git_commit, machine, now, write_atomic
from course_lib import train as cli
from course_lib.checkpoint import read_checkpoint

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "cli_check"
FORMAT = 1
EPOCH_LINE = re.compile(r"^epoch +(\d+) +step +(\d+) +([\d.]+)s +train loss ([\d.]+) +valid loss ([\d.]+) ppl [\d.]+"
                        r"(?: +valid BLEU ([\d.]+) lower-cased)?")
KEPT_LINE = re.compile(r"^checkpoint \(--keep (\w+)\): (kept epoch (\d+) of (\d+): .*)$")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="folder with the Multi30k-style files")
    parser.add_argument("--splits", nargs=3, default=["train", "val", "test_2016_flickr"], metavar=("TRAIN", "VALID", "TEST"))
    parser.add_argument("--run", required=True, help="the benchmark run it reproduces (results file name)")
    parser.add_argument("--log", required=True, help="where the command's standard output goes")
    parser.add_argument("--output", help="the command's checkpoint (default runs/cli_check-RUN.pt)")
    parser.add_argument("--results-dir", default=str(RESULTS))
    parser.add_argument("--load-every", type=float, default=30.0, help="seconds between load samples")
    parser.add_argument("--record-only", action="store_true", help="write the results file from --log and --output")
    parser.add_argument("--resumed-after", type=int, metavar="EPOCH",
                        help="with --record-only: the run was continued with --resume from its checkpoint of EPOCH")
    parser.add_argument("flags", nargs=argparse.REMAINDER, help="-- then the command's flags, as the README gives them")
    args = parser.parse_args(argv)
    args.flags = args.flags[1:] if args.flags[:1] == ["--"] else args.flags
    if not args.flags:
        parser.error("give the command's flags after --")
    args.output = args.output or f"runs/cli_check-{args.run}.pt"
    return args


def command(args) -> list[str]:
    """The command line run: the data files, the README's flags, the checkpoint path."""
    folder = Path(args.data_dir)
    src = [str(find_file(folder, name, "de")) for name in args.splits]
    tgt = [str(find_file(folder, name, "en")) for name in args.splits]
    return [sys.executable, "-m", "course_lib.train", "--src-files", *src, "--tgt-files", *tgt, *args.flags,
            "--output", args.output]


def run(argv: list[str], log: Path, every: float) -> tuple[int, list[float], float]:
    """Run ``argv`` with standard output in ``log``; returns its exit status, load samples and wall seconds."""
    log.parent.mkdir(parents=True, exist_ok=True)
    loads, start = [], time.perf_counter()
    with open(log, "w", encoding="utf-8") as out, open(log.with_suffix(".err"), "w", encoding="utf-8") as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, cwd=ROOT)
        while process.poll() is None:
            loads.append(round(os.getloadavg()[0], 2))
            try:
                process.wait(timeout=every)
            except subprocess.TimeoutExpired:
                pass
    return process.returncode, loads, time.perf_counter() - start


def parse_log(text: str) -> dict:
    """The epoch lines and the kept-checkpoint line the command printed."""
    epochs = []
    for line in text.splitlines():
        match = EPOCH_LINE.match(line)
        if match:
            epoch, step, seconds, train_loss, valid_loss, bleu = match.groups()
            epochs.append({"epoch": int(epoch), "step": int(step), "seconds": float(seconds),
                           "train_loss": float(train_loss), "valid_loss": float(valid_loss),
                           "valid_bleu_lc": None if bleu is None else float(bleu)})
    kept = [KEPT_LINE.match(line) for line in text.splitlines()]
    kept = [m for m in kept if m]
    out = {"epochs": epochs}
    if kept:
        out.update(keep=kept[-1].group(1), kept_epoch=int(kept[-1].group(3)), kept_reason=kept[-1].group(2))
    return out


def record(args, argv: list[str], status: int, loads: list[float], wall: float, started: str, commit: str) -> dict:
    """The results file's content (``complete`` only when the command succeeded and wrote its checkpoint)."""
    options = cli.parse_run_spec(argv[3:])  # the RunSpec of the command it ran
    printed = parse_log(Path(args.log).read_text(encoding="utf-8"))
    result = {"benchmark": "cli_check", "format": FORMAT, "run": args.run, "seed": options.seed,
              "commit": commit, "started": started, "finished": now(), "machine": machine(),
              "command": ["python", *argv[1:3], *[a.replace(str(Path(args.data_dir)), "DATA") for a in argv[3:]]],
              "flags": list(args.flags), "threads": options.threads, "exit_status": status,
              "wall_seconds": round(wall, 1), "load_average": {"samples": len(loads), "max": max(loads, default=None),
                                                                "mean": round(sum(loads) / len(loads), 2) if loads else None},
              **printed, "complete": False}
    if args.resumed_after:
        result["resumed_after_epoch"] = args.resumed_after
    if status == 0 and Path(args.output).is_file():
        metrics = read_checkpoint(args.output).get("metrics", {})
        result["test"] = {key: metrics[key] for key in sorted(metrics) if key.startswith("test_") or key == "bleu_signature"}
        result.update(train_seconds=metrics.get("train_seconds"), steps=metrics.get("steps"),
                      complete=printed.get("kept_epoch") is not None and bool(printed["epochs"]))
    return result


def main(argv=None) -> Path:
    """Run (or with ``--record-only`` only record) the command; returns the results file."""
    args = parse_args(argv)
    argv_run = command(args)
    started, commit = now(), git_commit()  # the code that runs, before anything can change it
    if args.record_only:
        status, loads, wall = 0, [], 0.0
    else:
        print(" ".join(argv_run), flush=True)
        status, loads, wall = run(argv_run, Path(args.log), args.load_every)
    result = record(args, argv_run, status, loads, wall, started, commit)
    keep = result.get("keep", "bleu")
    path = Path(args.results_dir) / f"{args.run}-seed{result['seed']}{'' if keep == 'bleu' else f'-keep-{keep}'}.json"
    write_atomic(path, result)
    print(f"exit status {status}; results {path}", flush=True)
    return path


if __name__ == "__main__":
    main(sys.argv[1:])
