"""The throughput section (``benchmarks/throughput.py``'s results files)."""

from __future__ import annotations

from benchmarks.sections.common import fmt, load_records, summary


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


def section(runs=None, checks=None) -> list[str]:
    """``benchmarks/README.md``'s throughput section, from ``benchmarks/results/throughput/``."""
    return [render_throughput(load_records("throughput"))]
