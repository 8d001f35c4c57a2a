"""The real-data section (``benchmarks/real_data.py``): what differs between the three pipelines, each run's
tables and comparisons, the block the README quotes (:func:`headline`), which also carries the stretch and
recipe-sweep sentences (those runs are real-data runs too), and notebook 14's few lines (:func:`notebook_summary`).
"""

from __future__ import annotations

import statistics

from benchmarks.sections.cli_check import checkpoint_sentence
from benchmarks.sections.common import (
    PIPELINE_NAMES,
    PIPELINE_SHORT,
    TEST_CAVEAT,
    complete,
    cumulative_seconds,
    epoch_table,
    final_table,
    fmt,
    interleaved,
    metric,
    run_header,
    score_at_time,
    summary,
)
from benchmarks.sections.recipe_sweep import is_sweep, sweep_sentences
from benchmarks.sections.stretch import is_stretch, stretch_result, stretch_sentence

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


def section(runs, checks=None) -> list[str]:
    """``benchmarks/README.md``'s real-data section: the pipelines, then every run that is not a sweep or a stretch."""
    out = ["## Real data: `benchmarks/real_data.py`", "",
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
    return out


def headline(runs, checks: dict[str, list[dict]] | None = None) -> str:
    """The README's block (notebook 14 has the shorter :func:`notebook_summary`); ``checks``: the ``cli_check``
    records by run (:func:`load_cli_checks`)."""
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
    if any(is_sweep(run) for run in runs):
        lines += ["", "The recipe's peak (and at the tutorial size its tied output layer) re-checked on the validation "
                  "split (`benchmarks/recipe_sweep.py`, 4-epoch runs; the test split is not used):", "", sweep_sentences(runs).rstrip("\n")]
    if not lines:
        lines.append("No real-data results yet.")
    where = ("Per-epoch tables, validation scores, training times and what differs between the pipelines: "
             "[benchmarks/README.md](benchmarks/README.md).")
    lines += ["", "Mean ± s.d. (min–max) over the seeds that finished; the best epoch is chosen on the validation "
              "split. " + TEST_CAVEAT + " " + where]
    return "\n".join(lines) + "\n"


def notebook_summary(runs, details: str = "benchmarks/README.md") -> str:
    """Notebook 14's block (``nb14``): one table of the headline figures with their spread over seeds, two
    sentences of caveats and a link to the rest (``details``: the address of ``benchmarks/README.md``)."""
    rows = []
    per_epoch = lambda rs: statistics.fmean(row["train_seconds"] for r in rs for row in r["epochs"])  # noqa: E731
    default = complete(runs.get("default", {}).get("course", []))
    if default:
        last = len(default[0]["epochs"])
        rows.append(("the default model (`d_model` 64, 2+2 layers)", last, default,
                     fmt(summary([metric(r, last, "test") for r in default])), f"{per_epoch(default):.0f}"))
    tutorial = runs.get("tutorial", {})
    for pipeline, name in (("course", "the tutorial size (`d_model` 256, 3+3 layers)"),
                           ("torch_recipe", "the same, as `nn.Transformer`"),
                           ("classic", "the same, `nn.Transformer` with the classic recipe")):
        rs = complete(tutorial.get(pipeline, []))
        if rs:
            last = len(rs[0]["epochs"])
            rows.append((name, last, rs, fmt(summary([metric(r, last, "test") for r in rs])), f"{per_epoch(rs):.0f}"))
    for run in sorted(r for r in runs if is_stretch(r)):
        res = stretch_result(runs[run], complete(tutorial.get("course", [])))
        if res:
            rs = complete(runs[run]["course"])
            merges = rs[0]["settings"]["course_flags"]
            merges = int(merges[merges.index("--subword-merges") + 1]) if "--subword-merges" in merges else 0
            units = f"{merges:,} BPE merges" if merges else "words"
            rows.append((f"the tutorial size on {units}, {res['decoding']}", res["epochs"], rs, fmt(res["test_lc"]),
                         f"{per_epoch(rs):.0f}"))
    if not rows:
        return "No real-data results yet.\n"
    lines = ["| run on Multi30k | epochs | seeds | test BLEU | training s per epoch |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {epochs} | {len(rs)} | {bleu} | {seconds} |" for name, epochs, rs, bleu, seconds in rows]
    lines += ["", "Test BLEU: `test_2016_flickr`, lower-cased sacreBLEU on detokenized output, the weights after the last "
              "epoch, mean ± s.d. (min–max) over the seeds. Seconds: training only, on 2 threads of a 2-core machine that "
              "other work shared at times. The recipe's constants were first tuned on this test split, so its figures may "
              "be slightly optimistic. Everything else (per-epoch tables, validation scores, what differs between the "
              f"pipelines, seed-by-seed comparisons, the command-line check): [benchmarks/README.md]({details})."]
    return "\n".join(lines) + "\n"
