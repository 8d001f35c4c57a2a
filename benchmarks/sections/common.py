"""What every section of the benchmarks' pages shares: reading results files, mean ± s.d. over seeds, the
epoch the rule chooses, and the tables of one real-data run (``benchmarks/real_data.py``'s records).

Rules the sections follow: every figure is a mean over the seeds that finished (their number is shown, with the
standard deviation and the range); choices (the best epoch) are made on the validation split and the test split
is reported for them; comparisons say what differs between the pipelines.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "real_data"


def load_runs(root: Path = RESULTS) -> dict[str, dict[str, list[dict]]]:
    """``{run: {pipeline: [record per seed, sorted by seed]}}`` for every results file under ``root``."""
    runs: dict[str, dict[str, list[dict]]] = {}
    for path in sorted(root.glob("*/*-seed*.json")):
        record = json.loads(path.read_text())
        runs.setdefault(path.parent.name, {}).setdefault(record["pipeline"], []).append(record)
    for pipelines in runs.values():
        for records in pipelines.values():
            records.sort(key=lambda r: r["seed"])
    return runs


def load_records(benchmark: str) -> list[dict]:
    """Every results file of ``benchmarks/results/BENCHMARK/`` (throughput, time_to_bleu), oldest first."""
    folder = RESULTS.parent / benchmark
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def complete(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("complete")]


def summary(values: list[float]) -> dict:
    """Mean, sample standard deviation (0 for one value), min, max and count."""
    values = [float(v) for v in values]
    return {"mean": statistics.fmean(values), "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values)}


def fmt(s: dict, digits: int = 1) -> str:
    """``37.5 ± 0.3 (37.1–37.8)``; a single value as ``37.5 (1 seed)``."""
    if s["n"] == 1:
        return f"{s['mean']:.{digits}f} (1 seed)"
    return f"{s['mean']:.{digits}f} ± {s['sd']:.{digits}f} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def metric(record: dict, epoch: int, split: str, name: str = "bleu_lc") -> float:
    return record["epochs"][epoch - 1][split][name]


def chosen_epoch(record: dict, name: str = "bleu_lc") -> int:
    """The epoch with the best validation score (the earliest on a tie): chosen on ``valid`` only, by the rule
    the training command line keeps its checkpoint with (``--keep bleu``: :func:`course_lib.training.choose_epoch`)."""
    from course_lib.training import choose_epoch

    rows = [{"epoch": i, "valid_bleu_lc": row["valid"][name]} for i, row in enumerate(record["epochs"], start=1)]
    return choose_epoch(rows, "bleu")["epoch"]


def cumulative_seconds(record: dict, clock: str = "train_seconds") -> list[float]:
    total, out = 0.0, []
    for row in record["epochs"]:
        total += row[clock]
        out.append(total)
    return out


def score_at_time(record: dict, seconds: float, split: str = "test", clock: str = "train_seconds") -> float:
    """The score of the last epoch finished within ``seconds`` of training (0 before the first)."""
    best = 0.0
    for t, row in zip(cumulative_seconds(record, clock), record["epochs"], strict=True):
        if t <= seconds * (1 + 1e-9):
            best = row[split]["bleu_lc"]
    return best


def recipe_line(record: dict, name: str) -> str:
    """The value column of one line of the recipe's description (``peak_lr``, ``tie_embeddings``)."""
    for line in record["description"].splitlines():
        fields = line.split()
        if fields and fields[0] == name:
            return fields[1]
    return "?"


TEST_CAVEAT = ("The course recipe's constants were first chosen in single runs scored on this test split (those "
               "figures are withdrawn); the validation sweep (`benchmarks/recipe_sweep.py`) re-checks its peak and its "
               "tied output layer, but "
               "the course recipe's test figures are not fully held out and may be slightly optimistic.")


# ----------------------------------------------------------------------------- one real-data run's tables


PIPELINE_NAMES = {
    "course": "course_lib (course model, course recipe)",
    "torch_recipe": "nn.Transformer, course recipe",
    "classic": "nn.Transformer, classic recipe",
}


PIPELINE_SHORT = {"course": "course", "torch_recipe": "nn.Transformer + course recipe",
                  "classic": "classic recipe"}


def interleaved(record: dict, other: str) -> bool:
    """Whether ``record``'s training alternated with pipeline ``other``'s in one process (so their seconds compare).

    Records written before the field existed ran all pipelines of their seed together.
    """
    return other in record.get("interleaved_with", PIPELINE_NAMES)


