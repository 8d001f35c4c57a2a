"""Tables and sentences about real-data results, generated from the results files (never typed by hand).

Reads ``benchmarks/results/real_data/RUN/PIPELINE-seedN.json`` (written by ``benchmarks/real_data.py``)
and writes

* ``benchmarks/README.md``: every run, epoch by epoch, validation and test, mean ± s.d. over seeds;
* the block between ``<!-- results:begin real-data -->`` and ``<!-- results:end -->`` in ``README.md``;
* the same kind of block in notebook 14's markdown (``<!-- results:begin nb14 -->``), and its sentences
  about the corpus (``nb14-corpus``, ``nb14-rare``, ``nb14-subwords``, ``nb14-tied``) from
  ``benchmarks/results/corpus_facts/multi30k.json`` (``benchmarks/corpus_facts.py``).

It also reads ``benchmarks/results/cli_check/RUN-seedN.json`` (``benchmarks/cli_check.py``: the training
command line run as the README gives it) and says which checkpoint the figures come from and what the
command line delivered against the benchmark's same seed.

Rules it follows: every figure is a mean over the seeds that finished (their number is shown, with the
standard deviation and the range); choices (the best epoch) are made on the validation split and the
test split is reported for them; comparisons say what differs between the pipelines.

    python benchmarks/report.py            # rewrite the three places
    python benchmarks/report.py --check    # exit 1 if any of them differs from the results files

``tests/test_real_data_benchmark.py`` runs the check.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "real_data"
CLI_CHECKS = "cli_check"  # a folder beside RESULTS: benchmarks/cli_check.py's results files
BENCH_README = ROOT / "benchmarks" / "README.md"
README = ROOT / "README.md"
NOTEBOOK = ROOT / "notebooks" / "14_from_toy_to_real_data.ipynb"
MARKERS = {"readme": "real-data", "notebook": "nb14"}

PIPELINE_NAMES = {
    "course": "course_lib (course model, course recipe)",
    "torch_recipe": "nn.Transformer, course recipe",
    "classic": "nn.Transformer, classic recipe",
}
PIPELINE_SHORT = {"course": "course", "torch_recipe": "nn.Transformer + course recipe",
                  "classic": "classic recipe"}
DIFFERENCES = """\
| | course | nn.Transformer + course recipe | classic recipe |
|---|---|---|---|
| layers | course_lib `Transformer` | `nn.Transformer` (+ a final LayerNorm per stack) | `nn.Transformer` |
| embeddings, positions, output layer | course's; output tied to target embeddings (recipe, d_model ≥ 128) | the same, tied | the same wrapper, untied |
| words | cased spaCy words, `min_freq` 2 | the same | lower-cased spaCy words, `min_freq` 2 |
| batches | ~1,806 target tokens (128 sentences' worth) | the same | classic rule: (sentences) × (longest + 2) ≤ 4,000 |
| schedule | recipe: peak 1.80e-3 at 490 steps, then 1/sqrt | the same | peak 1e-3 at 800 steps, then 1/sqrt |
| clipping, averaging | clip 1.0, weight average (EMA, decay rising to 0.99) | the same | clip 1.0, none |
| loss, optimizer, dropout | label smoothing 0.1, Adam (0.9, 0.98, 1e-9), dropout 0.1 | the same | the same |
"""


# ----------------------------------------------------------------------------- reading

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


def complete(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("complete")]


# ----------------------------------------------------------------------------- statistics

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


def load_cli_checks(root: Path = RESULTS) -> dict[str, list[dict]]:
    """``{run: [cli_check record per seed, sorted by seed]}`` from the ``cli_check`` folder beside ``root``."""
    checks: dict[str, list[dict]] = {}
    for path in sorted((root.parent / CLI_CHECKS).glob("*-seed*.json")):
        record = json.loads(path.read_text())
        checks.setdefault(record["run"], []).append(record)
    return {run: sorted(records, key=lambda r: r["seed"]) for run, records in checks.items()}


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


def interleaved(record: dict, other: str) -> bool:
    """Whether ``record``'s training alternated with pipeline ``other``'s in one process (so their seconds compare).

    Records written before the field existed ran all pipelines of their seed together.
    """
    return other in record.get("interleaved_with", PIPELINE_NAMES)


# ----------------------------------------------------------------------------- rendering

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


TEST_CAVEAT = ("The course recipe's constants were first chosen in single runs scored on this test split (those "
               "figures are withdrawn); the validation sweep (`benchmarks/recipe_sweep.py`) re-checks its peak and its "
               "tied output layer, but "
               "the course recipe's test figures are not fully held out and may be slightly optimistic.")


def time_table(pipelines: dict[str, list[dict]]) -> str:
    """Training seconds per epoch, and each pipeline's test score within another's total training time
    (same seed, same interleaved run): the comparison at equal wall-clock time, not only at equal epochs."""
    names = [p for p in PIPELINE_NAMES if p in pipelines and complete(pipelines[p])]
    if not names:
        return ""
    budget_of = [b for b in ("course", "classic") if b in names] if len(names) > 1 else []
    head = ["pipeline", "training s per epoch (wall)", "CPU s per epoch", "tokens/s"]
    head += [f"test BLEU within {PIPELINE_SHORT[b]}'s training time" for b in budget_of]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in names:
        rs = complete(pipelines[p])
        rows = [row for r in rs for row in r["epochs"]]
        per_epoch = summary([row["train_seconds"] for row in rows])
        cpu = summary([row["train_cpu_seconds"] for row in rows])
        tps = summary([row["tokens_per_s"] for row in rows])
        cells = [PIPELINE_SHORT[p], f"{per_epoch['mean']:.0f} ({per_epoch['min']:.0f}–{per_epoch['max']:.0f})",
                 f"{cpu['mean']:.0f}", f"{tps['mean']:,.0f}"]
        for b in budget_of:
            budgets = {r["seed"]: cumulative_seconds(r)[-1] for r in complete(pipelines[b])
                       if b == p or interleaved(r, p)}
            same = [r for r in rs if r["seed"] in budgets and (b == p or interleaved(r, b))]
            seeds = "" if len(same) == len(rs) else f"; seed{'s' if len(same) > 1 else ''} {', '.join(str(r['seed']) for r in same)}"
            cells.append(fmt(summary([score_at_time(r, budgets[r["seed"]]) for r in same])) + seeds if same else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


COMPARED = {
    ("course", "classic"): "they differ in implementation and in recipe: words, output layer, batches, schedule, "
                           "weight averaging",
    ("course", "torch_recipe"): "same recipe, words and batches; nn.Transformer adds a final LayerNorm to each stack",
}


def comparison(pipelines: dict[str, list[dict]], a: str = "course", b: str = "classic") -> str:
    """One computed sentence: the difference of the means after the last epoch and from which epoch ``a`` leads."""
    ra, rb = complete(pipelines.get(a, [])), complete(pipelines.get(b, []))
    common = {r["seed"] for r in ra} & {r["seed"] for r in rb}  # compare over the same seeds only
    ra, rb = [r for r in ra if r["seed"] in common], [r for r in rb if r["seed"] in common]
    if not ra or not rb:
        return ""
    last = min(len(ra[0]["epochs"]), len(rb[0]["epochs"]))
    means = [(summary([metric(r, e, "test") for r in ra])["mean"], summary([metric(r, e, "test") for r in rb])["mean"])
             for e in range(1, last + 1)]
    ahead = [e for e, (x, y) in enumerate(means, 1) if x > y]
    lead_from = next((e for e in range(1, last + 1) if all(k in ahead for k in range(e, last + 1))), None)
    diff = means[-1][0] - means[-1][1]
    by_seed = {r["seed"]: r for r in rb}
    gaps = [metric(r, last, "test") - metric(by_seed[r["seed"]], last, "test") for r in ra]
    valid = (summary([metric(r, last, "valid") for r in ra])["mean"]
             - summary([metric(r, last, "valid") for r in rb])["mean"])
    where = f"ahead after every epoch from epoch {lead_from} on" if lead_from else "not ahead at the last epoch"
    if len(gaps) > 1 and not (all(g > 0 for g in gaps) or all(g < 0 for g in gaps)):
        verdict = "the seeds disagree in sign, so no difference is established"
    else:
        verdict = f"{PIPELINE_SHORT[a]} is {where}"
    return (f"After epoch {last}, {PIPELINE_SHORT[a]} minus {PIPELINE_SHORT[b]} ({COMPARED.get((a, b), 'see the table')}): "
            f"{diff:+.1f} lower-cased test BLEU (means over the {len(ra)} seed{'s' if len(ra) > 1 else ''} both finished; "
            f"seed by seed {', '.join(f'{g:+.1f}' for g in gaps)}; on validation {valid:+.1f}); {verdict}.")


def render_run(run: str, pipelines: dict[str, list[dict]]) -> str:
    parts = [run_header(run, pipelines), "Test BLEU (lower-cased, detokenized, sacreBLEU 13a) after each epoch, "
             "mean ± s.d. (min–max) over seeds, and the optimizer step:\n", epoch_table(pipelines, "test"),
             "\nValidation BLEU (lower-cased; what choices are made on):\n", epoch_table(pipelines, "valid"),
             "\nLast epoch and the epoch chosen on validation:\n", final_table(pipelines)]
    times = time_table(pipelines)
    if times:
        parts += ["\nTraining time (wall clock, all finished seeds; seconds from different runs or days do not compare, so the equal-time columns use only seeds whose pipelines trained interleaved in one run):\n", times]
    for other in ("classic", "torch_recipe"):
        sentence = comparison(pipelines, "course", other) if "course" in pipelines else ""
        if sentence:
            parts.append("\n" + sentence + "\n")
    first = next(iter(pipelines.values()))[0]
    signatures = first["epochs"][0]["test"]["signatures"]
    parts.append("\nSignatures: " + "; ".join(f"{k} `{v}`" for k, v in signatures.items()) + ".\n")
    return "\n".join(p.rstrip("\n") + "\n" for p in parts)


SWEEP_PREFIX = "sweep-"
SWEEP_EPOCH = 4  # the sweep's runs are scored after their first 4 epochs (benchmarks/recipe_sweep.py)


FULL_HORIZON = "sweep-tutorial-untied-10ep"  # benchmarks/recipe_sweep.py --full-horizon


def full_horizon(runs) -> tuple[str, str]:
    """The untied output over the whole 10-epoch schedule against the tied recipe's ``tutorial`` run, on
    validation: ``(table, sentence)``, both empty until a seed of the untied run has finished."""
    untied = {r["seed"]: r for r in complete(runs.get(FULL_HORIZON, {}).get("course", []))}
    tied = {r["seed"]: r for r in complete(runs.get("tutorial", {}).get("course", []))}
    seeds = sorted(set(untied) & set(tied))
    if not seeds:
        return "", ""
    last = len(untied[seeds[0]]["epochs"])
    lines = ["| epoch | tied (the recipe) | untied output | untied minus tied, seed by seed |", "|---|---|---|---|"]
    for epoch in range(1, last + 1):
        a = [metric(tied[s], epoch, "valid") for s in seeds]
        b = [metric(untied[s], epoch, "valid") for s in seeds]
        lines.append(f"| {epoch} | {fmt(summary(a))} | {fmt(summary(b))} | "
                     f"{', '.join(f'{y - x:+.1f}' for x, y in zip(a, b, strict=True))} |")
    gaps = [metric(untied[s], last, "valid") - metric(tied[s], last, "valid") for s in seeds]
    mean_gap = statistics.fmean(gaps)
    if len(seeds) < 3:
        verdict = f"{len(seeds)} of 3 seeds finished: no verdict yet"
    elif all(g > 0 for g in gaps):
        verdict = "untied is ahead on every seed: validation favours the untied output"
    elif all(g < 0 for g in gaps):
        verdict = "tied is ahead on every seed: validation favours the recipe's tied output"
    else:
        verdict = "the seeds disagree in sign: validation does not separate the two"
    sentence = (f"After epoch {last} (validation, seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}): tied "
                f"{summary([metric(tied[s], last, 'valid') for s in seeds])['mean']:.1f}, "
                f"untied {summary([metric(untied[s], last, 'valid') for s in seeds])['mean']:.1f}, "
                f"untied minus tied {mean_gap:+.1f} (seed by seed {', '.join(f'{g:+.1f}' for g in gaps)}); {verdict}.")
    return "\n".join(lines) + "\n", sentence


def is_sweep(run: str) -> bool:
    return run.startswith(SWEEP_PREFIX)


def sweep_setting(run: str, size: str) -> str:
    """``sweep-tutorial-peak0.5x`` -> ``peak x0.5``; ``sweep-tutorial-untied`` -> ``untied output``."""
    tail = run[len(f"{SWEEP_PREFIX}{size}-"):]
    if tail.startswith("peak") and tail.endswith("x"):
        return f"peak x{tail[4:-1]}"
    return {"untied": "untied output"}.get(tail, tail)


def recipe_line(record: dict, name: str) -> str:
    """The value column of one line of the recipe's description (``peak_lr``, ``tie_embeddings``)."""
    for line in record["description"].splitlines():
        fields = line.split()
        if fields and fields[0] == name:
            return fields[1]
    return "?"


def sweep_rows(runs, size: str) -> list[tuple[str, str, str, list[dict]]]:
    """``(setting, peak, tied, records)`` for the recipe's own run and each sweep run of ``size``, recipe first.

    The recipe's row is the first ``SWEEP_EPOCH`` epochs of the ``size`` run (same flags and seeds)."""
    rows = []
    own = [r for r in runs.get(size, {}).get("course", []) if len(r["epochs"]) >= SWEEP_EPOCH]
    if own:
        rows.append(("recipe (x1, as chosen)", recipe_line(own[0], "peak_lr"), recipe_line(own[0], "tie_embeddings"), own))
    for run in sorted(r for r in runs if r.startswith(f"{SWEEP_PREFIX}{size}-") and r != FULL_HORIZON):
        records = [r for r in runs[run].get("course", []) if len(r["epochs"]) >= SWEEP_EPOCH]
        if records:
            rows.append((sweep_setting(run, size), recipe_line(records[0], "peak_lr"),
                         recipe_line(records[0], "tie_embeddings"), records))
    return rows


def sweep_verdict(rows) -> str:
    """One computed sentence: which setting has the best mean over the seeds every setting finished, with the
    means it compares (they can differ from the table's when some settings have fewer seeds)."""
    if len(rows) < 2:
        return ""
    common = sorted(set.intersection(*({r["seed"] for r in records} for *_, records in rows)))
    if not common:
        return ""
    means = {setting: summary([metric(r, SWEEP_EPOCH, "valid") for r in records if r["seed"] in common])
             for setting, _, _, records in rows}
    recipe = rows[0][0]
    ranked = sorted(means, key=lambda k: -means[k]["mean"])
    where = (f"On seed {common[0]}, the only seed every setting has finished" if len(common) == 1 else
             f"Over seeds {', '.join(map(str, common))}, the ones every setting has finished")
    listing = ", ".join(f"{k.replace(' (x1, as chosen)', '')} {means[k]['mean']:.1f}" for k in ranked)
    best = ranked[0]
    if best == recipe:
        verdict = "the recipe's own setting is best"
    else:
        gap = means[best]["mean"] - means[recipe]["mean"]
        spread = max(means[best]["sd"], means[recipe]["sd"])
        within = ("within one standard deviation of the seeds" if len(common) > 1 and gap <= spread else
                  "beyond one standard deviation of the seeds" if len(common) > 1 else "one seed cannot tell")
        per_seed = {setting: {r["seed"]: metric(r, SWEEP_EPOCH, "valid") for r in records}
                    for setting, _, _, records in rows if setting in (best, recipe)}
        gaps = [per_seed[best][s] - per_seed[recipe][s] for s in common]
        paired = ", ".join(f"{g:+.1f}" for g in gaps)
        if len(gaps) > 1 and not (all(g > 0 for g in gaps) or all(g < 0 for g in gaps)):
            verdict = (f"{best} has the highest mean, {gap:.1f} above the recipe's setting, but the seeds disagree "
                       f"in sign (seed by seed {paired}): validation does not separate them")
        else:
            verdict = (f"{best} is best, {gap:.1f} above the recipe's setting ({within}; "
                       f"seed by seed {paired})")
    return f"{where}, validation BLEU after epoch {SWEEP_EPOCH}: {listing}; {verdict}."


SWEEP_SIZES = {"default": "`d_model` 64 with 2+2 layers (the recipe's anchor)",
               "tutorial": "`d_model` 256 with 3+3 layers (the tutorial size)"}


def sweep_sentences(runs) -> str:
    """Notebook 14's short account of the re-check (block ``nb14-sweep``): one sentence per size, computed."""
    lines = []
    for size, label in SWEEP_SIZES.items():
        rows = sweep_rows(runs, size)
        if len(rows) < 2:
            continue
        parts = [f"{setting.replace(' (x1, as chosen)', '')} ({peak}{', untied' if 'untied' in setting else ''}) "
                 f"{fmt(summary([metric(r, SWEEP_EPOCH, 'valid') for r in records]))}"
                 + (f" over {len(records)} seeds" if len(records) > 1 else "") for setting, peak, _, records in rows]
        lines.append(f"- {label}: validation BLEU after epoch {SWEEP_EPOCH}: " + "; ".join(parts) + ". "
                     + sweep_verdict(rows))
    _, whole = full_horizon(runs)
    if whole:
        lines.append("- The untied output over the whole 10-epoch schedule against the tied recipe (`--full-horizon`). " + whole)
    if not lines:
        return "No sweep results yet.\n"
    return "\n".join(lines) + "\n"


def render_sweep(runs) -> str:
    """The re-check of the recipe's constants on the validation split (``benchmarks/recipe_sweep.py``)."""
    lines = ["## The recipe re-checked on validation: `benchmarks/recipe_sweep.py`", "",
             f"The course pipeline with one recipe setting changed, scored on `val` only after epoch {SWEEP_EPOCH} "
             "(never on test). `default` is the recipe's anchor (`d_model` 64, 2+2 layers, a 4-epoch schedule); "
             f"`tutorial` is `d_model` 256 with 3+3 layers, a 10-epoch schedule stopped after epoch {SWEEP_EPOCH}. "
             "The recipe's row is the first epochs of the run of the same name (same flags and seeds). If the "
             "recipe's peak is best at both sizes, the recipe's combined rule (width and depth factors, with the warm-up, "
             "dropout and tying that come with them) holds within a factor of 2 at these two configurations; it does "
             "not isolate the width exponent (the sizes also differ in depth, dropout, tying and warm-up; peak x2 at "
             f"256 is what a 1/sqrt(`d_model`) rule would give). A {SWEEP_EPOCH}-epoch horizon favours fast early learning (higher peaks); the "
             "optimum of a 10-epoch run may lie lower.", ""]
    found = False
    for size in ("default", "tutorial"):
        rows = sweep_rows(runs, size)
        if len(rows) < 2:
            continue
        found = True
        lines += [f"### `{size}`", "", "| setting | peak lr | tied output | seeds | validation BLEU after epoch 2 | "
                  f"validation BLEU after epoch {SWEEP_EPOCH} |", "|---|---|---|---|---|---|"]
        for setting, peak, tied, records in rows:
            seeds = ", ".join(str(r["seed"]) for r in records)
            lines.append(f"| {setting} | {peak} | {tied} | {seeds} | {fmt(summary([metric(r, 2, 'valid') for r in records]))} | "
                         f"{fmt(summary([metric(r, SWEEP_EPOCH, 'valid') for r in records]))} |")
        verdict = sweep_verdict(rows)
        lines += ["", verdict, ""] if verdict else [""]
    if not found:
        lines.append("No sweep results yet.\n")
    table, sentence = full_horizon(runs)
    if table:
        lines += ["### The tied output over the whole schedule", "",
                  "Four epochs cannot settle the tying rule, so the untied output also trained over the whole "
                  "10-epoch schedule (`recipe_sweep.py --full-horizon`, validation only), beside the tied recipe's "
                  "`tutorial` run on the same seeds. Validation BLEU:", "", table, sentence, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


STRETCH_PREFIX = "stretch-"
STRETCH_TARGET = 40.0  # issue 21's stretch: mean lower-cased (detokenized) test_2016 BLEU >= 40 ...
STRETCH_BUDGET_MINUTES = 60.0  # ... within 60 minutes of training on 2 threads, over >= 3 seeds
STRETCH_SEEDS = 3


def is_stretch(run: str) -> bool:
    return run.startswith(STRETCH_PREFIX)


def _flag(record: dict, name: str, default=None):
    """The value after ``name`` in a record's course flags (``--subword-merges`` -> ``"4000"``)."""
    flags = record["settings"]["course_flags"]
    return flags[flags.index(name) + 1] if name in flags else default


def _batch_tokens(record: dict) -> str:
    """The recipe's batch size from a course record's description (``"1,951 target tokens"``)."""
    size = recipe_line(record, "batch")
    return f"{int(size):,} target tokens" if size.isdigit() else "?"


def _vocab(record: dict) -> str:
    """``"vocab 3969/3852"`` from a record's description."""
    return record["description"].splitlines()[0].split(", ")[1]


def stretch_result(pipelines: dict[str, list[dict]], reference: list[dict] | None = None) -> dict | None:
    """The stretch run's figures over its finished seeds, or None before the first seed finishes.

    Args:
        pipelines: the stretch run's records (``{"course": [...]}``).
        reference: the ``tutorial`` run's finished course records (words, 10 epochs), to split the gain on
            validation into its parts; optional.

    The decoding (greedy or the beam of ``--beam-last``) is chosen on validation after the last epoch; test
    is reported for that choice (both decodings of test are in the files). The target is judged on the
    project's figure, the detokenized lower-cased BLEU; the tokenized one is reported beside it.
    """
    rs = complete(pipelines.get("course", []))
    if not rs:
        return None
    if any(r["settings"] != rs[0]["settings"] for r in rs):
        raise ValueError("stretch run: its finished seeds were trained with different settings")
    last = len(rs[0]["epochs"])
    final = [r["epochs"][-1] for r in rs]
    beam = final[0].get("beam", {}).get("size")
    greedy_valid = summary([row["valid"]["bleu_lc"] for row in final])
    beam_valid = summary([row["beam"]["valid"]["bleu_lc"] for row in final]) if beam else None
    use_beam = bool(beam) and beam_valid["mean"] > greedy_valid["mean"]
    chosen = [row["beam"] if use_beam else row for row in final]
    minutes = [cumulative_seconds(r)[-1] / 60 for r in rs]
    out = {"seeds": [r["seed"] for r in rs], "epochs": last, "beam": beam, "use_beam": use_beam,
           "decoding": f"beam {beam}" if use_beam else "greedy",
           "greedy_valid": greedy_valid, "beam_valid": beam_valid,
           "test_lc": summary([row["test"]["bleu_lc"] for row in chosen]),
           "test_tok_lc": summary([row["test"]["bleu_tok_lc"] for row in chosen]),
           "test_cased": summary([row["test"]["bleu"] for row in chosen]),
           "greedy_test_lc": summary([row["test"]["bleu_lc"] for row in final]),
           "minutes": summary(minutes),
           "load": max((row.get("load_average") or 0.0) for r in rs for row in r["epochs"]),
           "threads": rs[0]["threads"], "parts": None}
    words = {r["seed"]: r for r in complete(reference or [])}
    common = [r for r in rs if r["seed"] in words]
    horizon = len(words[common[0]["seed"]]["epochs"]) if common else 0
    if common and horizon < last:  # on validation, greedy, over the seeds both runs finished
        mean = lambda values: statistics.fmean(values)  # noqa: E731
        at = {"words": mean(metric(words[r["seed"]], horizon, "valid") for r in common),
              "pieces": mean(metric(r, horizon, "valid") for r in common),
              "longer": mean(metric(r, last, "valid") for r in common),
              "beam": mean(r["epochs"][-1]["beam"]["valid"]["bleu_lc"] if use_beam else metric(r, last, "valid")
                           for r in common)}
        out["parts"] = {"seeds": len(common), "horizon": horizon, "subwords": at["pieces"] - at["words"],
                        "epochs": at["longer"] - at["pieces"], "decoding": at["beam"] - at["longer"]}
    if len(rs) < STRETCH_SEEDS:
        out["verdict"] = f"{len(rs)} of {STRETCH_SEEDS} seeds finished: no verdict yet"
    elif max(minutes) > STRETCH_BUDGET_MINUTES:
        out["verdict"] = (f"not met: the slowest seed trained {max(minutes):.0f} minutes, beyond the "
                          f"{STRETCH_BUDGET_MINUTES:.0f}-minute budget")
    elif out["test_lc"]["mean"] >= STRETCH_TARGET:
        out["verdict"] = (f"met (mean {out['test_lc']['mean']:.1f}, lowest seed {out['test_lc']['min']:.1f}; "
                          f"slowest seed {max(minutes):.0f} minutes)")
    else:
        out["verdict"] = f"not met: the mean is {out['test_lc']['mean']:.1f}"
    return out


def stretch_sentence(pipelines: dict[str, list[dict]], reference: list[dict] | None = None) -> str:
    """The computed account of the stretch run for the README and notebook 14."""
    res = stretch_result(pipelines, reference)
    if res is None:
        return ""
    n = len(res["seeds"])
    merges = int(_flag(complete(pipelines["course"])[0], "--subword-merges", 0))
    units = f"{merges:,} BPE merges per language instead of words" if merges else "words"
    decoding = (f"beam search of size {res['beam']}, which validation preferred to greedy" if res["use_beam"] else
                "greedy decoding, which validation preferred" + (f" to beam {res['beam']}" if res["beam"] else ""))
    seeds = f"seed {res['seeds'][0]} only" if n == 1 else f"mean ± s.d. (min–max) over {n} seeds"
    show = (lambda stat, digits=1: f"{stat['mean']:.{digits}f}") if n == 1 else fmt
    load = (f"; the minutes are an upper bound, as other work shared the machine at times: 1-minute load up to "
            f"{res['load']:.1f}" if res["load"] > res["threads"] else "")
    text = (f"The stretch run: the same tutorial-size model and recipe on {units}, for {res['epochs']} epochs "
            f"(validation scored after every epoch, the test split after the last one only), with {decoding}. Test BLEU ({seeds}): {show(res['test_lc'])} lower-cased on detokenized output "
            f"(greedy: {show(res['greedy_test_lc'])}), {show(res['test_tok_lc'])} tokenized lower-cased (how published "
            f"Multi30k figures are scored), {show(res['test_cased'])} cased; training took "
            f"{show(res['minutes'])} minutes per seed on {res['threads']} threads (evaluation not counted{load}).")
    parts = res["parts"]
    if parts:
        text += (" On validation (greedy unless stated; "
                 + ("the seed" if parts["seeds"] == 1 else f"means over the {parts['seeds']} seeds")
                 + " both runs finished), the gain over the words run splits into "
                 f"subwords {parts['subwords']:+.1f} (both after epoch {parts['horizon']}), epochs "
                 f"{parts['horizon']}–{res['epochs']} {parts['epochs']:+.1f} and the chosen decoding "
                 f"{parts['decoding']:+.1f}.")
    return text + (f" Against the target, a mean lower-cased detokenized test BLEU of at least {STRETCH_TARGET:.0f} "
                   f"over {STRETCH_SEEDS} seeds within {STRETCH_BUDGET_MINUTES:.0f} minutes of training: "
                   f"{res['verdict']}.")


def _agreement(pairs: list[tuple[float, float]], seed: int) -> str:
    """How close the command line's validation BLEU (printed to two decimals) came to the benchmark's."""
    gap = max(abs(ours - theirs) for ours, theirs in pairs)
    if gap < 0.005 + 1e-9:
        return f"; its validation BLEU was the benchmark's seed {seed}'s to the printed two decimals after all {len(pairs)} epochs"
    return f"; its validation BLEU stayed within {gap:.2f} of the benchmark's seed {seed} after every one of {len(pairs)} epochs"


def checkpoint_sentence(pipelines: dict[str, list[dict]], checks: list[dict] | None = None) -> str:
    """Which checkpoint a stretch run's figures come from, which one the training command line keeps, and (once
    ``benchmarks/cli_check.py`` has run it) what the command line delivered against the benchmark's same seed.

    Args:
        pipelines: the stretch run's records (``{"course": [...]}``).
        checks: that run's ``cli_check`` records (any seeds; unfinished ones are left out).
    """
    from course_lib.training import choose_epoch

    rs = complete(pipelines.get("course", []))
    if not rs:
        return ""
    last = len(rs[0]["epochs"])
    by_seed = {r["seed"]: r for r in rs}
    kept = {r["seed"]: chosen_epoch(r) for r in rs}
    earlier = [seed for seed, epoch in kept.items() if epoch != last]
    text = (f"Which checkpoint: these figures are the weights after the last epoch, {last} (the benchmark scores every "
            "epoch's weights and reports the last). `python -m course_lib.train` keeps by default the epoch with the "
            "highest validation BLEU (`--keep bleu`: greedy, lower-cased, after every epoch; the rule that picks the "
            f"epochs chosen on validation here), on seed{'s' if len(rs) > 1 else ''} "
            f"{', '.join(str(seed) for seed in kept)} epoch{'s' if len(rs) > 1 else ''} "
            f"{', '.join(str(epoch) for epoch in kept.values())}")
    if earlier:
        text += (f" (seed{'s' if len(earlier) > 1 else ''} {', '.join(map(str, earlier))}: an earlier epoch, "
                 "whose test figure the benchmark did not score)")
    text += ("; `--keep last` keeps the last epoch, the benchmark's checkpoint on every seed; `--keep loss` keeps "
             "the lowest validation loss, which with label smoothing can bottom out epochs before BLEU peaks.")
    for check in (c for c in checks or [] if c.get("complete") and c["seed"] in by_seed):
        bench, test = by_seed[check["seed"]]["epochs"][-1], check["test"]
        beam = int(check["flags"][check["flags"].index("--beam") + 1]) if "--beam" in check["flags"] else 4
        ours = test.get("test_bleu_lc_beam") if beam > 1 else test["test_bleu_lc_greedy"]
        theirs = bench["beam"]["test"]["bleu_lc"] if beam > 1 and bench.get("beam", {}).get("size") == beam else None
        by_loss = choose_epoch(check["epochs"], "loss")
        common = [(row["valid_bleu_lc"], metric(by_seed[check["seed"]], row["epoch"], "valid"))
                  for row in check["epochs"] if row.get("valid_bleu_lc") is not None and row["epoch"] <= last]
        load = check["load_average"]
        decoding = f"with beam {beam}" if beam > 1 else "greedy"
        threads = by_seed[check["seed"]]["threads"]
        text += (" Checked by running the command as the README gives it"
                 + (f" but with `--threads {check['threads']}` for {threads}" if check["threads"] != threads else "")
                 + f" (`benchmarks/cli_check.py`, seed "
                 f"{check['seed']}, {check['started'][:10]}: {check['train_seconds'] / 60:.1f} minutes of training on "
                 f"{check['threads']} thread{'s' if check['threads'] != 1 else ''}" + (f", 1-minute load {load['mean']:.1f} on average, up to {load['max']:.1f}"
                                                  if load.get("samples") else "")
                 + f"): it kept epoch {check['kept_epoch']} of {len(check['epochs'])} by `--keep {check['keep']}`"
                 + (f" (the lowest validation loss was epoch {by_loss['epoch']}'s)" if by_loss["epoch"] != check["kept_epoch"]
                    else "")
                 + (_agreement(common, check["seed"]) if common else "")
                 + f"; test BLEU {ours:.1f} lower-cased {decoding} (greedy {test['test_bleu_lc_greedy']:.1f}), against "
                 + (f"{theirs:.1f} {decoding} (greedy {bench['test']['bleu_lc']:.1f})" if theirs is not None
                    else f"greedy {bench['test']['bleu_lc']:.1f}")
                 + f" for the benchmark's seed {check['seed']}.")
    return text


def cli_check_table(pipelines: dict[str, list[dict]], check: dict) -> str:
    """Epoch by epoch, what the command line printed beside the benchmark's validation BLEU for the same seed."""
    bench = {r["seed"]: r for r in complete(pipelines.get("course", []))}.get(check["seed"])
    lines = ["| epoch | command line: valid loss | valid BLEU | benchmark: valid BLEU | kept |", "|---|---|---|---|---|"]
    for row in check["epochs"]:
        theirs = (f"{metric(bench, row['epoch'], 'valid'):.2f}" if bench and row["epoch"] <= len(bench["epochs"])
                  else "—")
        ours = "—" if row.get("valid_bleu_lc") is None else f"{row['valid_bleu_lc']:.2f}"
        lines.append(f"| {row['epoch']} | {row['valid_loss']:.3f} | {ours} | {theirs} | "
                     f"{'yes' if row['epoch'] == check.get('kept_epoch') else ''} |")
    return "\n".join(lines) + "\n"


def render_stretch(run: str, pipelines: dict[str, list[dict]], reference: list[dict] | None = None,
                   checks: list[dict] | None = None) -> str:
    """The stretch run: validation every epoch, test (greedy and beam) after the last epoch only; with ``checks``
    (``benchmarks/cli_check.py``'s records for this run) what the command line delivered."""
    parts = [run_header(run, pipelines).replace("### Run", "### Stretch run", 1)]
    done = complete(pipelines.get("course", []))
    first = (done or next(iter(pipelines.values())))[0]
    args = first["settings"]["args"]
    merges = int(_flag(first, "--subword-merges", 0))
    words = complete(reference or [])
    budget = ""
    if words:
        per_epoch = statistics.fmean(row["train_seconds"] for r in words for row in r["epochs"])
        budget = (f" ({args['epochs']} × the `tutorial` run's mean {per_epoch:.0f} s per epoch = "
                  f"{args['epochs'] * per_epoch / 60:.0f} minutes, leaving room for a slower machine)")
    parts.append(f"Set before the first seed ran: {merges:,} BPE merges per language (the number the README "
                 f"already suggested), {args['epochs']} epochs{budget}, and the beam size.\n")
    differs = (f"BPE pieces instead of words ({_vocab(first)}"
               + (f" against {_vocab(words[0])}" if words else "")
               + f"; `min_freq` 2 also drops pieces seen once), so {first['parameters']:,} parameters"
               + (f" instead of {words[0]['parameters']:,}" if words else "")
               + f" and batches of {_batch_tokens(first)}"
               + (f" instead of {_batch_tokens(words[0])} (the recipe sizes them in target tokens, here pieces)"
                  if words else ""))
    parts.append(f"Options: the test split scored after the last epoch only (`--test-last-only`), with greedy "
                 f"decoding and beam search of size {args.get('beam_last', '—')} (`--beam-last`), and validation "
                 f"with both; which decoding is reported is decided on validation. What differs from the `tutorial` "
                 f"run's course pipeline: {differs}; {args['epochs']} epochs; the decoding. The model's shape, the "
                 "recipe's rules, dropout and `min_freq` are the same flags. The run trained the course pipeline "
                 "alone (not interleaved with other pipelines), one seed after the other.\n")
    table = {"course": done} if done else pipelines
    parts += [f"Validation BLEU (lower-cased, greedy) after each epoch{', finished seeds' if done else ''}:\n",
              epoch_table(table, "valid")]
    res = stretch_result(pipelines, reference)
    if res:
        beam = res["beam"]
        lines = ["| seed | training minutes | valid greedy | valid beam | test (chosen decoding): lower-cased | "
                 "tokenized lower-cased | cased | test, greedy | best validation epoch |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for r in done:
            row = r["epochs"][-1]
            chosen = row["beam"] if res["use_beam"] else row
            lines.append(f"| {r['seed']} | {cumulative_seconds(r)[-1] / 60:.1f} | {row['valid']['bleu_lc']:.1f} | "
                         + (f"{row['beam']['valid']['bleu_lc']:.1f}" if beam else "—")
                         + f" | {chosen['test']['bleu_lc']:.1f} | {chosen['test']['bleu_tok_lc']:.1f} | "
                         f"{chosen['test']['bleu']:.1f} | {row['test']['bleu_lc']:.1f} | {chosen_epoch(r)} |")
        parts += ["\nAfter the last epoch, seed by seed (decoding chosen on validation: "
                  f"{res['decoding']}; validation greedy {fmt(res['greedy_valid'])}"
                  + (f", beam {beam} {fmt(res['beam_valid'])}" if beam else "") + "):\n", "\n".join(lines) + "\n",
                  "\n" + stretch_sentence(pipelines, reference) + "\n",
                  "\n" + checkpoint_sentence(pipelines, checks) + "\n"]
        for check in (c for c in checks or [] if c.get("complete")):
            parts += [f"\nThe command line, seed {check['seed']} (`{' '.join(check['command'])}`; DATA is the "
                      "Multi30k folder), epoch by epoch:\n", cli_check_table(pipelines, check)]
        signatures = first["epochs"][-1]["test"]["signatures"] if "test" in first["epochs"][-1] else {}
        if signatures:
            parts.append("\nSignatures: " + "; ".join(f"{k} `{v}`" for k, v in signatures.items()) + ".\n")
    return "\n".join(p.rstrip("\n") + "\n" for p in parts)


def render_benchmarks_readme(runs, checks: dict[str, list[dict]] | None = None) -> str:
    out = ["# Benchmarks", "",
           "<!-- generated by benchmarks/report.py from benchmarks/results/; do not edit by hand -->", "",
           "Every figure below is computed by `python benchmarks/report.py` from the results files in",
           "`benchmarks/results/` (one JSON file per pipeline and seed, with the commit, date, machine, threads,",
           "arguments, and per epoch: steps, training seconds, tokens/s, validation and test BLEU with their",
           "sacreBLEU signatures). `tests/test_real_data_benchmark.py` fails when this page, the README's",
           "real-data block or notebook 14's disagree with those files.", "",
           "## Real data: `benchmarks/real_data.py`", "",
           "Three pipelines trained on the same files and threads, interleaved epoch by epoch in one process where "
           "a run's header says so (`benchmarks/pipelines.py`). What differs between them:", "", DIFFERENCES,
           "`course` vs `nn.Transformer + course recipe` measures the implementation (and `nn.Transformer`'s extra "
           "final LayerNorm per stack); `nn.Transformer + course recipe` vs `classic recipe` measures the recipe. The classic recipe outputs lower-cased words, so only "
           "lower-cased scores compare all three. BLEU: greedy output, detokenized, `<unk>` kept, against the raw "
           "reference lines (`course_lib.evaluation.score_outputs`); the tokenized lower-cased column is computed "
           "the way published Multi30k figures are. Best epochs are chosen on `val`; `test_2016_flickr` is "
           "reported for them and for the last epoch. " + TEST_CAVEAT, "",
           "Figures from before these results files (single runs, read off the test split, some with an older "
           "initialisation) were withdrawn from the README and notebook 14; they are in the git history "
           "(commit 617f3d6 and before).", ""]
    if not runs:
        out.append("No results yet.\n")
    for run, pipelines in sorted(runs.items()):
        if not is_sweep(run) and not is_stretch(run):
            out.append(render_run(run, pipelines))
    out.append(render_sweep(runs))
    stretch = sorted(run for run in runs if is_stretch(run))
    if stretch:
        out += ["## Stretch: 40 BLEU within an hour of CPU training", "",
                f"The target: a mean lower-cased `test_2016_flickr` BLEU of at least {STRETCH_TARGET:.0f} over "
                f"{STRETCH_SEEDS} seeds within {STRETCH_BUDGET_MINUTES:.0f} minutes of training on 2 threads "
                "(evaluation not counted). Every choice of this run was fixed before it started or is made on "
                "validation (the decoding: greedy, or beam search with the course's length penalty 0.6); the test "
                "split is scored after the last epoch only, with both decodings, and the one validation chose is "
                "reported. The target is judged on the project's figure, lower-cased BLEU on detokenized output; "
                "the tokenized figure is given beside it. " + TEST_CAVEAT + " Once the training command line has been "
                "run as the README gives it (`benchmarks/cli_check.py`, results in `benchmarks/results/cli_check/`), "
                "a run's section compares what it printed and scored with the benchmark's same seed.", ""]
    for run in stretch:
        out.append(render_stretch(run, runs[run], runs.get("tutorial", {}).get("course"), (checks or {}).get(run)))
    out.append(render_throughput(load_records("throughput")))
    out.append(render_time_to_bleu(load_records("time_to_bleu")))
    return "\n".join(out).rstrip("\n") + "\n"


def load_records(benchmark: str) -> list[dict]:
    """Every results file of ``benchmarks/results/BENCHMARK/`` (throughput, time_to_bleu), oldest first."""
    folder = RESULTS.parent / benchmark
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def render_throughput(records: list[dict]) -> str:
    lines = ["## Throughput: `benchmarks/throughput.py`", "",
             "Training and inference tokens per second of the two implementations on the same synthetic batches, "
             "alternating in short blocks in one process. A ratio compares runs of the same file only.", ""]
    if not records:
        return "\n".join([*lines, "No results files yet.", ""])
    lines += ["| date | commit | size | threads | output layer (ours / torch) | train ours/torch (median of rounds) "
              "| inference ours/torch |", "|---|---|---|---|---|---|---|"]
    for r in records:
        res, args = r["results"], r["arguments"]
        tied = r.get("tied_output", {})
        layer = f"{'tied' if tied.get('ours') else 'untied'} / {'tied' if tied.get('torch') else 'untied'}"
        cells = [f"{res[phase]['ratio']:.2f}x ({res[phase]['median_round_ratio']:.2f}x)" if phase in res else "—"
                 for phase in ("train", "eval")]
        lines.append(f"| {r['started'][:10]} | {r['commit'][:7]} | {args['size']} | {r['threads']} | {layer} | "
                     f"{cells[0]} | {cells[1]} |")
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["arguments"]["size"], r["threads"]), []).append(r)
    summaries = []
    for (size, threads), rs in sorted(groups.items()):
        if len(rs) < 3:
            continue
        cells = [fmt(summary([r["results"][phase]["median_round_ratio"] for r in rs]), 2)
                 if all(phase in r["results"] for r in rs) else "—" for phase in ("train", "eval")]
        summaries.append(f"- `{size}`, {threads} thread{'s' if threads > 1 else ''}, {len(rs)} runs: ours/torch "
                         f"(median of rounds) {cells[0]} in training, {cells[1]} in inference (>1: ours faster).")
    if summaries:
        lines += ["", "Mean ± s.d. (min–max) over the runs of each setting:", "", *summaries]
    return "\n".join(lines) + "\n"


def render_time_to_bleu(records: list[dict]) -> str:
    lines = ["## Time to BLEU on the toy corpus: `benchmarks/time_to_bleu.py`", "",
             "Training seconds until the validation BLEU first reaches 90 and 97, both models alternating epoch by "
             "epoch in one process. BLEU is checked every `--eval-every` seconds, so each time is known only to "
             "that resolution, and ratios within one or two checks of 1.0x mean parity.", ""]
    if not records:
        return "\n".join([*lines, "No results files yet.", ""])
    lines += ["| date | commit | seed | clock | threads | check every | course t(97) | nn.Transformer t(97) | "
              "ratio nn.Transformer / course |", "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        args = r["arguments"]
        by_name = {x["name"]: x for x in r["results"]}
        ours, theirs = by_name.get("course_lib", {}), by_name.get("nn.Transformer", {})
        t_ours, t_theirs = ours.get("t97", float("nan")), theirs.get("t97", float("nan"))
        ratio = t_theirs / t_ours if t_ours and t_ours == t_ours and t_theirs == t_theirs else float("nan")
        lines.append(f"| {r['started'][:10]} | {r['commit'][:7]} | {r['seed']} | {args['clock']} | {r['threads']} | "
                     f"{args['eval_every']:g} s | {t_ours:.1f} s | {t_theirs:.1f} s | {ratio:.2f}x |")
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["arguments"]["clock"], r["threads"]), []).append(r)
    summaries = []
    for (clock, threads), rs in sorted(groups.items()):
        for level in ("t90", "t97"):
            times = [({x["name"]: x for x in r["results"]}.get("course_lib", {}).get(level, math.nan),
                      {x["name"]: x for x in r["results"]}.get("nn.Transformer", {}).get(level, math.nan)) for r in rs]
            reached = [(a, b) for a, b in times if a == a and b == b and a > 0]
            if len(rs) < 3:
                continue
            if len(reached) < len(rs):
                summaries.append(f"- {clock} clock, {threads} thread{'s' if threads > 1 else ''}, BLEU {level[1:]}: "
                                 f"both models reached it in {len(reached)} of {len(rs)} seeds; no mean.")
                continue
            summaries.append(f"- {clock} clock, {threads} thread{'s' if threads > 1 else ''}, BLEU {level[1:]}, "
                             f"{len(rs)} seeds: course {fmt(summary([a for a, _ in reached]))} s, nn.Transformer "
                             f"{fmt(summary([b for _, b in reached]))} s; ratio nn.Transformer / course "
                             f"{fmt(summary([b / a for a, b in reached]), 2)} (>1: the course model got there sooner).")
    if summaries:
        lines += ["", "Mean ± s.d. (min–max) over seeds:", "", *summaries]
    return "\n".join(lines) + "\n"


