"""Loading parallel text and turning it into padded batches for training a translator.

Reading:
    ``load_toy_corpus(split)`` returns the course corpus (``data/toy_de_en/{split}.tsv``); when the
    repository's ``data/`` folder is absent (the package was pip-installed, e.g. on Colab) the
    corpus is regenerated in memory by :mod:`course_lib.corpus` and is identical to the files.
    ``read_tsv`` and ``read_parallel_files`` read other corpora (``german<TAB>english`` lines, or
    line-aligned ``train.de`` + ``train.en`` files as in Multi30k, optionally gzip-compressed).
    Problems raise clear errors (file, line, byte offset); nothing is silently dropped.

Encoding (conventions of the course: ``<pad>=0, <bos>=1, <eos>=2, <unk>=3``, batch first):

    source        x1 ... xm <eos>           the encoder input
    decoder input <bos> y1 ... yn           the target shifted right (teacher forcing)
    labels        y1 ... yn <eos>           what the decoder must predict at each position

Batching: ``collate_batch`` pads a list of examples into ``Batch(src, tgt_in, tgt_out)`` of
``(batch, seq)`` LongTensors; ``BucketBatchSampler`` groups sentences of similar length so little
compute is spent on padding (see ``padding_fraction``); ``make_dataloader`` puts it together.

``python -m course_lib.data`` prints the corpus statistics of the data card;
``python -m course_lib.data --write data/toy_de_en`` regenerates the committed files.
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import random
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from course_lib import corpus
from course_lib.tokenization import BOS_ID, EOS_ID, PAD_ID, Tokenizer, Vocab

DATA_DIR = Path(__file__).resolve().parent.parent / "data"  # the repository's data folder
TOY_CORPUS_NAME = "toy_de_en"

Pair = tuple[str, str]
TokenPair = tuple[list[str], list[str]]


class CorpusFormatError(ValueError):
    """A corpus file is not in the expected format (bad line, bad encoding, unequal lengths, empty)."""


# ---------------------------------------------------------------------------------------
# Reading files
# ---------------------------------------------------------------------------------------

def _read_text(path: str | os.PathLike) -> str:
    """Read a UTF-8 text file, decompressing it first if it is gzip (by suffix or magic bytes)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    raw = path.read_bytes()
    compressed = raw[:2] == b"\x1f\x8b" or path.suffix == ".gz"
    if compressed:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise CorpusFormatError(f"{path}: not a valid gzip file: {exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = "after decompression" if compressed else "in the file"
        raise CorpusFormatError(
            f"{path}: invalid UTF-8 at byte offset {exc.start} ({where}): {raw[exc.start:exc.start + 4]!r}"
        ) from exc
    return text.removeprefix("\ufeff")  # a byte-order mark is not part of the first sentence


def _lines(text: str) -> list[str]:
    """Split on "\\n" only (also accepting "\\r\\n"); one final newline does not make an extra line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def read_tsv(path: str | os.PathLike) -> list[Pair]:
    """Read ``german<TAB>english`` lines (no header) into a list of (source, target) pairs.

    Args:
        path: a ``.tsv`` file, UTF-8, optionally gzip-compressed.

    Raises:
        FileNotFoundError: the file does not exist.
        CorpusFormatError: a line has not exactly two tab-separated fields or an empty field
            (the message names the file and the 1-based line number), the file is not valid
            UTF-8 (message gives the byte offset), or it contains no pairs.
    """
    pairs: list[Pair] = []
    for number, line in enumerate(_lines(_read_text(path)), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise CorpusFormatError(
                f"{path}, line {number}: expected 2 tab-separated fields (source<TAB>target), found {len(fields)}"
            )
        if not fields[0].strip() or not fields[1].strip():
            raise CorpusFormatError(f"{path}, line {number}: empty sentence")
        pairs.append((fields[0], fields[1]))
    if not pairs:
        raise CorpusFormatError(f"{path}: the corpus is empty (no sentence pairs)")
    return pairs


def read_parallel_files(src_path: str | os.PathLike, tgt_path: str | os.PathLike) -> list[Pair]:
    """Read two line-aligned files (line i of one translates line i of the other), e.g. Multi30k.

    Args:
        src_path: source-language file (``train.de`` or ``train.de.gz``).
        tgt_path: target-language file (``train.en`` or ``train.en.gz``).

    Raises:
        FileNotFoundError: a file does not exist.
        CorpusFormatError: the files have different numbers of lines (both counts in the
            message), a line is empty, the text is not UTF-8, or the files are empty.
    """
    src_lines = _lines(_read_text(src_path))
    tgt_lines = _lines(_read_text(tgt_path))
    if len(src_lines) != len(tgt_lines):
        raise CorpusFormatError(
            f"parallel files differ in length: {src_path} has {len(src_lines)} lines, "
            f"{tgt_path} has {len(tgt_lines)} lines"
        )
    if not src_lines:
        raise CorpusFormatError(f"{src_path} and {tgt_path}: the corpus is empty (no lines)")
    for number, (src, tgt) in enumerate(zip(src_lines, tgt_lines, strict=True), start=1):
        if not src.strip() or not tgt.strip():
            raise CorpusFormatError(f"line {number} is empty in {src_path if not src.strip() else tgt_path}")
    return list(zip(src_lines, tgt_lines, strict=True))


def load_corpus(source: str | os.PathLike | tuple[str | os.PathLike, str | os.PathLike]) -> list[Pair]:
    """Read a corpus: a TSV file path, or a (source file, target file) tuple of parallel files."""
    if isinstance(source, tuple):
        if len(source) != 2:
            raise ValueError(f"give parallel files as (src_path, tgt_path), got {len(source)} paths")
        return read_parallel_files(*source)
    return read_tsv(source)


def toy_corpus_dir() -> Path:
    """Where the committed toy corpus lives (``data/toy_de_en`` in the repository)."""
    return DATA_DIR / TOY_CORPUS_NAME


def load_toy_corpus(split: str = "train") -> list[Pair]:
    """The course's German→English corpus as (german, english) pairs.

    Reads ``data/toy_de_en/{split}.tsv`` (located relative to the package, never the working
    directory) when the repository's data folder is present; otherwise (a pip-installed package)
    regenerates the identical pairs in memory with :func:`course_lib.corpus.make_splits`.

    Args:
        split: "train", "valid" or "test".
    """
    if split not in corpus.SPLIT_NAMES:
        raise ValueError(f"split must be one of {corpus.SPLIT_NAMES}, got {split!r}")
    directory = toy_corpus_dir()
    if directory.is_dir():
        return read_tsv(directory / f"{split}.tsv")
    return [tagged.pair for tagged in corpus.default_tagged_splits()[split]]


# ---------------------------------------------------------------------------------------
# Tokens, vocabularies and length limits
# ---------------------------------------------------------------------------------------

def default_tokenizers(lowercase: bool = False, src_lang: str = "de", tgt_lang: str = "en"
                       ) -> tuple[Tokenizer, Tokenizer]:
    """(source, target) spaCy rule-based tokenizers; ``lowercase`` lower-cases every token."""
    return Tokenizer(src_lang, lowercase=lowercase), Tokenizer(tgt_lang, lowercase=lowercase)


def tokenize_pairs(pairs: Sequence[Pair], tokenizers: tuple[Tokenizer, Tokenizer] | None = None) -> list[TokenPair]:
    """Tokenize (source, target) string pairs into (source tokens, target tokens)."""
    src_tok, tgt_tok = tokenizers or default_tokenizers()
    src = src_tok.tokenize_many(p[0] for p in pairs)
    tgt = tgt_tok.tokenize_many(p[1] for p in pairs)
    return list(zip(src, tgt, strict=True))


def _as_token_pairs(pairs: Sequence, tokenizers) -> list[TokenPair]:
    """Accept raw string pairs (tokenized here) or token-list pairs (used as they are)."""
    if pairs and isinstance(pairs[0][0], str):
        return tokenize_pairs(pairs, tokenizers)
    return [(list(s), list(t)) for s, t in pairs]


def build_vocabs(pairs: Sequence, min_freq: int = 1, tokenizers: tuple[Tokenizer, Tokenizer] | None = None,
                 max_size: int | None = None) -> tuple[Vocab, Vocab]:
    """Build (source vocab, target vocab) from the training pairs.

    Args:
        pairs: raw (german, english) strings, or (tokens, tokens) from :func:`tokenize_pairs`.
        min_freq: tokens seen fewer times become ``<unk>``.
        tokenizers: (source, target) tokenizers for raw strings; default spaCy de/en.
        max_size: keep at most this many non-special tokens per side.
    """
    if not pairs:
        raise ValueError("cannot build vocabularies from an empty corpus")
    token_pairs = _as_token_pairs(pairs, tokenizers)
    src_vocab = Vocab.build((s for s, _ in token_pairs), min_freq=min_freq, max_size=max_size)
    tgt_vocab = Vocab.build((t for _, t in token_pairs), min_freq=min_freq, max_size=max_size)
    return src_vocab, tgt_vocab


@dataclass(frozen=True)
class LengthReport:
    """What a length limit did to a corpus: how many pairs were kept, dropped or cut."""

    total: int
    kept: int
    filtered: int
    truncated: int
    max_len: int | None
    on_long: str

    def __str__(self) -> str:
        if self.max_len is None:
            return f"{self.total} pairs, no length limit"
        return (f"max_len={self.max_len} ({self.on_long}): {self.total} pairs, {self.kept} kept, "
                f"{self.filtered} filtered out, {self.truncated} truncated")


def limit_length(token_pairs: Sequence[TokenPair], max_len: int | None, on_long: str = "filter"
                 ) -> tuple[list[TokenPair], LengthReport]:
    """Apply a length limit to tokenized pairs and report how many pairs it affected.

    Args:
        token_pairs: (source tokens, target tokens) pairs.
        max_len: the most tokens a sentence may have, not counting ``<bos>``/``<eos>``; None = no limit.
        on_long: "filter" drops a pair if either side is longer; "truncate" keeps its first
            ``max_len`` tokens on each side (the encoder still appends ``<eos>``).
    """
    if on_long not in ("filter", "truncate"):
        raise ValueError(f"on_long must be 'filter' or 'truncate', got {on_long!r}")
    if max_len is not None and (not isinstance(max_len, int) or max_len <= 0):
        raise ValueError(f"max_len must be a positive int or None, got {max_len!r}")
    if max_len is None:
        kept = [(list(s), list(t)) for s, t in token_pairs]
        return kept, LengthReport(len(kept), len(kept), 0, 0, None, on_long)
    kept, filtered, truncated = [], 0, 0
    for src, tgt in token_pairs:
        if len(src) <= max_len and len(tgt) <= max_len:
            kept.append((list(src), list(tgt)))
        elif on_long == "filter":
            filtered += 1
        else:
            kept.append((list(src[:max_len]), list(tgt[:max_len])))
            truncated += 1
    return kept, LengthReport(len(token_pairs), len(kept), filtered, truncated, max_len, on_long)


# ---------------------------------------------------------------------------------------
# Dataset and batches
# ---------------------------------------------------------------------------------------

class TranslationDataset(Dataset):
    """Sentence pairs as token ids, ready for teacher forcing.

    Item ``i`` is ``(src, tgt)``: two 1-D LongTensors, ``src = x1 ... xm <eos>`` of shape
    ``(m + 1,)`` and ``tgt = <bos> y1 ... yn <eos>`` of shape ``(n + 2,)``. :func:`collate_batch`
    splits ``tgt`` into the decoder input ``tgt[:-1]`` and the labels ``tgt[1:]``.

    Args:
        src_ids: source sentences as token ids without special tokens.
        tgt_ids: target sentences as token ids without special tokens (same count).
        report: the :class:`LengthReport` of the length limit applied, if any.
    """

    def __init__(self, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]],
                 report: LengthReport | None = None):
        if len(src_ids) != len(tgt_ids):
            raise ValueError(f"src_ids has {len(src_ids)} sentences but tgt_ids has {len(tgt_ids)}")
        if not src_ids:
            raise ValueError("a TranslationDataset needs at least one sentence pair")
        self.src = [[*ids, EOS_ID] for ids in src_ids]
        self.tgt = [[BOS_ID, *ids, EOS_ID] for ids in tgt_ids]
        self.report = report or LengthReport(len(self.src), len(self.src), 0, 0, None, "filter")

    @classmethod
    def from_pairs(cls, pairs: Sequence, src_vocab: Vocab, tgt_vocab: Vocab,
                   tokenizers: tuple[Tokenizer, Tokenizer] | None = None, max_len: int | None = None,
                   on_long: str = "filter") -> TranslationDataset:
        """Tokenize, limit lengths and encode pairs; the length report is in ``dataset.report``.

        Args:
            pairs: raw (german, english) strings, or token-list pairs from :func:`tokenize_pairs`.
            src_vocab, tgt_vocab: vocabularies (unknown tokens become ``<unk>``).
            tokenizers: (source, target) tokenizers for raw strings; default spaCy de/en.
            max_len, on_long: see :func:`limit_length`.
        """
        if not pairs:
            raise ValueError("cannot build a dataset from an empty corpus")
        token_pairs, report = limit_length(_as_token_pairs(pairs, tokenizers), max_len, on_long)
        if not token_pairs:
            raise ValueError(f"no pairs left after the length limit: {report}")
        return cls([src_vocab.encode(s) for s, _ in token_pairs], [tgt_vocab.encode(t) for _, t in token_pairs],
                   report)

    def __len__(self) -> int:
        return len(self.src)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.tensor(self.src[index], dtype=torch.long), torch.tensor(self.tgt[index], dtype=torch.long)

    @property
    def src_lengths(self) -> list[int]:
        """Length of each padded-to source row: tokens + ``<eos>``."""
        return [len(ids) for ids in self.src]

    @property
    def tgt_lengths(self) -> list[int]:
        """Length of each decoder input (and label) row: tokens + 1."""
        return [len(ids) - 1 for ids in self.tgt]

    @property
    def lengths(self) -> list[int]:
        """The longer of the two sides per example; what :class:`BucketBatchSampler` sorts by."""
        return [max(len(s), len(t) - 1) for s, t in zip(self.src, self.tgt, strict=True)]


def make_dataset(pairs: Sequence, src_vocab: Vocab, tgt_vocab: Vocab,
                 tokenizers: tuple[Tokenizer, Tokenizer] | None = None, max_len: int | None = None,
                 on_long: str = "filter") -> TranslationDataset:
    """Raw pairs to a :class:`TranslationDataset` (same as ``TranslationDataset.from_pairs``)."""
    return TranslationDataset.from_pairs(pairs, src_vocab, tgt_vocab, tokenizers, max_len, on_long)


class Batch(NamedTuple):
    """A padded batch, batch first.

    src:     (batch, src_len) LongTensor, ``x1 ... xm <eos> <pad> ...``
    tgt_in:  (batch, tgt_len) LongTensor, ``<bos> y1 ... yn <pad> ...`` (decoder input)
    tgt_out: (batch, tgt_len) LongTensor, ``y1 ... yn <eos> <pad> ...`` (labels)
    """

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor


def pad_sequences(sequences: Sequence[torch.Tensor], pad_id: int = PAD_ID) -> torch.Tensor:
    """Right-pad 1-D LongTensors into a ``(len(sequences), longest)`` LongTensor."""
    if not sequences:
        raise ValueError("cannot pad an empty list of sequences")
    longest = max(len(seq) for seq in sequences)
    out = torch.full((len(sequences), longest), pad_id, dtype=torch.long)  # (batch, seq)
    for row, seq in enumerate(sequences):
        out[row, : len(seq)] = seq
    return out


def collate_batch(examples: Sequence[tuple[torch.Tensor, torch.Tensor]], pad_id: int = PAD_ID) -> Batch:
    """Pad ``(src, tgt)`` examples from :class:`TranslationDataset` into a :class:`Batch`.

    Use it as ``DataLoader(..., collate_fn=collate_batch)``; for another pad id use
    ``functools.partial(collate_batch, pad_id=...)``.

    Args:
        examples: list of (src ``(m+1,)``, tgt ``(n+2,)``) LongTensors.
        pad_id: id written into padding positions.
    """
    if not examples:
        raise ValueError("cannot collate an empty batch")
    src = pad_sequences([s for s, _ in examples], pad_id)  # (batch, src_len)
    tgt_in = pad_sequences([t[:-1] for _, t in examples], pad_id)  # (batch, tgt_len): <bos> y1 ... yn
    tgt_out = pad_sequences([t[1:] for _, t in examples], pad_id)  # (batch, tgt_len): y1 ... yn <eos>
    return Batch(src, tgt_in, tgt_out)


def _check_batch_size(batch_size: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")


def _epoch_rng(seed: int, epoch: int) -> random.Random:
    """A generator for one epoch; different epochs (and seeds) give independent streams."""
    return random.Random(seed * 1_000_003 + epoch)


class BucketBatchSampler(Sampler[list[int]]):
    """Yield batches of indices whose sentences have similar lengths.

    Each epoch the indices are shuffled, cut into pools of ``batch_size * pool_batches``, each
    pool is sorted by length, the sorted pools are cut into batches and the batch order is
    shuffled. Every index appears exactly once per epoch (only the last batch may be smaller).
    The order depends only on ``seed`` and the epoch set by :meth:`set_epoch`, so runs are
    reproducible and each epoch is shuffled differently. With ``shuffle=False`` the batches
    are simply the length-sorted indices in order.

    Args:
        lengths: length of each example (e.g. ``dataset.lengths``).
        batch_size: examples per batch (> 0).
        shuffle: shuffle pools and batch order each epoch.
        seed: base seed.
        pool_batches: pool size in batches; larger pools = less padding, less randomness.
        drop_last: drop the final batch if it is smaller than ``batch_size``.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, shuffle: bool = True, seed: int = 0,
                 pool_batches: int = 50, drop_last: bool = False):
        _check_batch_size(batch_size)
        if isinstance(pool_batches, bool) or not isinstance(pool_batches, int) or pool_batches <= 0:
            raise ValueError(f"pool_batches must be a positive int, got {pool_batches!r}")
        if len(lengths) == 0:
            raise ValueError("lengths is empty: nothing to sample")
        if any(int(n) < 0 for n in lengths):
            raise ValueError("lengths must be >= 0")
        self.lengths = [int(n) for n in lengths]
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.pool_batches = pool_batches
        self.drop_last = drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose (deterministic) order the next iteration yields."""
        self.epoch = int(epoch)

    def batches(self) -> list[list[int]]:
        """All batches of the current epoch, in order."""
        n = len(self.lengths)
        if not self.shuffle:
            order = sorted(range(n), key=lambda i: (self.lengths[i], i))
            return self._chunk(order)
        rng = _epoch_rng(self.seed, self.epoch)
        indices = list(range(n))
        rng.shuffle(indices)
        pool_size = self.batch_size * self.pool_batches
        order: list[int] = []
        for start in range(0, n, pool_size):
            order += sorted(indices[start:start + pool_size], key=lambda i: (self.lengths[i], i))
        batches = self._chunk(order)
        rng.shuffle(batches)
        return batches

    def _chunk(self, order: list[int]) -> list[list[int]]:
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches())

    def __len__(self) -> int:
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


class TokenBatchSampler(BucketBatchSampler):
    """Like :class:`BucketBatchSampler`, but each batch holds about ``max_tokens`` target tokens.

    Pools of shuffled examples are sorted by length and cut greedily: a batch closes before the
    example that would take its summed target tokens above ``max_tokens`` (a batch holds at least
    one example). Short sentences thus come in big batches and long ones in small batches, and
    every update sees a similar amount of signal. Deterministic per seed and epoch, like the parent.

    Args:
        lengths: length of each example used for sorting (e.g. ``dataset.lengths``).
        target_lengths: target tokens of each example (e.g. ``dataset.tgt_lengths``).
        max_tokens: target tokens per batch (> 0).
        shuffle, seed: as in :class:`BucketBatchSampler`.
        pool_batches: pool size in (average) batches.
    """

    def __init__(self, lengths: Sequence[int], target_lengths: Sequence[int], max_tokens: int,
                 shuffle: bool = True, seed: int = 0, pool_batches: int = 50):
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if len(target_lengths) != len(lengths):
            raise ValueError(f"lengths has {len(lengths)} entries but target_lengths has {len(target_lengths)}")
        self.target_lengths = [int(n) for n in target_lengths]
        self.max_tokens = max_tokens
        mean = max(1.0, sum(self.target_lengths) / max(1, len(self.target_lengths)))
        super().__init__(lengths, max(1, round(max_tokens / mean)), shuffle, seed, pool_batches)
        self._cache: tuple[int, list[list[int]]] | None = None

    def batches(self) -> list[list[int]]:
        if self._cache is None or self._cache[0] != self.epoch:
            self._cache = (self.epoch, super().batches())
        return [list(b) for b in self._cache[1]]

    def _chunk(self, order: list[int]) -> list[list[int]]:
        batches: list[list[int]] = []
        current: list[int] = []
        tokens = 0
        for i in order:
            n = self.target_lengths[i]
            if current and tokens + n > self.max_tokens:
                batches.append(current)
                current, tokens = [], 0
            current.append(i)
            tokens += n
        if current:
            batches.append(current)
        return batches

    def __len__(self) -> int:
        return len(self.batches())


def random_batches(n: int, batch_size: int, seed: int = 0, epoch: int = 0) -> list[list[int]]:
    """Plain shuffled batches (no bucketing) of ``range(n)``: the baseline for :func:`padding_fraction`."""
    _check_batch_size(batch_size)
    indices = list(range(n))
    _epoch_rng(seed, epoch).shuffle(indices)
    return [indices[i:i + batch_size] for i in range(0, n, batch_size)]


def padding_fraction(batches: Iterable[Sequence[int]], lengths: Sequence[int]) -> float:
    """Fraction of positions that are padding when each batch is padded to its longest member.

    Args:
        batches: lists of example indices.
        lengths: length of each example (e.g. ``dataset.src_lengths``).
    """
    real = padded = 0
    for batch in batches:
        sizes = [lengths[i] for i in batch]
        if sizes:
            real += sum(sizes)
            padded += max(sizes) * len(sizes)
    if padded == 0:
        raise ValueError("no batches (or only empty ones) to measure")
    return 1.0 - real / padded


def make_dataloader(dataset: TranslationDataset, batch_size: int, bucketed: bool = True, shuffle: bool = True,
                    seed: int = 0, pad_id: int = PAD_ID) -> DataLoader:
    """A DataLoader yielding :class:`Batch` objects.

    Args:
        dataset: a :class:`TranslationDataset`.
        batch_size: examples per batch (> 0).
        bucketed: group similar lengths with :class:`BucketBatchSampler` (call
            ``loader.batch_sampler.set_epoch(epoch)`` each epoch for a fresh order).
        shuffle: shuffle each epoch (seeded, reproducible).
        seed: seed for the order.
        pad_id: padding id (the course uses 0).
    """
    _check_batch_size(batch_size)

    def collate(examples):
        return collate_batch(examples, pad_id)

    if bucketed:
        sampler = BucketBatchSampler(dataset.lengths, batch_size, shuffle=shuffle, seed=seed)
        return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)
    generator = torch.Generator().manual_seed(seed) if shuffle else None
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=generator, collate_fn=collate)


# ---------------------------------------------------------------------------------------
# Corpus statistics (the numbers in data/README.md)
# ---------------------------------------------------------------------------------------

def _side_stats(token_lists: Sequence[Sequence[str]]) -> dict:
    lengths = [len(tokens) for tokens in token_lists]
    return {"tokens": sum(lengths), "types": len({tok for tokens in token_lists for tok in tokens}),
            "mean_len": sum(lengths) / len(lengths), "max_len": max(lengths)}


def corpus_statistics(seed: int = corpus.DEFAULT_SEED, batch_size: int = 64, n_train: int = corpus.N_TRAIN,
                      n_valid: int = corpus.N_VALID, n_test: int = corpus.N_TEST) -> dict:
    """Statistics of the regenerated toy corpus: sizes, lengths, types, rarest words, tags, padding.

    Lengths count spaCy tokens including punctuation. Padding fractions are for the training
    split in ``batch_size`` batches, plain shuffled vs :class:`BucketBatchSampler` (epoch 0).

    Args:
        seed: corpus seed.
        batch_size: batch size for the padding fractions.
        n_train, n_valid, n_test: split sizes (the defaults are those of the committed files).
    """
    tagged = corpus.make_tagged_splits(seed, n_train, n_valid, n_test)
    tokenizers = default_tokenizers()
    stats: dict = {"seed": seed, "splits": {}, "phenomena": {}}
    token_pairs = {}
    for name, items in tagged.items():
        token_pairs[name] = tokenize_pairs([t.pair for t in items], tokenizers)
        stats["splits"][name] = {"pairs": len(items),
                                 "de": _side_stats([s for s, _ in token_pairs[name]]),
                                 "en": _side_stats([t for _, t in token_pairs[name]])}
        stats["phenomena"][name] = corpus.phenomenon_counts(items)
    for side, index in (("de", 0), ("en", 1)):
        counts = Counter(tok for pair in token_pairs["train"] for tok in pair[index])
        rarest = min(counts.values())
        stats[f"min_freq_{side}"] = rarest
        stats[f"rarest_{side}"] = sorted(tok for tok, n in counts.items() if n == rarest)
    src_vocab, tgt_vocab = build_vocabs(token_pairs["train"])
    dataset = TranslationDataset.from_pairs(token_pairs["train"], src_vocab, tgt_vocab)
    plain = random_batches(len(dataset), batch_size, seed=0)
    bucketed = BucketBatchSampler(dataset.lengths, batch_size, seed=0).batches()
    stats["padding"] = {"batch_size": batch_size,
                        "plain": {"src": padding_fraction(plain, dataset.src_lengths),
                                  "tgt": padding_fraction(plain, dataset.tgt_lengths)},
                        "bucketed": {"src": padding_fraction(bucketed, dataset.src_lengths),
                                     "tgt": padding_fraction(bucketed, dataset.tgt_lengths)}}
    stats["vocab_size"] = {"de": len(src_vocab), "en": len(tgt_vocab)}
    return stats


def format_statistics(stats: dict) -> str:
    """The statistics as Markdown tables (pasted into the data card)."""
    lines = ["| split | pairs | de tokens | de types | de mean len | de max len "
             "| en tokens | en types | en mean len | en max len |", "|---" * 10 + "|"]
    for name, s in stats["splits"].items():
        de, en = s["de"], s["en"]
        lines.append(f"| {name} | {s['pairs']} | {de['tokens']} | {de['types']} | {de['mean_len']:.2f} "
                     f"| {de['max_len']} | {en['tokens']} | {en['types']} | {en['mean_len']:.2f} | {en['max_len']} |")
    lines += ["", f"Vocabulary from train (with 4 specials): de {stats['vocab_size']['de']}, "
                  f"en {stats['vocab_size']['en']}.",
              f"Rarest German token(s) in train: {stats['min_freq_de']}x ({', '.join(stats['rarest_de'])}); "
              f"rarest English: {stats['min_freq_en']}x ({', '.join(stats['rarest_en'])}).", "",
              "| phenomenon | train | valid | test | what it is |", "|---|---|---|---|---|"]
    for tag, description in corpus.PHENOMENA.items():
        counts = " | ".join(str(stats["phenomena"][name][tag]) for name in stats["splits"])
        lines.append(f"| `{tag}` | {counts} | {description} |")
    pad = stats["padding"]
    lines += ["", f"Padding fraction, train split, batch size {pad['batch_size']}:", "",
              "| batching | source | target |", "|---|---|---|",
              f"| plain shuffled | {pad['plain']['src']:.3f} | {pad['plain']['tgt']:.3f} |",
              f"| length-bucketed | {pad['bucketed']['src']:.3f} | {pad['bucketed']['tgt']:.3f} |"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: print the corpus statistics, or regenerate the TSV files with ``--write DIR``."""
    parser = argparse.ArgumentParser(prog="python -m course_lib.data",
                                     description="Print the statistics of the course's toy corpus (the numbers "
                                                 "of data/README.md), or regenerate its files with --write.")
    parser.add_argument("--write", metavar="DIR", help="regenerate train.tsv, valid.tsv and test.tsv into DIR")
    parser.add_argument("--seed", type=int, default=corpus.DEFAULT_SEED, help="corpus seed (default %(default)s)")
    args = parser.parse_args(argv)
    if args.write:
        for name, path in corpus.write_splits(args.write, seed=args.seed).items():
            print(f"wrote {name}: {path}")
        return 0
    print(format_statistics(corpus_statistics(args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
