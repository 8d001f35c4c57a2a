"""The time-to-BLEU section (``benchmarks/time_to_bleu.py``'s results files)."""

from __future__ import annotations

import math

from benchmarks.sections.common import fmt, load_records, summary


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


def section(runs=None, checks=None) -> list[str]:
    """``benchmarks/README.md``'s time-to-BLEU section, from ``benchmarks/results/time_to_bleu/``."""
    return [render_time_to_bleu(load_records("time_to_bleu"))]
