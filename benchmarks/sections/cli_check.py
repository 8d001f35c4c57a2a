"""What the training command line delivered (``benchmarks/cli_check.py``'s results files) against the
benchmark's same seed: the checkpoint sentence and the epoch-by-epoch table of the stretch section.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.sections.common import RESULTS, chosen_epoch, complete, metric

CLI_CHECKS = "cli_check"  # a folder beside RESULTS: benchmarks/cli_check.py's results files


SPEED = "speed"  # inside CLI_CHECKS: RUN-seedN.json, the benchmark's own pipeline for one epoch, run on a check's day


def load_cli_checks(root: Path = RESULTS) -> dict[str, list[dict]]:
    """``{run: [cli_check record per seed, sorted by seed]}`` from the ``cli_check`` folder beside ``root``.

    A speed reference (``cli_check/speed/RUN-seedN.json``: a ``benchmarks.real_data`` record of the same run's
    pipeline, seed and thread count, stopped after one epoch, run on the same machine the day a check ran) is
    attached to that day's check as ``speed_reference``.
    """
    folder = root.parent / CLI_CHECKS
    checks: dict[str, list[dict]] = {}
    for path in sorted(folder.glob("*-seed*.json")):
        record = json.loads(path.read_text())
        checks.setdefault(record["run"], []).append(record)
    for path in sorted((folder / SPEED).glob("*-seed*.json")):
        run, reference = path.stem.rsplit("-seed", 1)[0], json.loads(path.read_text())
        for check in checks.get(run, []):
            if (check["seed"], check["threads"], check["started"][:10]) == (
                    reference["seed"], reference["threads"], reference["started"][:10]):
                check["speed_reference"] = reference
    return {run: sorted(records, key=lambda r: r["seed"]) for run, records in checks.items()}


def _speed(check: dict, bench: dict) -> str:
    """How fast the machine was on the check's day: the benchmark's pipeline's first epoch then and on its own day."""
    reference = check.get("speed_reference")
    if not reference or not check["epochs"] or reference["settings"]["course_flags"] != bench["settings"]["course_flags"]:
        return ""
    today, then = reference["epochs"][0]["train_seconds"], bench["epochs"][0]["train_seconds"]
    pace = "slower" if today > 1.2 * then else "faster" if then > 1.2 * today else "about as fast"
    return (f"; the machine was {pace} that day: the benchmark's own pipeline, run for one epoch straight after on "
            f"the same machine, trained its first epoch in {today:.0f} s, against {then:.0f} s in the benchmark's "
            f"seed {check['seed']} ({bench['started'][:10]}; the command line's first epoch: "
            f"{check['epochs'][0]['seconds']:.0f} s), so the minutes of the two runs do not compare")


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
    def as_given_first(check: dict) -> tuple:  # the README's command unchanged first, then variants
        return (check["seed"], check["threads"] != by_seed[check["seed"]]["threads"] or "--keep" in check["flags"])

    done = sorted((c for c in checks or [] if c.get("complete") and c["seed"] in by_seed), key=as_given_first)
    for check in done:
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
        resumed = check.get("resumed_after_epoch")
        changed = ([f"`--threads {check['threads']}` for {threads}"] if check["threads"] != threads else []) + (
            [f"`--keep {check['keep']}`"] if "--keep" in check["flags"] else [])
        text += (" Checked by running the command as the README gives it"
                 + (f" but with {' and '.join(changed)}" if changed else "")
                 + f" (`benchmarks/cli_check.py`, seed "
                 f"{check['seed']}, {check['started'][:10]}: {check['train_seconds'] / 60:.1f} minutes of training on "
                 f"{check['threads']} thread{'s' if check['threads'] != 1 else ''}" + (f", 1-minute load {load['mean']:.1f} on average, up to {load['max']:.1f}"
                                                  if load.get("samples") else "")
                 + _speed(check, by_seed[check["seed"]])
                 + (f"; interrupted after epoch {resumed} and continued from its own checkpoint of that epoch with "
                    "`--resume`, which repeats the same steps" if resumed else "")
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
