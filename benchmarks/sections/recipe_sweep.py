"""The recipe re-checked on validation (``benchmarks/recipe_sweep.py``'s ``sweep-*`` runs of the real-data
benchmark): a table per size, the verdict, the tied output over the whole schedule, and notebook 14's sentences.
"""

from __future__ import annotations

import statistics

from benchmarks.sections.common import complete, fmt, metric, recipe_line, summary

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


def section(runs, checks=None) -> list[str]:
    """``benchmarks/README.md``'s recipe-sweep section."""
    return [render_sweep(runs)]