def headline(runs, audience: str, checks: dict[str, list[dict]] | None = None) -> str:
    """The short block for the README (``audience="readme"``) or notebook 14 (``"notebook"``); ``checks``: the
    ``cli_check`` records by run (:func:`load_cli_checks`)."""
    lines = []
    tutorial = runs.get("tutorial")
    if tutorial:
        lines.append("On Multi30k (`test_2016_flickr`, lower-cased sacreBLEU on detokenized greedy output), the "
                     "tutorial size (`d_model` 256, 8 heads, `d_ff` 512, 3+3 layers) after 10 epochs on 2 threads:")
        lines.append("")
        lines.append(final_table(tutorial).rstrip("\n"))
        for other in ("classic", "torch_recipe"):
            sentence = comparison(tutorial, "course", other)
            if sentence:
                lines += ["", sentence]
    for run in sorted(r for r in runs if is_stretch(r)):
        sentence = stretch_sentence(runs[run], runs.get("tutorial", {}).get("course"))
        if sentence:
            lines += ["", sentence, "", checkpoint_sentence(runs[run], (checks or {}).get(run))]
    default = runs.get("default")
    if default and complete(default.get("course", [])):
        rs = complete(default["course"])
        last = len(rs[0]["epochs"])
        lines += ["", f"The default command (the default model; only the data flags, `--epochs {last} --time-budget 0`): "
                  f"test BLEU {fmt(summary([metric(r, last, 'test') for r in rs]))} lower-cased, "
                  f"{fmt(summary([metric(r, last, 'test', 'bleu') for r in rs]))} cased after {last} epochs "
                  f"({len(rs)} seeds)."]
    seconds = {name: [row["train_seconds"] for r in complete(runs.get(name, {}).get("course", [])) for row in r["epochs"]]
               for name in ("tutorial", "default")}
    if all(seconds.values()):
        spread = max(max(v) / min(v) for v in seconds.values())
        lines += ["", f"Training time on 2 threads of a shared 2-core machine (the course pipeline, mean over every "
                  f"epoch of every seed): {statistics.fmean(seconds['tutorial']):.0f} s per epoch at the tutorial "
                  f"size, {statistics.fmean(seconds['default']):.0f} s for the default model (evaluation not "
                  f"included; the slowest of these epochs took {spread:.1f}x as long as the fastest of the same size, "
                  "when other work shared the machine)."]
    if audience == "readme" and any(is_sweep(run) for run in runs):
        lines += ["", "The recipe's peak (and at the tutorial size its tied output layer) re-checked on the validation "
                  "split (`benchmarks/recipe_sweep.py`, 4-epoch runs; the test split is not used):", "", sweep_sentences(runs).rstrip("\n")]
    if not lines:
        lines.append("No real-data results yet.")
    where = ("Per-epoch tables, validation scores, training times and what differs between the pipelines: "
             "[benchmarks/README.md](benchmarks/README.md).") if audience == "readme" else (
             "Per-epoch tables and training times: `benchmarks/README.md` in the course repository.")
    lines += ["", "Mean ± s.d. (min–max) over the seeds that finished; the best epoch is chosen on the validation "
              "split. " + TEST_CAVEAT + " " + where]
    return "\n".join(lines) + "\n"


