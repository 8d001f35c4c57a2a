"""benchmarks/real_data.py, pipelines.py and report.py on a tiny Multi30k-shaped corpus (made from the toy corpus).

Nothing is timed. Checked: the three pipelines run interleaved and write one results file per pipeline and
seed; a finished seed is skipped; each pipeline's results do not depend on which others ran beside it;
the classic batching rule; the report's statistics and its choice of epoch on validation only.
"""

import gzip
import json
from pathlib import Path

import pytest
import torch

from benchmarks import cli_check, pipelines, real_data, report
from benchmarks.sections import cli_check as cli_check_section
from benchmarks.sections import common, stretch, throughput, time_to_bleu
from benchmarks.sections import real_data as real_data_section
from benchmarks.sections import recipe_sweep as sweep

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
TINY = ["--epochs", "2", "--threads", "1", "--classic-batch-tokens", "300", "--classic-warmup", "4",
        "--classic-min-freq", "1", "--d-model", "16", "--n-heads", "2", "--d-ff", "32", "--layers", "1"]


def write_multi30k_style(folder: Path, n_train: int = 60, n_eval: int = 8) -> None:
    """A tiny synthetic corpus laid out like Multi30k (gzipped line-aligned files), from the toy corpus."""
    from course_lib.data import load_toy_corpus

    pairs = load_toy_corpus("train")[: n_train + 2 * n_eval]
    parts = {"train": pairs[:n_train], "val": pairs[n_train:n_train + n_eval], "test_2016_flickr": pairs[-n_eval:]}
    for name, part in parts.items():
        for side, lang in enumerate(("de", "en")):
            with gzip.open(folder / f"{name}.{lang}.gz", "wt", encoding="utf-8") as handle:
                handle.write("\n".join(pair[side] for pair in part) + "\n")