def run_header(run: str, pipelines: dict[str, list[dict]]) -> str:
    records = [r for rs in pipelines.values() for r in rs]
    first = records[0]
    commits = sorted({r["commit"][:12] for r in records})
    dates = sorted({r["started"][:10] for r in records})
    machine = first["machine"]
    settings = first["settings"]
    flags = " ".join(settings["course_flags"]) or "(none: the default model)"
    args = settings["args"]
    seeds = {p: [r["seed"] for r in complete(rs)] for p, rs in pipelines.items()}
    partial = {p: [(r["seed"], len(r["epochs"])) for r in rs if not r.get("complete")] for p, rs in pipelines.items()}
    names = [p for p in PIPELINE_NAMES if p in pipelines]
    options = (f" --pipelines {','.join(names)}" if len(names) < len(PIPELINE_NAMES) else "") + f" --run {run}"
    options += "".join(f" {flag}" for key, flag in (("valid_only", "--valid-only"), ("test_last_only", "--test-last-only"))
                       if args.get(key))
    options += "".join(f" {flag} {args[key]}" for key, flag in (("stop_after", "--stop-after"), ("beam_last", "--beam-last"))
                       if args.get(key))
    lines = [f"### Run `{run}`", "",
             f"`benchmarks/real_data.py --epochs {args['epochs']} --threads {args['threads']}{options} {flags}` on "
             f"`{args['data_dir']}` ({', '.join(args['splits'])}); {machine['cpu']}, {machine['cores']} cores, "
             f"torch {machine['torch']}; commits {', '.join(commits)}; {', '.join(dates)}.", ""]
    for p, rs in sorted(pipelines.items(), key=lambda item: list(PIPELINE_NAMES).index(item[0])):
        done = ", ".join(map(str, seeds[p])) or "none"
        extra = "; unfinished: " + ", ".join(f"seed {s} after {n} epochs" for s, n in partial[p]) if partial[p] else ""
        lines.append(f"- {PIPELINE_NAMES.get(p, p)}: {rs[0]['parameters']:,} parameters; seeds finished: {done}{extra}.")
    if len(pipelines) > 1:
        together = sorted({r["seed"] for rs in pipelines.values() for r in complete(rs)
                           if all(interleaved(r, o) for o in pipelines if o != r["pipeline"])})
        alone = sorted({r["seed"] for rs in pipelines.values() for r in complete(rs)} - set(together))
        lines += ["", f"Seeds {', '.join(map(str, together)) or 'none'}: the pipelines trained interleaved, epoch by "
                  "epoch, in one process." + (f" Seed{'s' if len(alone) > 1 else ''} {', '.join(map(str, alone))}: each "
                  "pipeline ran on its own (other times and commits); its BLEU does not depend on this (every "
                  "pipeline keeps its own random state), its seconds do not compare." if alone else "")]
    return "\n".join(lines) + "\n"


def epoch_table(pipelines: dict[str, list[dict]], split: str, name: str = "bleu_lc") -> str:
    names = [p for p in PIPELINE_NAMES if p in pipelines]
    epochs = max(len(r["epochs"]) for rs in pipelines.values() for r in rs)
    head = "| epoch | " + " | ".join(PIPELINE_SHORT[p] for p in names) + " |"
    lines = [head, "|---|" + "---|" * len(names)]
    for e in range(1, epochs + 1):
        cells = []
        for p in names:
            rows = [r for r in pipelines[p] if len(r["epochs"]) >= e]
            if not rows:
                cells.append("")
                continue
            s = summary([metric(r, e, split, name) for r in rows])
            steps = summary([r["epochs"][e - 1]["step"] for r in rows])["mean"]
            cells.append(f"{fmt(s)}, step {steps:,.0f}")
        lines.append(f"| {e} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def final_table(pipelines: dict[str, list[dict]]) -> str:
    """Per pipeline: test at the last epoch and at the epoch chosen on validation, the other measures."""
    lines = ["| pipeline | seeds | test BLEU, last epoch | epoch chosen on val | test BLEU there | "
             "tokenized lower-cased (last) | cased (last) | `<unk>` in output |", "|---|---|---|---|---|---|---|---|"]
    for p in (p for p in PIPELINE_NAMES if p in pipelines):
        rs = complete(pipelines[p])
        if not rs:
            continue
        last = len(rs[0]["epochs"])
        chosen = [chosen_epoch(r) for r in rs]
        at_chosen = summary([metric(r, c, "test") for r, c in zip(rs, chosen, strict=True)])
        cased = "—" if rs[0]["lowercased_output"] else fmt(summary([metric(r, last, "test", "bleu") for r in rs]))
        unk = summary([100 * metric(r, last, "test", "unk_share") for r in rs])
        lines.append(f"| {PIPELINE_SHORT[p]} | {len(rs)} | {fmt(summary([metric(r, last, 'test') for r in rs]))} | "
                     f"{', '.join(map(str, chosen))} | {fmt(at_chosen)} | "
                     f"{fmt(summary([metric(r, last, 'test', 'bleu_tok_lc') for r in rs]))} | {cased} | "
                     f"{unk['mean']:.1f}% |")
    return "\n".join(lines) + "\n"
