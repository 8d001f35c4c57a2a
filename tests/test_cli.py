"""The command lines fail the way a user can act on: one line on stderr naming the problem, exit
status 2, no traceback, and before any training starts; ``translate`` names unknown input words."""

import gzip
import os
import subprocess
import sys

import pytest
import torch

from course_lib import train as train_cli
from course_lib import translate as translate_cli
from course_lib.checkpoint import save_checkpoint
from course_lib.model import Transformer, TransformerConfig
from course_lib.tokenization import Vocab

TINY = ["--max-train-pairs", "60", "--max-eval-pairs", "8", "--max-steps", "2", "--d-model", "16", "--d-ff", "32",
        "--n-heads", "2", "--layers", "1", "--no-progress", "--samples", "0", "--beam", "1"]


def run_train(argv, capsys):
    code = train_cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    assert "Traceback" not in err
    return lines[0]


def write_lines(path, lines, compress=False):
    text = "".join(line + "\n" for line in lines)
    if compress:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(("flag", "value", "expected"), [
    ("--d-model", "0", "--d-model: must be a positive integer, got 0"),
    ("--layers", "-2", "--layers: must be a positive integer, got -2"),
    ("--batch-size", "0", "--batch-size: must be a positive integer"),
    ("--batch-tokens", "-5", "--batch-tokens: must be a positive integer"),
    ("--epochs", "0", "--epochs: must be a positive integer"),
    ("--max-steps", "-1", "--max-steps: must be a positive integer"),
    ("--time-budget", "-10", "--time-budget: must be a positive number of seconds"),
    ("--warmup", "0", "--warmup: must be a positive integer"),
    ("--lr-factor", "0", "--lr-factor: must be a positive number"),
    ("--dropout", "1.5", r"--dropout: must be in [0, 1)"),
    ("--min-freq", "0", "--min-freq: must be a positive integer"),
    ("--d-model", "abc", "--d-model: invalid positive integer value: 'abc'"),
    ("--keep", "best", "argument --keep: invalid choice: 'best' (choose from 'loss', 'bleu', 'last')"),
    ("--bleu-every", "0", "--bleu-every: must be a positive integer, got 0"),
])
def test_bad_sizes_and_budgets_are_one_line_errors(flag, value, expected, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_cli.main([flag, value])
    assert exit_info.value.code == 2
    line = one_line_error(capsys.readouterr().err)
    assert expected in line and line.startswith("python -m course_lib.train: error:")


def test_sizes_the_model_rejects_are_one_line_errors(tmp_path, capsys):
    code, _, err = run_train([*TINY, "--d-model", "30", "--n-heads", "4", "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 2
    assert "d_model must be divisible by n_heads, got d_model=30, n_heads=4" in one_line_error(err)


def test_missing_corpus_file_is_a_one_line_error(tmp_path, capsys):
    code, _, err = run_train(["--train-tsv", str(tmp_path / "nope.tsv"), "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 2
    assert "corpus file not found" in one_line_error(err)


def test_malformed_tsv_names_the_line(tmp_path, capsys):
    corpus = tmp_path / "train.tsv"
    corpus.write_text("Ein Hund.\tA dog.\nkein Tab hier\n", encoding="utf-8")
    code, _, err = run_train(["--train-tsv", str(corpus), "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 2
    assert "line 2: expected 2 tab-separated fields" in one_line_error(err)


def test_parallel_files_of_different_lengths_and_empty_lines(tmp_path, capsys):
    write_lines(tmp_path / "train.de", ["Ein Hund.", "Eine Katze."])
    write_lines(tmp_path / "train.en", ["A dog."], compress=False)
    code, _, err = run_train(["--src-files", str(tmp_path / "train.de"), "--tgt-files", str(tmp_path / "train.en"),
                              "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 2 and "differ in length" in one_line_error(err)
    write_lines(tmp_path / "train.en", ["A dog.", "  "])
    code, _, err = run_train(["--src-files", str(tmp_path / "train.de"), "--tgt-files", str(tmp_path / "train.en"),
                              "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 2 and "line 2 is empty" in one_line_error(err)


def test_corrupt_gzip_corpus(tmp_path, capsys):
    (tmp_path / "train.de.gz").write_bytes(b"\x1f\x8b" + b"garbage" * 5)
    write_lines(tmp_path / "train.en", ["A dog."])
    code, _, err = run_train(["--src-files", str(tmp_path / "train.de.gz"), "--tgt-files", str(tmp_path / "train.en"),
                              "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 2 and "not a valid gzip file" in one_line_error(err)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_output_is_rejected_before_training(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        code, out, err = run_train([*TINY, "--output", str(locked / "m.pt")], capsys)
    finally:
        locked.chmod(0o700)
    assert code == 2 and "is not writable" in one_line_error(err)
    assert "epoch" not in out  # nothing was trained


def test_output_the_system_refuses_is_rejected_before_training(tmp_path, capsys, monkeypatch):
    """Whoever runs the tests (root writes anywhere): the file system refuses the test file."""

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(train_cli.tempfile, "NamedTemporaryFile", refuse)
    code, out, err = run_train([*TINY, "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 2 and "is not writable: Permission denied" in one_line_error(err)
    assert "epoch" not in out


def test_output_under_a_file_or_a_directory_is_rejected_before_training(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    code, out, err = run_train([*TINY, "--output", str(blocker / "m.pt")], capsys)
    assert code == 2 and "is not a directory" in one_line_error(err) and "epoch" not in out
    code, out, err = run_train([*TINY, "--output", str(tmp_path)], capsys)
    assert code == 2 and "is a directory" in one_line_error(err) and "epoch" not in out


def test_missing_and_corrupt_resume_checkpoints(tmp_path, capsys):
    code, out, err = run_train([*TINY, "--resume", str(tmp_path / "none.pt"), "--output", str(tmp_path / "m.pt")],
                               capsys)
    assert code == 2 and "checkpoint not found" in one_line_error(err) and "epoch" not in out
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint at all")
    code, _, err = run_train([*TINY, "--resume", str(bad), "--output", str(tmp_path / "m.pt")], capsys)
    line = one_line_error(err)
    assert code == 2 and "cannot read checkpoint" in line and "weights_only" not in line


def _checkpoint(path):
    torch.manual_seed(0)
    src_vocab = Vocab.build([["Der", "Hund", "sieht", "die", "Katze", "."]])
    tgt_vocab = Vocab.build([["the", "dog", "sees", "cat", "."]])
    model = Transformer(TransformerConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), d_model=16,
                                          n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1))
    save_checkpoint(path, model, src_vocab, tgt_vocab)
    return path


def test_translate_missing_corrupt_and_foreign_checkpoints(tmp_path, capsys):
    assert translate_cli.main([str(tmp_path / "none.pt"), "Der Hund."]) == 2
    assert "checkpoint not found" in one_line_error(capsys.readouterr().err)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": [object.__new__(Vocab)]}, foreign)  # a pickled object, not a course checkpoint
    assert translate_cli.main([str(foreign), "Der Hund."]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert "holds pickled objects" in line and "weights_only" not in line


def test_translate_warns_about_unknown_words(tmp_path, capsys):
    checkpoint = _checkpoint(tmp_path / "tiny.pt")
    assert translate_cli.main([str(checkpoint), "Der Hund sieht die Katze.", "Der Zebrafisch sieht den Hund."]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == 2
    warning = one_line_error(captured.err)
    assert warning.startswith("warning: 2 input word(s) unknown") and "Zebrafisch, den" in warning
    assert translate_cli.main([str(checkpoint), "Der Hund sieht die Katze."]) == 0
    assert capsys.readouterr().err == ""  # every word known: no warning


def test_the_real_command_exits_2_without_a_traceback(tmp_path):
    """Through the interpreter, as a user runs it."""
    result = subprocess.run([sys.executable, "-m", "course_lib.translate", str(tmp_path / "none.pt"), "Hallo"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_unpaired_file_lists_are_one_line_errors(tmp_path, capsys):
    write_lines(tmp_path / "a.de", ["Ein Hund."])
    code, _, err = run_train(["--src-files", str(tmp_path / "a.de"), "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 2 and "need the same number of files" in one_line_error(err)


def test_translate_input_that_is_not_utf8_is_a_one_line_error(tmp_path):
    """Latin-1 bytes on stdin (a file saved in the wrong encoding): one line naming the line and byte."""
    checkpoint = _checkpoint(tmp_path / "tiny.pt")
    result = subprocess.run([sys.executable, "-m", "course_lib.translate", str(checkpoint)],
                            input="Der Hund.\nDer Bär läuft.\n".encode("latin-1"), capture_output=True, timeout=120)
    assert result.returncode == 2 and result.stdout == b""
    line = one_line_error(result.stderr.decode())
    assert "standard input is not UTF-8 text: byte 0xe4 on line 2" in line


def test_the_checkpoint_and_report_say_how_it_was_trained_and_scored(tmp_path, capsys):
    """The checkpoint records token or sentence batching; test BLEU is scored against the raw reference lines."""
    for extra, batching in (([], "tokens"), (["--batch-size", "16"], "sentences")):
        out = tmp_path / f"{batching}.pt"
        code, stdout, err = run_train([*TINY, "--output", str(out), *extra], capsys)
        assert code == 0, err
        saved = torch.load(out, weights_only=True)
        assert saved["train_config"]["batching"] == batching
        assert (saved["train_config"]["batch_tokens"] is None) == (batching == "sentences")
        assert "lower-cased" in stdout and "of output words" in stdout
        assert {"test_bleu_lc_greedy", "test_unk_share_greedy"} <= set(saved["metrics"])


def test_report_scores_the_raw_reference_lines():
    """Raw reference lines are scored as written, token lists are re-joined first: "t-shirt" is not "t - shirt"."""
    import course_lib.evaluation as evaluation

    words = ["a", "man", "in", "a", "black", "t", "-", "shirt", "is", "playing", "drums", "."]
    original = evaluation.translate_token_lists
    evaluation.translate_token_lists = lambda *args, **kwargs: [words]  # the scoring, not a model, is under test
    try:
        raw = evaluation.evaluate_translation(None, [["der"]], ["A man in a black t-shirt is playing drums."], None, None)
        joined = evaluation.evaluate_translation(None, [["der"]], [words], None, None)
    finally:
        evaluation.translate_token_lists = original
    assert raw.references == ["A man in a black t-shirt is playing drums."]
    assert joined.references == [raw.hypotheses[0]] and joined.bleu_lc == pytest.approx(100.0)
    assert raw.bleu_lc < 100.0 and raw.bleu < raw.bleu_lc  # and case counts only in the cased score


def test_translate_output_scored_against_the_file_equals_the_commands_bleu(tmp_path, capsys):
    """One BLEU: train's reported test BLEU is sacreBLEU of translate's output against the raw test lines."""
    from sacrebleu.metrics import BLEU

    from course_lib.data import load_toy_corpus

    out = tmp_path / "m.pt"
    code, _, err = run_train([*TINY, "--max-steps", "30", "--output", str(out)], capsys)
    assert code == 0, err
    metrics = torch.load(out, weights_only=True)["metrics"]
    test = load_toy_corpus("test")[:8]  # TINY's --max-eval-pairs 8
    assert translate_cli.main([str(out), *[source for source, _ in test]]) == 0
    outputs = capsys.readouterr().out.splitlines()
    references = [[target for _, target in test]]
    assert BLEU().corpus_score(outputs, references).score == pytest.approx(metrics["test_bleu_greedy"])
    lower = BLEU(lowercase=True).corpus_score(outputs, references).score
    assert lower == pytest.approx(metrics["test_bleu_lc_greedy"])


def test_my_parts_train_on_the_command_line_and_translate(tmp_path, capsys):
    """--my-parts: the student's saved parts (notebooks/my_transformer) train by the CLI; translate needs them."""
    from pathlib import Path

    notebooks = str(Path(__file__).resolve().parents[1] / "notebooks")
    out = tmp_path / "mine.pt"
    code, stdout, err = run_train([*TINY, "--my-parts", notebooks, "--output", str(out)], capsys)
    assert code == 0, err
    assert "your parts (10 of 10 saved)" in stdout and "(my_transformer/attention.py, saved unchanged)" in stdout
    code, stdout, err = run_train([*TINY, "--my-parts", notebooks, "--dropout", "0.1", "--output", str(out)], capsys)
    assert code == 2 and "which have no dropout" in one_line_error(err)
    code, stdout, err = run_train([*TINY, "--my-parts", str(tmp_path), "--output", str(out)], capsys)
    assert code == 2 and "no my_transformer/ folder" in one_line_error(err)
    # translate: without the parts a clear refusal, with them a translation
    assert translate_cli.main([str(out), "Der Hund sieht die Katze."]) == 2
    assert "--my-parts" in one_line_error(capsys.readouterr().err)
    assert translate_cli.main([str(out), "--my-parts", notebooks, "Der Hund sieht die Katze."]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 1
    # the checkpoint holds the parts' source and a fingerprint of each file (issue 34): the same files elsewhere
    # load; a part edited, removed or added since training is a one-line refusal naming the file
    import shutil

    saved = torch.load(out, weights_only=True)["train_config"]
    assert saved["my_parts_source"]["my_transformer/attention.py"] == (Path(notebooks) / "my_transformer" /
                                                                      "attention.py").read_text(encoding="utf-8")
    assert set(saved["my_parts_sha256"]) == set(saved["my_parts_source"]) >= {"my_transformer/decoder_layer.py"}
    copy = tmp_path / "copy"
    shutil.copytree(Path(notebooks) / "my_transformer", copy / "my_transformer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert translate_cli.main([str(out), "--my-parts", str(copy), "Der Hund sieht die Katze."]) == 0
    capsys.readouterr()
    edited = copy / "my_transformer" / "feed_forward.py"
    edited.write_text(edited.read_text(encoding="utf-8").replace("relu", "gelu"), encoding="utf-8")
    assert translate_cli.main([str(out), "--my-parts", str(copy), "Der Hund sieht die Katze."]) == 2
    error = one_line_error(capsys.readouterr().err)
    assert "my_transformer/feed_forward.py changed after the model was trained" in error, error
    edited.write_text(edited.read_text(encoding="utf-8").replace("gelu", "relu"), encoding="utf-8")
    (copy / "my_transformer" / "positional_encoding.py").unlink()
    assert translate_cli.main([str(out), "--my-parts", str(copy), "Der Hund sieht die Katze."]) == 2
    assert "my_transformer/positional_encoding.py was part of the model that was trained and is missing now" in \
        one_line_error(capsys.readouterr().err)


# ----- which epoch's weights the command keeps (issue 37) -----

EPOCHS = [*TINY[:4], "--epochs", "3", "--time-budget", "0", *TINY[6:]]  # TINY without --max-steps, 3 epochs


def test_the_command_keeps_the_epoch_with_the_highest_validation_bleu_not_the_lowest_loss(tmp_path, capsys,
                                                                                         monkeypatch):
    """Validation BLEU is scripted (5, 50, 10 after epochs 1-3): the command keeps, tests and writes epoch 2."""
    import course_lib.evaluation as evaluation

    real, snapshots = evaluation.evaluate_translation, []

    def scripted(model, *args, **kwargs):  # what BleuCallback calls after each epoch
        scores = real(model, *args, **kwargs)
        snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        scores.bleu_lc = (5.0, 50.0, 10.0)[len(snapshots) - 1]
        return scores

    monkeypatch.setattr(evaluation, "evaluate_translation", scripted)
    out = tmp_path / "m.pt"
    code, stdout, err = run_train([*EPOCHS, "--output", str(out)], capsys)
    assert code == 0, err
    assert len(snapshots) == 3 and "valid BLEU 50.00 lower-cased" in stdout
    assert "checkpoint (--keep bleu): kept epoch 2 of 3: the highest validation BLEU (50.00" in stdout
    saved = torch.load(out, weights_only=True)
    assert saved["metrics"]["kept_epoch"] == 2 and saved["train_config"]["select_by"] == "bleu"
    assert all(torch.equal(saved["model_state"][k], snapshots[1][k]) for k in snapshots[1])


@pytest.mark.parametrize(("keep", "line"), [("last", "kept epoch 3 of 3: the last epoch"),
                                             ("loss", "kept epoch 3 of 3: the lowest validation loss")])
def test_keep_last_or_loss_says_which_epoch_and_why(keep, line, tmp_path, capsys):
    code, stdout, err = run_train([*EPOCHS, "--keep", keep, "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 0, err
    assert f"checkpoint (--keep {keep}): {line}" in stdout  # a tiny model's loss still falls every epoch
    assert torch.load(tmp_path / "m.pt", weights_only=True)["metrics"]["kept_epoch"] == 3


# ----- one way to configure a run (issue 33) -----

def test_the_command_line_parses_once_into_a_run_spec(tmp_path, capsys, monkeypatch):
    """The options become a RunSpec in one parse; recipe settings not given stay None (the recipe chooses), so
    what was given is read off the spec, not found by parsing again."""
    import argparse

    from course_lib.run_spec import RunSpec

    spec = train_cli.parse_run_spec(["--d-model", "256", "--warmup", "300", "--no-tie-embeddings", "--no-progress"])
    assert spec == RunSpec(d_model=256, warmup=300, tie_embeddings=False, progress=False)
    assert spec.given() == {"warmup", "tie_embeddings"}
    assert spec.overrides() == {"warmup_steps": 300, "tie_embeddings": False}
    assert train_cli.parse_run_spec([]) == RunSpec() and RunSpec().dropout is None
    parses, real = [], argparse.ArgumentParser.parse_known_args
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args",
                        lambda self, *args, **kwargs: parses.append(self.prog) or real(self, *args, **kwargs))
    code, _, err = run_train(["--train-tsv", str(tmp_path / "nope.tsv"), "--output", str(tmp_path / "m.pt")], capsys)
    assert code == 2 and "corpus file not found" in one_line_error(err)
    assert parses == ["python -m course_lib.train"]


def test_a_run_spec_trains_like_the_command_line(tmp_path, capsys):
    """train.run(spec) is the command without its parser: the same spec, the same checkpoint."""
    from course_lib.run_spec import RunSpec

    spec = RunSpec(max_train_pairs=60, max_eval_pairs=8, max_steps=2, d_model=16, d_ff=32, n_heads=2, layers=1,
                   progress=False, samples=0, beam=1, output=str(tmp_path / "spec.pt"))
    assert train_cli.parse_run_spec([*TINY, "--output", spec.output]) == spec
    assert train_cli.run(spec) == 0
    saved = torch.load(spec.output, weights_only=True)
    assert saved["train_config"]["batching"] == "tokens" and saved["model_config"]["d_model"] == 16