def run(benchmark, data_dir: Path, results: Path, *extra: str) -> Path:
    threads = torch.get_num_threads()
    try:  # main() sets the torch thread count; restore it for the other tests
        return benchmark.main(["--data-dir", str(data_dir), "--results-dir", str(results), "--run", "tiny",
                               *TINY, *extra])
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One run of all three pipelines, seed 0, and its printed log."""
    folder = tmp_path_factory.mktemp("multi30k")
    write_multi30k_style(folder)
    benchmark = real_data
    results = folder / "results"
    import contextlib
    import io

    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        out = run(benchmark, folder, results, "--seeds", "0")
    return benchmark, folder, out, log.getvalue()


def test_three_pipelines_interleaved_with_a_results_file_each(finished):
    _, _, out, log = finished
    records = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert set(records) == {"course-seed0", "torch_recipe-seed0", "classic-seed0"}
    for record in records.values():
        assert record["complete"] and record["seed"] == 0 and record["threads"] == 1
        assert [row["epoch"] for row in record["epochs"]] == [1, 2]
        assert {"commit", "machine", "settings", "started", "parameters"} <= set(record)
        for row in record["epochs"]:
            assert row["step"] > 0 and row["tokens_per_s"] > 0 and row["train_seconds"] > 0
            for split in ("valid", "test"):
                scores = row[split]
                assert all(0.0 <= scores[k] <= 100.0 for k in ("bleu", "bleu_lc", "bleu_tok_lc"))
                assert "case:lc" in scores["signatures"]["bleu_lc"] and "tok:none" in scores["signatures"]["bleu_tok_lc"]
                assert 0.0 <= scores["unk_share"] <= 1.0 and scores["sentences"] == 8
    order = [line.split()[4] for line in log.splitlines() if line.startswith("seed 0 epoch")]
    assert order == ["course", "torch_recipe", "classic", "classic", "torch_recipe", "course"]
    assert records["classic-seed0"]["lowercased_output"] and not records["course-seed0"]["lowercased_output"]


def test_a_finished_seed_is_skipped(finished, capsys):
    benchmark, folder, out, _ = finished
    before = {p.name: p.read_text() for p in out.glob("*.json")}
    run(benchmark, folder, out.parent, "--seeds", "0")
    assert "seed 0: complete, skipped" in capsys.readouterr().out
    assert {p.name: p.read_text() for p in out.glob("*.json")} == before


def test_a_pipeline_alone_gives_the_same_results(finished, tmp_path):
    """Each pipeline keeps its own random state: running the classic one alone changes none of its numbers."""
    benchmark, folder, out, _ = finished
    alone = run(benchmark, folder, tmp_path, "--seeds", "0", "--pipelines", "classic")
    strip = lambda rows: [{k: v for k, v in r.items() if "seconds" not in k and k != "tokens_per_s"}  # noqa: E731
                          for r in rows]
    for split_rows in (json.loads((alone / "classic-seed0.json").read_text())["epochs"],):
        assert [(r["step"], r["train_loss"], r["test"]["bleu_lc"]) for r in strip(split_rows)] == [
            (r["step"], r["train_loss"], r["test"]["bleu_lc"])
            for r in strip(json.loads((out / "classic-seed0.json").read_text())["epochs"])]


def test_a_stopped_sweep_run_follows_the_full_schedule_and_never_sees_test(finished, tmp_path):
    """``--stop-after 1 --valid-only``: the first epoch of the two-epoch schedule, scored on ``valid`` alone."""
    benchmark, folder, out, _ = finished
    short = run(benchmark, folder, tmp_path, "--seeds", "0", "--pipelines", "course", "--stop-after", "1", "--valid-only")
    record = json.loads((short / "course-seed0.json").read_text())
    full = json.loads((out / "course-seed0.json").read_text())
    assert record["complete"] and record["epochs_planned"] == 2 and record["stop_after"] == 1
    assert [row["epoch"] for row in record["epochs"]] == [1] and "test" not in record["epochs"][0]
    first = full["epochs"][0]
    assert (record["epochs"][0]["step"], record["epochs"][0]["train_loss"]) == (first["step"], first["train_loss"])
    assert record["epochs"][0]["valid"]["bleu_lc"] == first["valid"]["bleu_lc"]
    assert record["settings"]["args"]["stop_after"] == 1 and "stop_after" not in full["settings"]["args"]


def test_stop_after_beyond_the_schedule_is_one_clear_error(capsys):
    benchmark = real_data
    with pytest.raises(SystemExit):
        benchmark.parse_args(["--data-dir", ".", "--epochs", "4", "--stop-after", "5"])
    assert "--stop-after: expected an epoch from 1 to --epochs (4), got 5" in capsys.readouterr().err


def test_unknown_pipeline_is_one_clear_error(capsys):
    benchmark = real_data
    with pytest.raises(SystemExit):
        benchmark.parse_args(["--data-dir", ".", "--pipelines", "course,nope"])
    assert "--pipelines: unknown ['nope']" in capsys.readouterr().err


def test_classic_batches_follow_the_rule():
    gen = torch.Generator().manual_seed(0)
    src = torch.randint(1, 40, (3000,), generator=gen).tolist()
    tgt = torch.randint(1, 40, (3000,), generator=gen).tolist()
    sampler = pipelines.ClassicBatchSampler(src, tgt, max_tokens=4000, seed=1)
    sampler.set_epoch(3)
    batches = sampler.batches()
    assert sorted(i for b in batches for i in b) == list(range(3000))  # every pair once
    for batch in batches:
        longest = max(max(src[i], tgt[i]) + 2 for i in batch)
        assert longest * len(batch) <= 4000 or len(batch) == 1
    # a batch closes only when the next pair would pass the limit: merging neighbours in sorted order overflows
    assert len(batches) < 3000 * 41 / 4000 * 1.6


def _record(pipeline: str, seed: int, valid: list[float], test: list[float], complete: bool = True) -> dict:
    rows = [{"epoch": e, "step": 10 * e, "train_seconds": 5.0, "train_cpu_seconds": 9.0, "tokens_per_s": 100.0,
             "valid": {"bleu": v, "bleu_lc": v, "bleu_tok_lc": v, "unk_share": 0.0, "signatures": {"bleu_lc": "lc"}},
             "test": {"bleu": t, "bleu_lc": t, "bleu_tok_lc": t, "unk_share": 0.01, "signatures": {"bleu_lc": "lc"}}}
            for e, (v, t) in enumerate(zip(valid, test, strict=True), 1)]
    return {"pipeline": pipeline, "seed": seed, "commit": "abc", "started": "2026-11-25T00:00:00", "parameters": 5, "threads": 2,
            "machine": {"cpu": "cpu", "cores": 2, "torch": "2"}, "lowercased_output": pipeline == "classic",
            "settings": {"course_flags": [], "args": {"epochs": len(rows), "threads": 2, "data_dir": "d",
                                                       "splits": ["a", "b", "c"]}},
            "epochs": rows, "complete": complete}


def test_report_chooses_the_epoch_on_validation_and_reports_test_there(tmp_path):
    # validation peaks at epoch 2 while test peaks at epoch 3: the report must take epoch 2's test score
    rs = [_record("course", s, [10, 30 + s, 20], [11, 21 + s, 40]) for s in range(3)]
    assert [common.chosen_epoch(r) for r in rs] == [2, 2, 2]
    table = common.final_table({"course": rs})
    assert "| 2, 2, 2 | 22.0 ± 1.0 (21.0–23.0) |" in table
    assert "40.0 ± 0.0 (40.0–40.0)" in table  # the last epoch, reported as such


def test_report_statistics_and_comparison():
    s = common.summary([1.0, 2.0, 3.0])
    assert (s["mean"], s["sd"], s["min"], s["max"], s["n"]) == (2.0, 1.0, 1.0, 3.0, 3)
    assert common.fmt(common.summary([37.5])) == "37.5 (1 seed)"
    course = [_record("course", s, [1, 2, 3], [10, 20, 33]) for s in range(3)]
    classic = [_record("classic", s, [1, 2, 3], [12, 18, 30]) for s in range(3)]
    sentence = real_data_section.comparison({"course": course, "classic": classic})
    assert "+3.0 lower-cased test BLEU" in sentence and "from epoch 2 on" in sentence and "3 seeds both" in sentence
    unfinished = [_record("course", 0, [1, 2, 3], [10, 20, 33], complete=False)]
    assert real_data_section.comparison({"course": unfinished, "classic": classic}) == ""  # no claim without finished seeds


def test_report_score_at_equal_training_time():
    record = _record("course", 0, [1, 2, 3], [10, 20, 30])
    assert common.score_at_time(record, 10.0) == 20  # two epochs of 5 s fit
    assert common.score_at_time(record, 9.9) == 10
    assert common.score_at_time(record, 1.0) == 0.0


def test_generated_prose_matches_the_results_files():
    """README's real-data block, notebook 14's and benchmarks/README.md equal what report.py makes of the files."""
    stale = [str(path.relative_to(report.ROOT)) for path, text in report.expected().items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    assert not stale, f"out of date with benchmarks/results: {stale}; run python -m benchmarks.report"


def test_report_compares_over_the_seeds_both_pipelines_finished():
    course = [_record("course", 0, [1, 2, 3], [10, 20, 30])]
    classic = [_record("classic", s, [1, 2, 3], [9, 19, 29 - 10 * s]) for s in range(2)]  # seed 1 far worse
    sentence = real_data_section.comparison({"course": course, "classic": classic})
    assert "+1.0 lower-cased test BLEU" in sentence and "the 1 seed both finished" in sentence


def _sweep_record(seed: int, valid: list[float], peak: str, tied: str = "no") -> dict:
    record = _record("course", seed, valid, valid)
    record["description"] = f"5 parameters, the course recipe:\n  peak_lr        {peak}  flag\n  tie_embeddings {tied}  why"
    return record


def test_full_horizon_compares_untied_with_the_tied_run_seed_by_seed():
    """recipe_sweep.py --full-horizon: the untied output over 10 epochs against the tutorial run, on validation;
    kept out of the 4-epoch table; the verdict needs 3 seeds and says when they disagree in sign."""
    tied = [_sweep_record(s, [1, 2, 3, 30, 31, 32, 33, 34, 35, 36 + s], "1.80e-03", "yes") for s in range(3)]
    untied = [_sweep_record(s, [1, 2, 3, 31, 31, 32, 33, 34, 35, 36 + 2 * s - 1], "1.80e-03") for s in range(3)]
    runs = {"tutorial": {"course": tied}, sweep.FULL_HORIZON: {"course": untied[:2]}}
    table, sentence = sweep.full_horizon(runs)
    assert "| 10 | 36.5 ± 0.7 (36.0–37.0) | 36.0 ± 1.4 (35.0–37.0) | -1.0, +0.0 |" in table
    assert "2 of 3 seeds finished: no verdict yet" in sentence
    runs[sweep.FULL_HORIZON]["course"] = untied
    table, sentence = sweep.full_horizon(runs)
    assert sentence.endswith("untied minus tied +0.0 (seed by seed -1.0, +0.0, +1.0); the seeds disagree in sign: "
                             "validation does not separate the two.")
    assert not any("10ep" in row[0] for row in sweep.sweep_rows(runs, "tutorial"))
    assert "### The tied output over the whole schedule" in sweep.render_sweep(runs)
    assert sweep.full_horizon({"tutorial": {"course": tied}}) == ("", "")


def test_sweep_table_reads_valid_after_epoch_4_and_names_the_best_setting():
    runs = {
        "default": {"course": [_sweep_record(s, [1, 2, 3, 20 + s], "8.84e-03") for s in range(3)]},
        "sweep-default-peak0.5x": {"course": [_sweep_record(s, [1, 2, 3, 18 + s], "4.42e-03") for s in range(3)]},
        "sweep-default-peak2x": {"course": [_sweep_record(s, [1, 2, 3, 19 + s], "1.77e-02") for s in range(2)]},
    }
    text = sweep.render_sweep(runs)
    assert "| recipe (x1, as chosen) | 8.84e-03 | no | 0, 1, 2 |" in text
    assert "| peak x0.5 | 4.42e-03 | no | 0, 1, 2 |" in text and "| peak x2 | 1.77e-02 | no | 0, 1 |" in text
    assert "21.0 ± 1.0 (20.0–22.0)" in text  # the recipe's epoch-4 validation BLEU over seeds 0-2
    # the verdict compares over the seeds every setting finished (0 and 1): 20.5 vs 19.5 vs 18.5
    assert ("Over seeds 0, 1, the ones every setting has finished, validation BLEU after epoch 4: recipe 20.5, "
            "peak x2 19.5, peak x0.5 18.5; the recipe's own setting is best.") in text
    runs["sweep-default-peak2x"] = {"course": [_sweep_record(s, [1, 2, 3, 23 + s], "1.77e-02") for s in range(3)]}
    text = sweep.render_sweep(runs)
    assert ("peak x2 is best, 3.0 above the recipe's setting (beyond one standard deviation of the seeds; "
            "seed by seed +3.0, +3.0, +3.0)") in text
    one_seed = {k: {"course": v["course"][:1]} for k, v in runs.items()}
    assert "On seed 0, the only seed every setting has finished" in sweep.render_sweep(one_seed)
    assert "one seed cannot tell" in sweep.render_sweep(one_seed)
    assert "sweep-" not in report.render_benchmarks_readme({k: v for k, v in runs.items()}).split("## The recipe")[0]


def test_the_recipe_docstring_s_claim_about_the_sweep_holds_in_the_results_files():
    """course_lib/recipe.py says: at both widths the recipe's peak has the best mean validation BLEU over the seeds
    every setting has finished (benchmarks/recipe_sweep.py). The committed results files must say the same."""
    import course_lib.recipe

    assert "At both widths the recipe's peak has the best mean validation BLEU" in " ".join(
        course_lib.recipe.__doc__.split())
    runs = common.load_runs()
    for size in ("default", "tutorial"):
        rows = [row for row in sweep.sweep_rows(runs, size) if "untied" not in row[0]]
        assert len(rows) == 3, f"{size}: the sweep needs the recipe's peak, x0.5 and x2 (found {[r[0] for r in rows]})"
        assert "the recipe's own setting is best" in sweep.sweep_verdict(rows), sweep.sweep_verdict(rows)
    # "Validation does not separate the two: untied is behind after epoch 2 and ahead after epoch 4 by less than
    # one standard deviation of the seeds (ahead on two seeds, behind on the third)."
    assert "Validation does not separate the two" in " ".join(course_lib.recipe.__doc__.split())
    rows = sweep.sweep_rows(runs, "tutorial")
    recipe = {r["seed"]: r for r in rows[0][3]}
    untied = {r["seed"]: r for r in next(records for setting, _, _, records in rows if "untied" in setting)}
    assert sorted(untied) == [0, 1, 2] and set(untied) <= set(recipe)
    gaps = {epoch: [common.metric(untied[s], epoch, "valid") - common.metric(recipe[s], epoch, "valid") for s in untied]
            for epoch in (2, 4)}
    assert sum(gaps[2]) < 0 < sum(gaps[4]), gaps
    assert sorted(g > 0 for g in gaps[4]) == [False, True, True], gaps
    assert "tied output ends ahead on every seed" in " ".join(course_lib.recipe.__doc__.split())
    assert sweep.full_horizon(runs)[1].endswith("tied is ahead on every seed: validation favours the recipe's tied output.")
    verdict = sweep.sweep_verdict(rows)
    assert "untied output has the highest mean" in verdict and "the seeds disagree in sign" in verdict, verdict


def _stretch_record(seed: int, greedy: float, beam: float, test_greedy: float, test_beam: float,
                    seconds: float = 200.0) -> dict:
    record = _record("course", seed, [10.0, greedy], [0.0, test_greedy])
    del record["epochs"][0]["test"]  # --test-last-only: test after the last epoch only
    for row in record["epochs"]:
        row["train_seconds"] = seconds
    record["epochs"][-1]["beam"] = {
        "size": 4,
        "valid": {"bleu": beam, "bleu_lc": beam, "bleu_tok_lc": beam, "unk_share": 0.0},
        "test": {"bleu": test_beam - 2, "bleu_lc": test_beam - 1, "bleu_tok_lc": test_beam, "unk_share": 0.0,
                 "signatures": {"bleu_lc": "lc"}}}
    record["settings"]["args"].update(test_last_only=True, beam_last=4)
    record["settings"]["course_flags"] = ["--subword-merges", "4000"]
    record["description"] = "5 parameters, vocab 3969/3852, cased BPE pieces, the course recipe:"
    return record


def test_stretch_chooses_the_decoding_on_validation_and_needs_three_seeds_in_time():
    # beam wins on validation: its test figures are reported, not greedy's (which are higher here on purpose)
    rs = [_stretch_record(s, 38.0, 39.0, 45.0, 40.0 + s) for s in range(2)]
    res = stretch.stretch_result({"course": rs})
    assert res["decoding"] == "beam 4" and res["test_tok_lc"]["mean"] == 40.5 and res["test_lc"]["mean"] == 39.5
    assert res["verdict"] == "2 of 3 seeds finished: no verdict yet"
    # the target is judged on the detokenized lower-cased figure (test_beam - 1 here), not the tokenized one
    rs.append(_stretch_record(2, 38.0, 39.0, 45.0, 40.0))
    res = stretch.stretch_result({"course": rs})
    assert res["test_tok_lc"]["mean"] > 40 and res["verdict"] == "not met: the mean is 39.3"
    rs = [_stretch_record(s, 38.0, 39.0, 45.0, 41.0 + s) for s in range(3)]
    assert stretch.stretch_result({"course": rs})["verdict"].startswith("met (mean 41.0, lowest seed 40.0")
    # greedy wins on validation: greedy's test figures
    rs = [_stretch_record(s, 39.0, 38.0, 41.0, 50.0) for s in range(3)]
    res = stretch.stretch_result({"course": rs})
    assert res["decoding"] == "greedy" and res["test_lc"]["mean"] == 41.0
    # over the budget: 2 epochs of 1,801 s is 60.03 minutes
    rs = [_stretch_record(s, 38.0, 39.0, 45.0, 45.0, seconds=1801.0) for s in range(3)]
    assert stretch.stretch_result({"course": rs})["verdict"].startswith("not met: the slowest seed trained 60 minutes")
    text = stretch.render_stretch("stretch-x", {"course": rs})
    assert "### Stretch run `stretch-x`" in text and "| 0 | 60.0 | 38.0 | 39.0 |" in text
    assert "--pipelines course --run stretch-x --test-last-only --beam-last 4" in text
    assert "BPE pieces instead of words (vocab 3969/3852" in text and "4,000 BPE merges per language" in text
    assert stretch.stretch_result({"course": [_stretch_record(0, 1, 2, 3, 4) | {"complete": False}]}) is None
    mixed = [_stretch_record(0, 1, 2, 3, 4), _stretch_record(1, 1, 2, 3, 4)]
    mixed[1]["settings"]["args"]["beam_last"] = 5
    with pytest.raises(ValueError, match="different settings"):
        stretch.stretch_result({"course": mixed})


def test_stretch_splits_the_gain_on_validation_against_the_words_run():
    words = [_record("course", s, [30.0, 35.0], [0.0, 0.0]) for s in range(3)]  # 2 epochs of words
    runs = []
    for s in range(3):
        record = _stretch_record(s, 38.0, 39.0, 45.0, 41.0)
        record["epochs"].insert(1, dict(record["epochs"][0], epoch=2, valid=dict(record["epochs"][0]["valid"], bleu_lc=36.0)))
        record["epochs"][-1]["epoch"] = 3
        runs.append(record)
    parts = stretch.stretch_result({"course": runs}, words)["parts"]
    assert parts["horizon"] == 2 and parts["seeds"] == 3
    assert (round(parts["subwords"], 6), round(parts["epochs"], 6), round(parts["decoding"], 6)) == (1.0, 2.0, 1.0)
    sentence = stretch.stretch_sentence({"course": runs}, words)
    assert "subwords +1.0 (both after epoch 2), epochs 2–3 +2.0 and the chosen decoding +1.0" in sentence


def test_throughput_and_time_to_bleu_tables_summarise_three_runs():
    records = [{"started": "2026-11-26T09:00:00", "commit": "abcdef0", "threads": 2, "tied_output": {"ours": True},
                "arguments": {"size": "real"},
                "results": {"train": {"ratio": r, "median_round_ratio": r}, "eval": {"ratio": 1.0, "median_round_ratio": 1.0}}}
               for r in (1.0, 1.1, 1.2)]
    text = throughput.render_throughput(records)
    assert "- `real`, 2 threads, 3 runs: ours/torch (median of rounds) 1.10 ± 0.10 (1.00–1.20) in training" in text
    assert "Mean ±" not in throughput.render_throughput(records[:2])  # fewer than 3 runs: rows only
    runs = [{"started": "2026-11-26T09:00:00", "commit": "abcdef0", "seed": s, "threads": 1,
             "arguments": {"clock": "wall", "eval_every": 5.0},
             "results": [{"name": "course_lib", "t90": 10.0, "t97": 20.0},
                         {"name": "nn.Transformer", "t90": 20.0, "t97": float("nan") if s == 2 else 30.0}]}
            for s in range(3)]
    text = time_to_bleu.render_time_to_bleu(runs)
    assert "BLEU 90, 3 seeds: course 10.0 ± 0.0 (10.0–10.0) s, nn.Transformer 20.0 ± 0.0 (20.0–20.0) s; ratio " \
           "nn.Transformer / course 2.00 ± 0.00 (2.00–2.00)" in text
    assert "BLEU 97: both models reached it in 2 of 3 seeds; no mean." in text


# ----- which checkpoint, and what the command line delivered (issue 37) -----

def _cli_check(seed: int, valid: list[float], losses: list[float], beam: float, greedy: float, threads: int = 1) -> dict:
    """A results file of benchmarks/cli_check.py, as it would read after the run."""
    epochs = [{"epoch": e, "step": 10 * e, "seconds": 5.0 * e, "train_loss": 3.0, "valid_loss": loss, "valid_bleu_lc": v}
              for e, (v, loss) in enumerate(zip(valid, losses, strict=True), 1)]
    kept = max(epochs, key=lambda row: (row["valid_bleu_lc"], -row["epoch"]))["epoch"]
    return {"benchmark": "cli_check", "run": "stretch-x", "seed": seed, "started": "2026-11-27T02:00:00+00:00",
            "flags": ["--threads", str(threads), "--epochs", str(len(epochs)), "--beam", "4"], "threads": threads,
            "train_seconds": 600.0, "load_average": {"samples": 3, "mean": 1.5, "max": 2.0}, "epochs": epochs,
            "keep": "bleu", "kept_epoch": kept, "complete": True,
            "test": {"test_bleu_lc_beam": beam, "test_bleu_lc_greedy": greedy}}


def test_report_says_which_checkpoint_and_compares_the_command_line_with_the_same_seed():
    from course_lib.training import choose_epoch

    rs = [_stretch_record(s, 38.0, 39.0, 45.0, 41.0) for s in range(2)]
    rs[1]["epochs"][0]["valid"]["bleu_lc"] = 38.0  # a tie with the last epoch: the earlier one is chosen
    assert [common.chosen_epoch(r) for r in rs] == [2, 1]
    assert choose_epoch([{"epoch": 1, "valid_bleu_lc": 38.0}, {"epoch": 2, "valid_bleu_lc": 38.0}], "bleu")["epoch"] == 1
    text = cli_check_section.checkpoint_sentence({"course": rs})
    assert text.startswith("Which checkpoint: these figures are the weights after the last epoch, 2 ")
    assert "on seeds 0, 1 epochs 2, 1 (seed 1: an earlier epoch, whose test figure the benchmark did not score)" in text
    assert "`--keep last` keeps the last epoch, the benchmark's checkpoint on every seed" in text
    assert "Checked" not in text  # no command-line run recorded yet
    check = _cli_check(0, [10.0, 38.0], [2.0, 2.1], beam=40.04, greedy=44.96)
    text = cli_check_section.checkpoint_sentence({"course": rs}, [check, dict(check, seed=1, complete=False)])
    assert text.count("Checked") == 1  # the unfinished seed is left out
    assert ("Checked by running the command as the README gives it but with `--threads 1` for 2 "
            "(`benchmarks/cli_check.py`, seed 0, 2026-11-27: 10.0 minutes of training on 1 thread, 1-minute load "
            "1.5 on average, up to 2.0): it kept epoch 2 of 2 by `--keep bleu` (the lowest validation loss was "
            "epoch 1's); its validation BLEU was the benchmark's seed 0's to the printed two decimals after all 2 "
            "epochs; test BLEU 40.0 lower-cased with beam 4 (greedy 45.0), against 40.0 with beam 4 (greedy 45.0) "
            "for the benchmark's seed 0.") in text
    check["epochs"][0]["valid_bleu_lc"] = 10.5
    assert "its validation BLEU stayed within 0.50 of the benchmark's seed 0 after every one of 2 epochs" in \
        cli_check_section.checkpoint_sentence({"course": rs}, [check])
    table = cli_check_section.cli_check_table({"course": rs}, check)
    assert "| 1 | 2.000 | 10.50 | 10.00 |  |" in table and "| 2 | 2.100 | 38.00 | 38.00 | yes |" in table
    resumed = cli_check_section.checkpoint_sentence({"course": rs}, [dict(check, resumed_after_epoch=1)])
    assert ("1-minute load 1.5 on average, up to 2.0; interrupted after epoch 1 and continued from its own checkpoint "
            "of that epoch with `--resume`, which repeats the same steps): it kept epoch 2") in resumed


def test_a_speed_reference_of_the_checks_day_is_attached_and_the_command_as_given_comes_first(tmp_path):
    """cli_check/speed/RUN-seedN.json (the benchmark's pipeline, one epoch, the check's day) goes to the check of
    that run, seed, thread count and day; the sentence says how fast the machine was then, and the check that ran
    the README's command unchanged is reported before its variants."""
    rs = [_stretch_record(0, 38.0, 39.0, 45.0, 41.0, seconds=100.0)]
    rs[0]["started"] = "2026-11-26T07:00:00+00:00"
    folder = tmp_path / "cli_check"
    (folder / "speed").mkdir(parents=True)
    variant = _cli_check(0, [10.0, 38.0], [2.0, 2.1], beam=39.0, greedy=38.0)  # --threads 1: a variant
    as_given = dict(_cli_check(0, [10.0, 38.0], [2.0, 2.1], beam=40.0, greedy=39.0, threads=2))
    (folder / "stretch-x-1thread-seed0.json").write_text(json.dumps(variant))
    (folder / "stretch-x-seed0.json").write_text(json.dumps(as_given))
    reference = _stretch_record(0, 38.0, 39.0, 45.0, 41.0, seconds=250.0)
    reference.update(started="2026-11-27T05:00:00+00:00", threads=2)
    (folder / "speed" / "stretch-x-seed0.json").write_text(json.dumps(reference))
    checks = cli_check_section.load_cli_checks(tmp_path / "real_data")["stretch-x"]
    assert [("speed_reference" in c, c["threads"]) for c in checks] == [(False, 1), (True, 2)]  # 1 thread: not that run
    text = cli_check_section.checkpoint_sentence({"course": rs}, checks)
    assert text.index("as the README gives it (") < text.index("as the README gives it but with `--threads 1`")
    assert ("; the machine was slower that day: the benchmark's own pipeline, run for one epoch straight after on "
            "the same machine, trained its first epoch in 250 s, against 100 s in the benchmark's seed 0 (2026-11-26; "
            "the command line's first epoch: 5 s), so the minutes of the two runs do not compare):") in text
    assert text.count("that day") == 1
    reference["settings"]["course_flags"] = ["--subword-merges", "8000"]  # another pipeline: no reference
    assert "that day" not in cli_check_section.checkpoint_sentence({"course": rs}, [dict(checks[1], speed_reference=reference)])
    reference.update(started="2026-11-28T05:00:00+00:00")  # another day: not attached
    (folder / "speed" / "stretch-x-seed0.json").write_text(json.dumps(reference))
    assert not any("speed_reference" in c for c in cli_check_section.load_cli_checks(tmp_path / "real_data")["stretch-x"])


