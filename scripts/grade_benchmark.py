"""Time ``make grade`` on a synthetic class: N students x notebooks 04 and 06, graded with ``-j`` workers.

Builds the student edition of the notebooks, writes N submissions per notebook (right, wrong and
hard-coded answers in turn, from ``instructor/synthetic.py``), grades them all, then adds one late
student and grades again (only that student runs; the others' rows must stay as they were). Prints
the wall times. A benchmark, not a test: the figures depend on the machine and its load.

Usage:
    python -m scripts.grade_benchmark [--students 60] [-j 2] [--out build/grade_benchmark]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from instructor import sandbox
from instructor.synthetic import make_submission
from scripts import grade, student_edition

ROOT = Path(__file__).resolve().parent.parent

KINDS = ("right", "wrong", "hardcoded")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=60, help="synthetic students (default 60)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="notebooks graded at once (default 2)")
    parser.add_argument("--notebooks", nargs="+", default=["04_attention", "06_masking"])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "grade_benchmark")
    args = parser.parse_args(argv)
    if args.students < 1 or args.jobs < 1:
        parser.error(f"--students and -j must be at least 1, got {args.students} and {args.jobs}")
    out = args.out.resolve()
    if out.exists():
        shutil.rmtree(out)
    student_edition.kernel_environment()
    edition, _ = student_edition.build_student_edition([ROOT / "notebooks" / f"{s}.ipynb" for s in args.notebooks],
                                                       out / "build")
    subs = out / "submissions"
    for number in range(args.students):
        for stem in args.notebooks:
            make_submission(ROOT / "notebooks" / f"{stem}.ipynb", edition / f"{stem}.ipynb", KINDS[number % 3],
                            subs / f"student{number + 1:03d}" / f"{stem}.ipynb")
    load = os.getloadavg()[0]
    print(sandbox.describe())
    start = time.monotonic()
    grade.grade(subs, out / "grading", jobs=args.jobs)
    first = time.monotonic() - start
    before = (out / "grading" / "grades.csv").read_text().splitlines()
    for stem in args.notebooks:
        make_submission(ROOT / "notebooks" / f"{stem}.ipynb", edition / f"{stem}.ipynb", "right",
                        subs / "late_student" / f"{stem}.ipynb")
    start = time.monotonic()
    done = grade.grade(subs, out / "grading", jobs=args.jobs)
    second = time.monotonic() - start
    after = [line for line in (out / "grading" / "grades.csv").read_text().splitlines() if not line.startswith("late")]
    kept = after == before
    count = args.students * len(args.notebooks)
    print(f"\n{args.students} students x {len(args.notebooks)} notebooks = {count} notebooks, -j {args.jobs}, "
          f"load average {load:.1f} at the start")
    print(f"first run:  {first:.0f} s ({first / count:.1f} s per notebook)")
    print(f"late student: {second:.0f} s for {len(done['graded'])} notebooks; other rows unchanged: {kept}")
    return 0 if kept else 1


if __name__ == "__main__":
    sys.exit(main())