def corpus_blocks(runs=None) -> dict[str, str]:
    """Notebook 14's sentences and table about the corpus, from ``benchmarks/results/corpus_facts/multi30k.json``
    (and, for the model sizes and seconds per epoch, the ``default`` and ``tutorial`` runs in ``runs``)."""
    path = RESULTS.parent / "corpus_facts" / "multi30k.json"
    if not path.is_file():
        missing = "(run `benchmarks/corpus_facts.py`: no results file yet)\n"
        return dict.fromkeys(("nb14-corpus", "nb14-rare", "nb14-subwords", "nb14-tied"), missing)
    f = json.loads(path.read_text())["facts"]
    toy, words, pieces, model = f["toy"], f["words"], f.get("subwords"), f["tutorial_model"]
    pct = lambda x: f"{100 * x:.0f}%"  # noqa: E731
    unk = words["unknown"]["test"]
    toy_unk = toy["words_min_freq_1"]["unknown_test"]
    course_runs = {name: complete((runs or {}).get(name, {}).get("course", [])) for name in ("default", "tutorial")}
    default_params = course_runs["default"][0]["parameters"] if course_runs["default"] else None
    seconds = {name: statistics.fmean(row["train_seconds"] for r in rs for row in r["epochs"])
               for name, rs in course_runs.items() if rs}
    blocks = {"nb14-corpus": (
        "| | toy corpus | Multi30k |\n|---|---|---|\n"
        f"| training pairs | {toy['train_pairs']:,} | {f['train_pairs']:,} |\n"
        f"| words seen only once (German / English) | {pct(toy['singleton_share']['src'])} / "
        f"{pct(toy['singleton_share']['tgt'])} | {pct(f['singleton_share']['src'])} / {pct(f['singleton_share']['tgt'])} |\n"
        f"| vocabulary (German / English; Multi30k with `min_freq` 2) | {toy['words_min_freq_1']['vocab']['src']:,} / "
        f"{toy['words_min_freq_1']['vocab']['tgt']:,} | {words['vocab']['src']:,} / {words['vocab']['tgt']:,} |\n"
        f"| test tokens that become `<unk>` (German / English) | {100 * toy_unk['src']:.1f}% / {100 * toy_unk['tgt']:.1f}% | "
        f"{100 * unk['src']:.1f}% / {100 * unk['tgt']:.1f}% |\n"
        f"| model sizes trained on it here | {toy['default_model_parameters'] / 1e6:.1f} M parameters (the default) | "
        + (f"{default_params / 1e6:.1f} M (the default, with Multi30k's vocabularies) and " if default_params else "")
        + f"{model['parameters_tied'] / 1e6:.1f} M (`d_model` 256, 3+3 layers, shared output matrix) |\n"
        "| one epoch on 2 CPU cores | seconds | "
        + (f"{seconds['default']:.0f} s (the default) and {seconds['tutorial']:.0f} s (`d_model` 256), mean of the "
           "benchmark's epochs (see the last section) |\n" if len(seconds) == 2 else "minutes (see the last section) |\n"))}
    shrink = 1 - words["vocab"]["tgt"] / words["vocab_min_freq_1"]["tgt"]
    blocks["nb14-rare"] = (
        f"On Multi30k, {pct(f['singleton_share']['src'])} of the German words and {pct(f['singleton_share']['tgt'])} "
        f"of the English ones occur once in the training split. With `min_freq` 2 they become `<unk>`, which shrinks "
        f"the English vocabulary (and so the output layer) by {pct(shrink)} but leaves {100 * unk['src']:.1f}% of the "
        f"German test tokens unknown.\n")
    if pieces:
        longer = pieces["mean_target_length"] / words["mean_target_length"] - 1
        punk = pieces["unknown"]["test"]
        blocks["nb14-subwords"] = (
            f"Measured on Multi30k with {pieces['merges']:,} merges: vocabularies of {pieces['vocab']['src']:,} / "
            f"{pieces['vocab']['tgt']:,} pieces, {100 * punk['src']:.2f}% / {100 * punk['tgt']:.2f}% unknown test tokens "
            f"instead of {100 * unk['src']:.1f}% / {100 * unk['tgt']:.1f}%, for targets {pct(longer)} longer "
            f"({pieces['mean_target_length']:.1f} pieces per sentence instead of {words['mean_target_length']:.1f} words).\n")
    else:
        blocks["nb14-subwords"] = "(no subword facts in the results file)\n"
    removed = model["parameters_untied"] - model["parameters_tied"]
    blocks["nb14-tied"] = (
        f"At the tutorial size on Multi30k the shared matrix saves `d_model` × {words['vocab']['tgt']:,} = {removed / 1e6:.1f} M "
        f"of the {model['parameters_untied'] / 1e6:.1f} M weights.\n")
    return blocks