def test_cli_check_reads_what_the_command_line_prints(tmp_path, capsys):
    from course_lib import train as train_cli

    code = train_cli.main(["--max-train-pairs", "60", "--max-eval-pairs", "8", "--epochs", "2", "--time-budget", "0",
                           "--d-model", "16", "--n-heads", "2", "--d-ff", "32", "--layers", "1", "--no-progress",
                           "--samples", "0", "--beam", "1", "--output", str(tmp_path / "m.pt")])
    assert code == 0
    printed = cli_check.parse_log(capsys.readouterr().out)
    assert [row["epoch"] for row in printed["epochs"]] == [1, 2]
    assert all(row["valid_bleu_lc"] is not None and row["valid_loss"] > 0 for row in printed["epochs"])
    assert printed["keep"] == "bleu" and printed["kept_epoch"] in (1, 2)
    assert printed["kept_reason"].startswith(f"kept epoch {printed['kept_epoch']} of 2: the highest validation BLEU")


def test_the_command_line_trains_what_the_benchmark_trains_with_dropout(tmp_path, capsys):
    """Same data files, flags, seed and threads: the command line (which validates inside ``train``) and the
    benchmark's course pipeline (which validates outside it) print the same training loss and validation BLEU
    after every epoch, with dropout on; before validation put the random state back, they parted from epoch 2."""
    from course_lib import train as train_cli

    write_multi30k_style(tmp_path, n_train=120)
    model = ["--d-model", "16", "--n-heads", "2", "--d-ff", "32", "--layers", "1", "--dropout", "0.3"]
    threads = torch.get_num_threads()
    try:
        out = real_data.main(["--data-dir", str(tmp_path), "--results-dir", str(tmp_path / "results"), "--run", "eq",
                              "--epochs", "3", "--threads", "1", "--seeds", "0", "--pipelines", "course",
                              "--valid-only", *model])
        capsys.readouterr()
        files = {side: [str(tmp_path / f"{name}.{lang}.gz") for name in ("train", "val", "test_2016_flickr")]
                 for side, lang in (("src", "de"), ("tgt", "en"))}
        assert train_cli.main(["--src-files", *files["src"], "--tgt-files", *files["tgt"], *model, "--epochs", "3",
                               "--threads", "1", "--time-budget", "0", "--no-progress", "--samples", "0",
                               "--beam", "1", "--output", str(tmp_path / "m.pt")]) == 0
    finally:
        torch.set_num_threads(threads)
    printed = cli_check.parse_log(capsys.readouterr().out)["epochs"]
    bench = json.loads((out / "course-seed0.json").read_text())["epochs"]
    assert len(printed) == len(bench) == 3
    for ours, theirs in zip(printed, bench, strict=True):
        assert ours["step"] == theirs["step"]
        assert ours["train_loss"] == round(theirs["train_loss"], 3), ours["epoch"]
        assert ours["valid_bleu_lc"] == round(theirs["valid"]["bleu_lc"], 2), ours["epoch"]


