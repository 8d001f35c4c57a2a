"""Byte-pair encoding (BPE), small and readable: learn merges from word counts, then cut words into subwords.

BPE (Sennrich, Haddow and Birch, 2016) starts from single characters and repeatedly merges the
most frequent pair of adjacent symbols into one new symbol. The list of merges, in the order they
were learned, *is* the tokenizer. Frequent words end up as one symbol; rare and unseen words are
cut into pieces that were seen, so nothing becomes ``<unk>`` (unless it has a character never seen).

Conventions used here (notebook 01 builds this file step by step and asserts equality with it):

- A word is spelled as its characters followed by the end-of-word marker ``</w>``, a separate
  symbol: ``"Hund" -> ("H", "u", "n", "d", "</w>")``. The marker lets a piece at the end of a word
  ("d</w>") differ from the same letters inside a word ("d"), and lets ``decode`` put spaces back.
- Ties are broken deterministically: the most frequent pair wins; among equally frequent pairs the
  alphabetically smallest ``(left, right)`` tuple wins. Words are processed in sorted order.
- Encoding replays the merges in the order they were learned, so a training word is cut exactly as
  it was during learning (checked in ``tests/test_bpe.py``).

Checked in ``tests/test_bpe.py`` on an example small enough to work out by hand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise

END_OF_WORD = "</w>"

Pair = tuple[str, str]


def word_to_symbols(word: str) -> tuple[str, ...]:
    """Spell a word as single characters plus the end-of-word marker: "Hund" -> ("H", "u", "n", "d", "</w>")."""
    if not isinstance(word, str) or not word or any(c.isspace() for c in word):
        raise ValueError(f"word must be a non-empty string without whitespace, got {word!r}")
    return (*word, END_OF_WORD)


def count_pairs(word_symbols: Mapping[tuple[str, ...], int]) -> Counter[Pair]:
    """How often each pair of adjacent symbols occurs, weighting each word by its count.

    Args:
        word_symbols: ``{symbols of a word: how often the word occurs}``.
    """
    pairs: Counter[Pair] = Counter()
    for symbols, count in word_symbols.items():
        for left, right in pairwise(symbols):  # (s0, s1), (s1, s2), ...
            pairs[left, right] += count
    return pairs


def best_pair(pairs: Mapping[Pair, int]) -> Pair:
    """The most frequent pair; ties go to the alphabetically smallest pair (so the result never depends on order)."""
    return min(pairs, key=lambda pair: (-pairs[pair], pair))


def merge_pair(word_symbols: Sequence[str], pair: Pair) -> tuple[str, ...]:
    """Replace every occurrence of ``pair`` in one word, scanning left to right (occurrences do not overlap).

    Example: ``merge_pair(("a", "a", "a", "</w>"), ("a", "a")) == ("aa", "a", "</w>")``.
    """
    left, right = pair
    merged: list[str] = []
    i = 0
    while i < len(word_symbols):
        if i + 1 < len(word_symbols) and word_symbols[i] == left and word_symbols[i + 1] == right:
            merged.append(left + right)
            i += 2
        else:
            merged.append(word_symbols[i])
            i += 1
    return tuple(merged)


def learn_bpe(word_counts: Mapping[str, int], num_merges: int, min_count: int = 2) -> list[Pair]:
    """Learn up to ``num_merges`` merges from word frequencies.

    Args:
        word_counts: ``{word: count}``, e.g. a ``Counter`` of the words of a corpus.
        num_merges: the most merges to learn (the subword vocabulary grows by one per merge).
        min_count: stop early when the best pair occurs fewer times than this (merging a pair seen
            once would only memorise one word).

    Returns:
        The merges ``[(left, right), ...]`` in the order they were learned.
    """
    if num_merges < 0:
        raise ValueError(f"num_merges must be >= 0, got {num_merges}")
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}")
    words = {word_to_symbols(word): int(count) for word, count in sorted(word_counts.items()) if count > 0}
    merges: list[Pair] = []
    for _ in range(num_merges):
        pairs = count_pairs(words)
        if not pairs:
            break  # every word is a single symbol already
        pair = best_pair(pairs)
        if pairs[pair] < min_count:
            break
        merges.append(pair)
        words = {merge_pair(symbols, pair): count for symbols, count in words.items()}
    return merges


class BPETokenizer:
    """Cut words into subwords with learned merges.

    Args:
        merges: ``[(left, right), ...]`` in the order :func:`learn_bpe` learned them.
    """

    def __init__(self, merges: Iterable[Pair]):
        self.merges: list[Pair] = [tuple(pair) for pair in merges]
        for pair in self.merges:
            if len(pair) != 2 or not all(isinstance(s, str) and s for s in pair):
                raise ValueError(f"each merge must be a pair of non-empty strings, got {pair!r}")
        self._cache: dict[str, tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self.merges)

    def __repr__(self) -> str:
        return f"BPETokenizer(merges={len(self.merges)})"

    def encode_word(self, word: str) -> list[str]:
        """One word -> its subword pieces; the last piece ends with ``</w>``.

        Replays every merge in learned order: "Hundes" -> ["Hund", "es</w>"] (depending on the merges).
        """
        if word not in self._cache:
            symbols = word_to_symbols(word)
            for pair in self.merges:
                if len(symbols) == 1:
                    break
                if pair[0] in symbols:  # cheap test that skips most merges
                    symbols = merge_pair(symbols, pair)
            self._cache[word] = symbols
        return list(self._cache[word])

    def tokenize(self, text: str | Sequence[str]) -> list[str]:
        """A sentence (a string, split on whitespace, or a list of word tokens) -> subword pieces."""
        words = text.split() if isinstance(text, str) else text
        return [piece for word in words for piece in self.encode_word(word)]

    def decode(self, pieces: Iterable[str]) -> str:
        """Subword pieces -> text: glue the pieces and turn each ``</w>`` into a space."""
        text = "".join(pieces)
        return text.replace(END_OF_WORD, " ").strip()
