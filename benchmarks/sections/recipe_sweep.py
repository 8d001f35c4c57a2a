"""The recipe re-checked on validation (``benchmarks/recipe_sweep.py``'s ``sweep-*`` runs of the real-data
benchmark): a table per size, the verdict, the tied output over the whole schedule (``benchmarks/README.md``), the
README's sentences (:func:`sweep_sentences`) and notebook 14's short table (:func:`sweep_summary`).
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


def means_over_common_seeds(rows) -> tuple[list[int], dict[str, dict]]:
    """``(seeds, {setting: summary})``: each setting's validation BLEU after :data:`SWEEP_EPOCH` over the seeds
    every setting of ``rows`` has finished (no seeds: an empty dict)."""
    common = sorted(set.intersection(*({r["seed"] for r in records} for *_, records in rows))) if rows else []
    means = {setting: summary([metric(r, SWEEP_EPOCH, "valid") for r in records if r["seed"] in common])
             for setting, _, _, records in rows} if common else {}
    return common, means


def sweep_verdict(rows) -> str:
    """One computed sentence: which setting has the best mean over the seeds every setting finished, with the
    means it compares (they can differ from the table's when some settings have fewer seeds)."""
    if len(rows) < 2:
        return ""
    common, means = means_over_common_seeds(rows)
    if not common:
        return ""
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


PEAK_COLUMNS = ("peak x0.5", "recipe (x1, as chosen)", "peak x2")


def sweep_summary(runs) -> str:
    """Notebook 14's short account of the re-check (block ``nb14-sweep``): the recipe's peak, half and double it,
    one row per size, which of them is best, and the tied output over the whole schedule in one sentence."""
    lines = [f"| validation BLEU after epoch {SWEEP_EPOCH} | peak x0.5 | the recipe's peak | peak x2 |",
             "|---|---|---|---|"]
    best_at = {}
    for size, label in SWEEP_SIZES.items():
        rows = [row for row in sweep_rows(runs, size) if row[0] in PEAK_COLUMNS]
        if len(rows) < 2:
            continue
        by_setting = {setting: (peak, records) for setting, peak, _, records in rows}
        cells = [f"{by_setting[c][0]}: {fmt(summary([metric(r, SWEEP_EPOCH, 'valid') for r in by_setting[c][1]]))}"
                 if c in by_setting else "—" for c in PEAK_COLUMNS]
        seeds = "/".join(str(n) for n in sorted({len(records) for *_, records in rows}))
        name = label.split(" (")[0].replace(" with ", ", ")
        lines.append(f"| {name} ({seeds} seeds) | " + " | ".join(cells) + " |")
        common, means = means_over_common_seeds(rows)
        if common:
            best = max(means, key=lambda k: means[k]["mean"])
            best_at[name] = "the recipe's peak" if best == PEAK_COLUMNS[1] else best
    if not best_at:
        return "No sweep results yet.\n"
    if set(best_at.values()) == {"the recipe's peak"}:
        verdict = f"the recipe's peak has the highest mean at {'both sizes' if len(best_at) == 2 else 'every size'}"
    else:
        verdict = "the highest mean: " + "; ".join(f"{name}, {best}" for name, best in best_at.items())
    text = ("\n".join(lines) + "\n\nMean ± s.d. (min–max) over the seeds; over the seeds every setting finished, "
            + verdict + ".")
    _, whole = full_horizon(runs)
    if whole:
        text += (" The recipe's tied output layer against an untied one over the whole 10-epoch schedule at `d_model` "
                 "256: " + whole[0].lower() + whole[1:])
    return text + "\n"


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