def _readme_command(marker: str) -> list[str]:
    """The flags of the README's command that follows the comment line containing ``marker``."""
    lines = (BENCHMARKS.parent / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if marker in line)
    while lines[start].startswith("#"):
        start += 1
    command = []
    for line in lines[start:]:
        command += line.rstrip("\\").split()
        if not line.endswith("\\"):
            return command


def test_the_readme_command_is_the_one_the_command_line_check_ran():
    """README's stretch command, less its data files and --output, is what benchmarks/cli_check.py ran (its
    results file records the flags; the thread count may differ and the report says so)."""
    readme = _readme_command("# the stretch run below, from the command line")
    assert readme[:3] == [".venv/bin/python", "-m", "course_lib.train"]
    flags = readme[readme.index("test_2016_flickr.en.gz") + 1:]
    output = flags[flags.index("--output") + 1]
    flags = flags[:flags.index("--output")]
    runner = _readme_command("# run the stretch command above as given")
    assert runner[runner.index("--") + 1:] == flags and runner[runner.index("--output") + 1] == output
    def without(options: list[str], *names: str) -> list[str]:  # the flags less the values of ``names``
        return [o for i, o in enumerate(options) if not (i and options[i - 1] in names) and o not in names]

    for path in sorted((BENCHMARKS / "results" / cli_check.RESULTS.name).glob("*.json")):
        record = json.loads(path.read_text())
        # the thread count and the checkpoint choice may differ (the report says so); nothing else
        assert without(record["flags"], "--threads", "--keep") == without(flags, "--threads", "--keep"), path.name
        assert path.name.endswith(".json" if record["keep"] == "bleu" else f"-keep-{record['keep']}.json")
    # the stretch benchmark trained with the same model, data and recipe flags
    record = json.loads((BENCHMARKS / "results" / "real_data" / "stretch-subwords" / "course-seed0.json").read_text())
    for flag, value in zip(record["settings"]["course_flags"][::2], record["settings"]["course_flags"][1::2], strict=True):
        assert flags[flags.index(flag) + 1] == value, flag
    assert flags[flags.index("--epochs") + 1] == str(record["settings"]["args"]["epochs"])
    assert flags[flags.index("--beam") + 1] == str(record["settings"]["args"]["beam_last"])


