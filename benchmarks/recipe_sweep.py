"""Re-check the recipe's constants on the validation split: shorter runs around the recipe's choices.

For two sizes, the course pipeline of ``benchmarks/real_data.py`` trains with one recipe setting changed
and is scored on ``valid`` only (``--valid-only``) after each of its first 4 epochs:

* ``default`` (``d_model`` 64, 2+2 layers, the recipe's anchor): the peak learning rate x0.5 and x2
  (4-epoch schedule, as the ``default`` run).
* ``tutorial`` (``d_model`` 256, 8 heads, ``d_ff`` 512, 3+3 layers, dropout 0.1): the peak x0.5 and x2,
  and an untied output layer; the schedule planned for 10 epochs as in the ``tutorial`` run, stopped
  after epoch 4 (``--stop-after 4``), so the runs are the first 4 epochs of a 10-epoch run.

The recipe's own setting (x1, tied) is the first 4 epochs of the ``default`` and ``tutorial`` runs (same
seeds, same flags). Together the two sizes test the recipe's peak rule: if the best peak
is the recipe's at both widths, the recipe's combined rule holds within a factor of 2 at these two
configurations (they also differ in depth, dropout, tying and warm-up, so the width exponent is not isolated).

Seeds run one after another, the peaks for every seed first (seed 0: x0.5, x2; seed 1: ...), then the
untied output for every seed, so an interrupted sweep still compares whole groups; a finished (setting,
seed) is skipped when the sweep is run again::

    python -m benchmarks.recipe_sweep --data-dir ../shared/data/multi30k --threads 2 --seeds 0 1 2

A 4-epoch horizon cannot settle the tying rule (untied trails after epoch 2 and leads after epoch 4, by
less than the seeds' spread), so ``--full-horizon`` runs the untied output over the whole 10-epoch
schedule, validation only, for comparison with the tied recipe's ``tutorial`` run epoch by epoch::

    python -m benchmarks.recipe_sweep --data-dir ../shared/data/multi30k --threads 2 --seeds 0 1 2 --full-horizon

``benchmarks/report.py`` tabulates the results (validation BLEU after epoch 4, mean and spread over seeds)
in ``benchmarks/README.md``. Limitation: a 4-epoch horizon favours faster learning, i.e. higher peaks;
the 10-epoch optimum may lie lower.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks import real_data
from course_lib.recipe import peak_lr_for

SIZES = {
    "default": {"flags": [], "d_model": 64, "layers": 2, "epochs": 4, "stop_after": None},
    "tutorial": {"flags": ["--d-model", "256", "--n-heads", "8", "--d-ff", "512", "--layers", "3",
                           "--dropout", "0.1", "--min-freq", "2"],
                 "d_model": 256, "layers": 3, "epochs": 10, "stop_after": 4},
}
PEAK_MULTIPLIERS = (0.5, 2.0)
SWEEP_EPOCHS = 4


def settings(size: str) -> list[tuple[str, list[str]]]:
    """``(run name, extra course flags)`` for every changed setting at ``size``."""
    spec = SIZES[size]
    peak = peak_lr_for(spec["d_model"], spec["layers"])
    runs = [(f"sweep-{size}-peak{m:g}x", ["--peak-lr", f"{peak * m:.6g}"]) for m in PEAK_MULTIPLIERS]
    if size == "tutorial":
        runs.append((f"sweep-{size}-untied", ["--no-tie-embeddings"]))
    return runs


FULL_HORIZON = "sweep-tutorial-untied-10ep"  # the untied output over the whole 10-epoch schedule (--full-horizon)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--results-dir", default=str(real_data.RESULTS))
    parser.add_argument("--full-horizon", action="store_true",
                        help="instead of the 4-epoch sweep: the untied output at the tutorial size over all 10 epochs "
                             "of its schedule, validation only, to compare with the tutorial run's tied recipe")
    args = parser.parse_args(argv)
    common = {"data_dir": args.data_dir, "threads": args.threads, "pipelines": ["course"],
              "results_dir": args.results_dir, "valid_only": True}
    if args.full_horizon:
        spec = SIZES["tutorial"]
        for seed in args.seeds:
            real_data.run(real_data.Settings(**common, seeds=[seed], run=FULL_HORIZON, epochs=spec["epochs"]),
                          [*spec["flags"], "--no-tie-embeddings"])
        return
    for size in args.sizes:
        spec = SIZES[size]
        runs = settings(size)
        groups = [[r for r in runs if "-peak" in r[0]], [r for r in runs if "-peak" not in r[0]]]
        for group, seed in ((g, s) for g in groups for s in args.seeds):
            for run, extra in group:
                real_data.run(real_data.Settings(**common, seeds=[seed], run=run, epochs=spec["epochs"],
                                                 stop_after=spec["stop_after"]), [*spec["flags"], *extra])


if __name__ == "__main__":
    main(sys.argv[1:])
