"""Splits and loaders: where the training, validation and test pairs come from, and how they are batched.

Used by the command line (``python -m course_lib.train``), the benchmarks and the bug finder, so that
all of them read files, hold out splits and batch sentences the same way. Nothing here parses a
command line: :func:`load_splits` takes the file names as arguments.

Checked in ``tests/test_cli.py`` (held-out splits, unpaired files) and ``tests/test_data.py`` (samplers).
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

from torch.utils.data import DataLoader

from . import data, distributed

PathLike = str | os.PathLike


class SplitsError(ValueError):
    """The files given for the splits do not fit together (e.g. three source files but two target files)."""


def split_off(pairs: list, count: int, seed: int) -> tuple[list, list]:
    """Hold out ``count`` random pairs (seeded): returns ``(rest, held_out)``, both in corpus order."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    held = set(order[:count])
    return [p for i, p in enumerate(pairs) if i not in held], [pairs[i] for i in sorted(held)]


def load_splits(
    *,
    train_tsv: PathLike | None = None,
    valid_tsv: PathLike | None = None,
    test_tsv: PathLike | None = None,
    src_files: Sequence[PathLike] | None = None,
    tgt_files: Sequence[PathLike] | None = None,
    max_train_pairs: int | None = None,
    max_eval_pairs: int | None = None,
) -> dict[str, list[tuple[str, str]]]:
    """Raw ``(source, target)`` string pairs for ``"train"``, ``"valid"`` and ``"test"``.

    Give line-aligned files (``src_files``/``tgt_files``: train [valid [test]]), or TSV files, or
    nothing (the course's toy corpus). A missing validation or test split is held out of the training
    pairs (1/20 of them, at most 1,000, seeded).

    Args:
        train_tsv, valid_tsv, test_tsv: ``source<TAB>target`` files (``test_tsv`` needs ``valid_tsv``).
        src_files, tgt_files: the same number of line-aligned files, in the order train, valid, test.
        max_train_pairs: keep only the first N training pairs.
        max_eval_pairs: keep only the first N validation and test pairs.

    Raises:
        SplitsError: unpaired files, or a test file without a validation file.
    """
    if src_files or tgt_files:
        if not (src_files and tgt_files) or len(src_files) != len(tgt_files):
            raise SplitsError("--src-files and --tgt-files need the same number of files (train [valid [test]])")
        given = [data.read_parallel_files(s, t) for s, t in zip(src_files, tgt_files, strict=True)]
    elif train_tsv:
        if test_tsv and not valid_tsv:
            raise SplitsError("--test-tsv needs --valid-tsv too")
        given = [data.read_tsv(train_tsv)] + [data.read_tsv(p) for p in (valid_tsv, test_tsv) if p]
    else:
        given = [data.load_toy_corpus(split) for split in ("train", "valid", "test")]
    train_pairs = given[0]
    held = min(1000, max(1, len(train_pairs) // 20))
    while len(given) < 3:  # carve missing valid/test splits out of the training pairs
        train_pairs, part = split_off(train_pairs, held, seed=len(given))
        given.append(part)
    given[0] = train_pairs
    splits = dict(zip(("train", "valid", "test"), given, strict=True))
    if max_train_pairs:
        splits["train"] = splits["train"][:max_train_pairs]
    if max_eval_pairs:
        splits["valid"] = splits["valid"][:max_eval_pairs]
        splits["test"] = splits["test"][:max_eval_pairs]
    return splits


def unknown_rate(token_pairs, src_vocab, tgt_vocab) -> tuple[float, float]:
    """Share of source and target tokens of ``token_pairs`` that the vocabularies map to ``<unk>``."""
    src = [t for s, _ in token_pairs for t in s]
    tgt = [t for _, ts in token_pairs for t in ts]

    def rate(tokens, vocab) -> float:
        return sum(t not in vocab for t in tokens) / max(1, len(tokens))

    return rate(src, src_vocab), rate(tgt, tgt_vocab)


def make_train_loader(dataset: data.TranslationDataset, batch_size: int, seed: int,
                      batch_tokens: int | None = None) -> DataLoader:
    """Length-bucketed, shuffled batches; under ``torchrun`` each process gets its own share.

    Args:
        dataset: the training set.
        batch_size: sentences per batch (used when ``batch_tokens`` is None).
        seed: shuffling seed.
        batch_tokens: target tokens per batch instead (:class:`~course_lib.data.TokenBatchSampler`).
    """
    if batch_tokens is not None:
        sampler = data.TokenBatchSampler(dataset.lengths, dataset.tgt_lengths, batch_tokens, shuffle=True, seed=seed)
    else:
        sampler = data.BucketBatchSampler(dataset.lengths, batch_size, shuffle=True, seed=seed)
    if distributed.is_distributed():
        sampler = distributed.ShardedBatchSampler(sampler)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=data.collate_batch)


def make_eval_loader(dataset: data.TranslationDataset, batch_size: int = 256) -> DataLoader:
    """Length-sorted, unshuffled batches of ``batch_size`` sentences, for validation losses."""
    return data.make_dataloader(dataset, batch_size, shuffle=False)
