"""Notebook 14's sentences and table about the corpus (``benchmarks/corpus_facts.py``'s results file)."""

from __future__ import annotations

import json
import statistics

from benchmarks.sections.common import RESULTS, complete


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