def test_the_sweep_drives_the_benchmark_with_settings_that_match_its_results_files(monkeypatch):
    """recipe_sweep.py calls real_data.run with a Settings and the course flags (no command line built); the
    settings each call records are those of the committed sweep files, so finished seeds are still skipped."""
    from benchmarks import recipe_sweep

    calls = []
    monkeypatch.setattr(real_data, "run", lambda settings, flags: calls.append((settings, flags)))
    recipe_sweep.main(["--data-dir", "../shared/data/multi30k", "--threads", "2"])
    recipe_sweep.main(["--data-dir", "../shared/data/multi30k", "--threads", "2", "--full-horizon"])
    compared = 0
    for settings, flags in calls:
        assert settings.problem() is None and settings.pipelines == ["course"] and settings.valid_only
        for seed in settings.seeds:
            path = BENCHMARKS / "results" / "real_data" / settings.run / f"course-seed{seed}.json"
            if path.is_file():
                assert json.loads(path.read_text())["settings"] == real_data.settings_key(settings, flags), path
                compared += 1
    assert len(calls) == 18 and compared > 0
    parsed, course_flags = real_data.parse_args(["--data-dir", "d", "--seeds", "1", "--run", "x", "--valid-only",
                                                 "--pipelines", "course", "--d-model", "256", "--stop-after", "4"])
    assert parsed == real_data.Settings(data_dir="d", seeds=[1], run="x", valid_only=True, pipelines=["course"],
                                        stop_after=4) and course_flags == ["--d-model", "256"]
