"""Tests of course_lib.data: reading corpora (and every error it reports), encoding, batching."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import torch

from course_lib import corpus, data
from course_lib.data import (
    Batch,
    BucketBatchSampler,
    CorpusFormatError,
    TranslationDataset,
    build_vocabs,
    collate_batch,
    limit_length,
    load_corpus,
    load_toy_corpus,
    make_dataloader,
    make_dataset,
    padding_fraction,
    random_batches,
    read_parallel_files,
    read_tsv,
    tokenize_pairs,
)
from course_lib.tokenization import BOS_ID, EOS_ID, PAD_ID, UNK_ID

PAIRS = [("Der Hund schläft.", "The dog sleeps."), ("Die Katze sieht den Hund.", "The cat sees the dog."),
         ("Ich gehe.", "I go."), ("Wir haben dem Kind einen Apfel gegeben.", "We have given the child an apple.")]


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture(scope="module")
def toy_train_sample():
    """The first 3,000 committed training pairs, tokenized, with vocabularies and a dataset."""
    token_pairs = tokenize_pairs(load_toy_corpus("train")[:3000])
    src_vocab, tgt_vocab = build_vocabs(token_pairs)
    return token_pairs, src_vocab, tgt_vocab, TranslationDataset.from_pairs(token_pairs, src_vocab, tgt_vocab)


# --- reading files and their errors --------------------------------------------------------

def test_read_tsv(tmp_path):
    path = write(tmp_path / "ok.tsv", "\ufeffDer Hund schläft.\tThe dog sleeps.\r\nIch gehe.\tI go.\n")
    assert read_tsv(path) == [("Der Hund schläft.", "The dog sleeps."), ("Ich gehe.", "I go.")]
    assert load_corpus(path) == read_tsv(path)


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.tsv"
    with pytest.raises(FileNotFoundError, match=r"nope\.tsv"):
        read_tsv(missing)
    with pytest.raises(FileNotFoundError, match=r"nope\.tsv"):
        read_parallel_files(missing, missing)


@pytest.mark.parametrize("bad_line, found", [("only one field", 1), ("a\tb\tc", 3)])
def test_bad_tsv_line_names_file_and_line(tmp_path, bad_line, found):
    path = write(tmp_path / "bad.tsv", f"Ja.\tYes.\nNein.\tNo.\n{bad_line}\nGut.\tGood.\n")
    with pytest.raises(CorpusFormatError, match=rf"bad\.tsv, line 3: expected 2 .*found {found}"):
        read_tsv(path)


def test_empty_sentence_is_an_error(tmp_path):
    with pytest.raises(CorpusFormatError, match="line 2: empty sentence"):
        read_tsv(write(tmp_path / "blank.tsv", "Ja.\tYes.\n\t\n"))


def test_parallel_files_with_different_lengths_report_both_counts(tmp_path):
    src = write(tmp_path / "train.de", "Ja.\nNein.\nGut.\n")
    tgt = write(tmp_path / "train.en", "Yes.\nNo.\n")
    with pytest.raises(CorpusFormatError, match=r"train\.de has 3 lines.*train\.en has 2 lines"):
        read_parallel_files(src, tgt)


def test_invalid_utf8_reports_the_byte_offset(tmp_path):
    path = tmp_path / "latin1.tsv"
    path.write_bytes("Ja.\tYes.\nSchön.\tNice.\n".encode("latin-1"))  # "ö" is byte 0xf6 at offset 12
    with pytest.raises(CorpusFormatError, match=r"latin1\.tsv: invalid UTF-8 at byte offset 12"):
        read_tsv(path)


def test_empty_corpus_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        read_tsv(write(tmp_path / "empty.tsv", ""))
    empty_de, empty_en = write(tmp_path / "e.de", ""), write(tmp_path / "e.en", "")
    with pytest.raises(ValueError, match="empty"):
        read_parallel_files(empty_de, empty_en)
    with pytest.raises(ValueError, match="empty"):
        build_vocabs([])


def test_gzip_parallel_files(tmp_path):
    german, english = "Der Hund schläft.\nIch gehe.\n", "The dog sleeps.\nI go.\n"
    (tmp_path / "train.de.gz").write_bytes(gzip.compress(german.encode("utf-8")))
    (tmp_path / "train.en").write_bytes(gzip.compress(english.encode("utf-8")))  # gzip found by magic bytes
    expected = [("Der Hund schläft.", "The dog sleeps."), ("Ich gehe.", "I go.")]
    assert read_parallel_files(tmp_path / "train.de.gz", tmp_path / "train.en") == expected
    assert load_corpus((tmp_path / "train.de.gz", tmp_path / "train.en")) == expected


def test_broken_gzip_is_a_format_error(tmp_path):
    with pytest.raises(CorpusFormatError, match="gzip"):
        read_tsv(write(tmp_path / "broken.tsv.gz", "not compressed"))


# --- the toy corpus --------------------------------------------------------------------

def test_load_toy_corpus_reads_the_committed_files():
    for split, size in (("train", corpus.N_TRAIN), ("valid", corpus.N_VALID), ("test", corpus.N_TEST)):
        assert len(load_toy_corpus(split)) == size
    with pytest.raises(ValueError, match="split"):
        load_toy_corpus("dev")


def test_load_toy_corpus_regenerates_when_data_dir_is_absent(monkeypatch, tmp_path):
    committed = load_toy_corpus("valid")
    monkeypatch.setattr(data, "DATA_DIR", tmp_path / "no_data_here")
    assert not data.toy_corpus_dir().exists()
    assert load_toy_corpus("valid") == committed


def test_data_dir_does_not_depend_on_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert data.toy_corpus_dir() == Path(data.__file__).resolve().parent.parent / "data" / "toy_de_en"
    assert len(load_toy_corpus("test")) == corpus.N_TEST


# --- vocabularies, length limits, dataset --------------------------------------------

def test_build_vocabs_min_freq_and_lowercase():
    src_vocab, tgt_vocab = build_vocabs(PAIRS, min_freq=2)
    assert "Hund" in src_vocab and "Katze" not in src_vocab  # "Katze" occurs once
    assert src_vocab.encode(["Katze"]) == [UNK_ID]
    lower_src, _ = build_vocabs(PAIRS, tokenizers=data.default_tokenizers(lowercase=True))
    assert "der" in lower_src and "Der" not in lower_src
    assert "The" in tgt_vocab


def test_length_limit_filter_and_truncate_report():
    token_pairs = [(["a"] * n, ["b"] * m) for n, m in ((3, 3), (6, 2), (2, 7), (5, 5))]
    kept, report = limit_length(token_pairs, 5, "filter")
    assert [len(s) for s, _ in kept] == [3, 5]
    assert (report.total, report.kept, report.filtered, report.truncated) == (4, 2, 2, 0)
    kept, report = limit_length(token_pairs, 5, "truncate")
    assert max(max(len(s), len(t)) for s, t in kept) == 5
    assert (report.kept, report.filtered, report.truncated) == (4, 0, 2)
    assert "2 truncated" in str(report)
    with pytest.raises(ValueError, match="on_long"):
        limit_length(token_pairs, 5, "drop")
    with pytest.raises(ValueError, match="max_len"):
        limit_length(token_pairs, 0)


def test_dataset_layout_and_report():
    src_vocab, tgt_vocab = build_vocabs(PAIRS)
    dataset = make_dataset(PAIRS, src_vocab, tgt_vocab, max_len=6)
    assert len(dataset) == 3 and dataset.report.filtered == 1  # the 10-token sentence is dropped
    src, tgt = dataset[0]
    assert src.dtype == torch.long and src[-1].item() == EOS_ID and BOS_ID not in src.tolist()
    assert tgt[0].item() == BOS_ID and tgt[-1].item() == EOS_ID
    assert src_vocab.decode(src.tolist()) == ["Der", "Hund", "schläft", "."]
    assert tgt_vocab.decode(tgt.tolist()) == ["The", "dog", "sleeps", "."]
    assert dataset.src_lengths[0] == 5 and dataset.tgt_lengths[0] == 5


def test_dataset_errors():
    src_vocab, tgt_vocab = build_vocabs(PAIRS)
    with pytest.raises(ValueError, match="no pairs left"):
        make_dataset(PAIRS, src_vocab, tgt_vocab, max_len=1)
    with pytest.raises(ValueError):
        TranslationDataset([[4]], [])


# --- batching --------------------------------------------------------------------------

def test_collate_shapes_padding_and_shift(toy_train_sample):
    *_, dataset = toy_train_sample
    examples = [dataset[i] for i in range(7)]
    batch = collate_batch(examples)
    assert isinstance(batch, Batch)
    longest_src = max(len(s) for s, _ in examples)
    longest_tgt = max(len(t) for _, t in examples) - 1
    assert batch.src.shape == (7, longest_src) and batch.src.dtype == torch.long
    assert batch.tgt_in.shape == batch.tgt_out.shape == (7, longest_tgt)
    for row, (src, tgt) in enumerate(examples):
        assert batch.src[row, : len(src)].tolist() == src.tolist()
        assert (batch.src[row, len(src):] == PAD_ID).all()
        n = len(tgt) - 1
        assert batch.tgt_in[row, 0].item() == BOS_ID and batch.tgt_out[row, n - 1].item() == EOS_ID
        assert (batch.tgt_in[row, n:] == PAD_ID).all() and (batch.tgt_out[row, n:] == PAD_ID).all()
    real = batch.tgt_in[:, 1:] != PAD_ID  # positions of y1 ... yn in the decoder input
    assert torch.equal(batch.tgt_in[:, 1:][real], batch.tgt_out[:, :-1][real])  # shifted right by one
    with pytest.raises(ValueError):
        collate_batch([])


def test_sampler_covers_every_index_once_and_is_reproducible(toy_train_sample):
    *_, dataset = toy_train_sample
    sampler = BucketBatchSampler(dataset.lengths, batch_size=64, seed=3)
    epoch0 = list(sampler)
    flat = [i for batch in epoch0 for i in batch]
    assert sorted(flat) == list(range(len(dataset)))
    assert len(epoch0) == len(sampler) == -(-len(dataset) // 64)
    assert sum(len(b) < 64 for b in epoch0) <= 1
    assert list(BucketBatchSampler(dataset.lengths, batch_size=64, seed=3)) == epoch0
    sampler.set_epoch(1)
    epoch1 = list(sampler)
    assert epoch1 != epoch0 and sorted(i for b in epoch1 for i in b) == sorted(flat)
    sampler.set_epoch(0)
    assert list(sampler) == epoch0
    assert list(BucketBatchSampler(dataset.lengths, batch_size=64, seed=4)) != epoch0


def test_sampler_without_shuffle_and_drop_last():
    lengths = [5, 1, 4, 2, 3, 9, 7]
    sampler = BucketBatchSampler(lengths, batch_size=3, shuffle=False)
    assert list(sampler) == [[1, 3, 4], [2, 0, 6], [5]]
    dropping = BucketBatchSampler(lengths, batch_size=3, drop_last=True, seed=1)
    assert len(dropping) == 2 and all(len(b) == 3 for b in dropping)


@pytest.mark.parametrize("batch_size", [0, -4, 2.5, True, "64"])
def test_bad_batch_size(batch_size):
    with pytest.raises(ValueError, match="batch_size"):
        BucketBatchSampler([3, 4, 5], batch_size)
    with pytest.raises(ValueError, match="batch_size"):
        random_batches(3, batch_size)


def test_sampler_other_bad_arguments():
    with pytest.raises(ValueError, match="empty"):
        BucketBatchSampler([], 4)
    with pytest.raises(ValueError, match="pool_batches"):
        BucketBatchSampler([1, 2], 4, pool_batches=0)


def test_bucketing_reduces_padding(toy_train_sample):
    *_, dataset = toy_train_sample
    plain = padding_fraction(random_batches(len(dataset), 64, seed=0), dataset.src_lengths)
    bucketed = padding_fraction(BucketBatchSampler(dataset.lengths, 64, seed=0), dataset.src_lengths)
    assert 0 <= bucketed < plain / 3
    assert padding_fraction([[0, 1]], [4, 4]) == 0.0
    assert padding_fraction([[0, 1]], [1, 3]) == pytest.approx(1 / 3)


def test_make_dataloader(toy_train_sample):
    *_, dataset = toy_train_sample
    loader = make_dataloader(dataset, batch_size=32, seed=1)
    batch = next(iter(loader))
    assert isinstance(batch, Batch) and batch.src.shape[0] == 32
    assert sum(b.src.shape[0] for b in loader) == len(dataset)
    loader.batch_sampler.set_epoch(2)
    plain = make_dataloader(dataset, batch_size=32, bucketed=False, seed=1)
    assert next(iter(plain)).tgt_in.shape[0] == 32
    with pytest.raises(ValueError, match="batch_size"):
        make_dataloader(dataset, batch_size=0)


# --- statistics and command line -------------------------------------------------------

def test_statistics_and_cli(tmp_path, capsys):
    stats = data.corpus_statistics(n_train=400, n_valid=50, n_test=50)
    assert stats["splits"]["train"]["pairs"] == 400
    assert stats["padding"]["bucketed"]["src"] < stats["padding"]["plain"]["src"]
    assert "| `perfect` |" in data.format_statistics(stats)
    assert data.main(["--write", str(tmp_path)]) == 0
    assert "wrote train" in capsys.readouterr().out
    assert read_tsv(tmp_path / "test.tsv") == load_toy_corpus("test")


def test_token_batch_sampler_fills_batches_by_target_tokens():
    from course_lib.data import TokenBatchSampler

    lengths = [3, 10, 5, 7, 2, 12, 4, 4, 9, 1] * 20
    target = [n + 1 for n in lengths]
    sampler = TokenBatchSampler(lengths, target, max_tokens=30, seed=3)
    batches = sampler.batches()
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # each example exactly once
    assert all(sum(target[i] for i in b) <= 30 for b in batches)
    assert len(sampler) == len(batches) and len({len(b) for b in batches}) > 1  # short sentences, bigger batches
    assert sampler.batches() == batches  # deterministic
    sampler.set_epoch(1)
    assert sampler.batches() != batches  # a new order each epoch
    single = TokenBatchSampler([50], [50], max_tokens=10)
    assert single.batches() == [[0]]  # a sentence longer than the budget still gets its own batch
    with pytest.raises(ValueError, match="max_tokens must be a positive int"):
        TokenBatchSampler(lengths, target, max_tokens=0)
    with pytest.raises(ValueError, match="target_lengths has 1"):
        TokenBatchSampler(lengths, [1], max_tokens=10)