# ----------------------------------------------------------------------------- writing

def replace_block(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- results:begin {re.escape(name)} -->\n).*?(<!-- results:end -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"no '<!-- results:begin {name} -->' ... '<!-- results:end -->' block found")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text, count=1)


def notebook_with_blocks(nb: dict, blocks: dict[str, str]) -> dict:
    """``nb`` with each ``<!-- results:begin NAME -->`` block of its markdown cells replaced by ``blocks[NAME]``."""
    for name, body in blocks.items():
        for cell in nb["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown" and f"<!-- results:begin {name} -->" in text:
                cell["source"] = replace_block(text, name, body).splitlines(keepends=True)
                break
        else:
            raise ValueError(f"{NOTEBOOK.name}: no markdown cell with '<!-- results:begin {name} -->'")
    return nb


def expected(root: Path = RESULTS) -> dict[Path, str]:
    """What each generated file should contain now."""
    runs, checks = load_runs(root), load_cli_checks(root)
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    nb = notebook_with_blocks(nb, {MARKERS["notebook"]: headline(runs, "notebook", checks),
                                   "nb14-sweep": sweep_sentences(runs),
                                   **corpus_blocks(runs)})
    return {
        BENCH_README: render_benchmarks_readme(runs, checks),
        README: replace_block(README.read_text(encoding="utf-8"), MARKERS["readme"], headline(runs, "readme", checks)),
        NOTEBOOK: json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n",
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report differences instead of writing; exit 1 if any")
    args = parser.parse_args(argv)
    stale = []
    for path, text in expected().items():
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print("out of date with benchmarks/results (run python benchmarks/report.py): "
              + ", ".join(map(str, stale)), file=sys.stderr)
        return 1
    print(("rewrote " + ", ".join(map(str, stale))) if stale and not args.check else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
