"""Subword units for real text with a well-kept library: Hugging Face ``tokenizers`` (Rust, fast),
trained to follow the course's BPE conventions (:mod:`course_lib.bpe`).

On real text many words are rare (on Multi30k about half of the training words occur once) and
test sentences bring words never seen; a word vocabulary turns them into ``<unk>``. BPE cuts them into
pieces that were seen instead. The course's :mod:`course_lib.bpe` shows the algorithm in readable
Python; here the same algorithm runs in ``tokenizers``' Rust BPE trainer, which learns the merges of a
29,000-sentence corpus in about a second where the readable version needs minutes.

Conventions shared with :mod:`course_lib.bpe`: words come from the course's spaCy tokenizer; each word is
spelled as its characters followed by the end-of-word marker ``"</w>"`` (``course_lib.bpe.END_OF_WORD``),
a symbol of its own, so the last piece of every word ends with ``"</w>"`` (``"Hundes"`` may become
``["Hund", "es</w>"]``) and :func:`course_lib.tokenization.pieces_to_words` (called by ``detokenize``)
glues the pieces back into words at each ``"</w>"``. Inside ``tokenizers`` the marker is written as the
private-use character U+E000 (``MARKER``): a single character, so the Rust trainer treats it as one
symbol, and one that real text practically never contains, so it does not collide with a real character.
Merges and pieces are translated back to ``"</w>"`` on the way out; nothing outside this module sees it. Merges are learned greedily by pair frequency, a pair seen fewer than ``min_count``
times is never merged, and a word is cut by replaying the merges. The two implementations can break ties
between equally frequent pairs differently (the course alphabetically, ``tokenizers`` by its own symbol
ids), so on large corpora their merge lists can differ in order. ``tests/test_subword.py`` checks, on the
classic example of Sennrich et al. (2016), that ``tokenizers`` replays the course's merges exactly and
that both trainers learn the same first merge and as many merges, and cut every training word alike.

Needs the optional dependency ``tokenizers`` (``pip install course_lib[subword]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .bpe import END_OF_WORD, BPETokenizer
from .tokenization import UNK, is_subword_sequence, pieces_to_words  # noqa: F401 (re-exported: they live with detokenize)

MARKER = "\ue000"  # the end-of-word symbol inside `tokenizers`: a private-use character, never in real text


def _require_tokenizers():
    try:
        import tokenizers
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the subword option needs the 'tokenizers' package: pip install 'course_lib[subword]'"
                          ) from exc
    return tokenizers


class SubwordTokenizer:
    """Cut word tokens into BPE pieces (the last piece of a word ends with ``"</w>"``).

    Build one with :meth:`train` (or from saved merges with :meth:`from_merges`).

    Args:
        merges: ``[(left, right), ...]`` in learned order, in the course's spelling (``"</w>"``).
    """

    def __init__(self, merges: Iterable[tuple[str, str]]):
        tokenizers = _require_tokenizers()
        self.merges = [(str(a), str(b)) for a, b in merges]
        inner = [(a.replace(END_OF_WORD, MARKER), b.replace(END_OF_WORD, MARKER)) for a, b in self.merges]
        symbols = {c for a, b in inner for c in a + b}
        vocab = {s: i for i, s in enumerate(sorted(symbols))}
        for a, b in inner:
            vocab.setdefault(a + b, len(vocab))
        model = tokenizers.models.BPE(vocab=vocab, merges=inner, unk_token=None, ignore_merges=False)
        self._tok = tokenizers.Tokenizer(model)
        self._tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
        self._fallback = BPETokenizer(self.merges)  # for words with characters the merges never saw
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def train(cls, word_lists: Iterable[Sequence[str]], num_merges: int, min_count: int = 2) -> SubwordTokenizer:
        """Learn up to ``num_merges`` merges from tokenized sentences with ``tokenizers``' BPE trainer.

        Args:
            word_lists: sentences as lists of word tokens (e.g. the spaCy tokens of the training side).
            num_merges: the most merges to learn.
            min_count: a pair seen fewer times is never merged (as in :func:`course_lib.bpe.learn_bpe`).
        """
        if num_merges < 0:
            raise ValueError(f"num_merges must be >= 0, got {num_merges}")
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        tokenizers = _require_tokenizers()
        lines = [" ".join(w + MARKER for w in words) for words in word_lists]
        alphabet = sorted({c for line in lines for c in line if not c.isspace()})
        tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token=None))
        tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
        trainer = tokenizers.trainers.BpeTrainer(vocab_size=len(alphabet) + num_merges, min_frequency=min_count,
                                                 show_progress=False, initial_alphabet=alphabet,
                                                 limit_alphabet=len(alphabet))
        tok.train_from_iterator(lines, trainer)
        import json

        merges = json.loads(tok.to_str())["model"]["merges"]
        merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in merges]
        return cls([(a.replace(MARKER, END_OF_WORD), b.replace(MARKER, END_OF_WORD)) for a, b in merges])

    @classmethod
    def from_merges(cls, merges: Iterable[Sequence[str]]) -> SubwordTokenizer:
        """Rebuild from saved merges (e.g. a checkpoint's ``train_config``)."""
        return cls([(a, b) for a, b in merges])

    def __len__(self) -> int:
        return len(self.merges)

    def encode_word(self, word: str) -> list[str]:
        """One word -> its pieces, e.g. ``"Hundes" -> ["Hund", "es</w>"]`` (depending on the merges)."""
        if word not in self._cache:
            pieces = self._tok.encode(word + MARKER).tokens
            if "".join(pieces) != word + MARKER:  # `tokenizers` drops characters it has no symbol for
                self._cache[word] = self._fallback.encode_word(word)  # the course's BPE keeps them
            else:
                self._cache[word] = [p.replace(MARKER, END_OF_WORD) for p in pieces]
        return list(self._cache[word])

    def tokenize(self, words: Sequence[str]) -> list[str]:
        """Word tokens of one sentence -> subword pieces."""
        return [piece for word in words for piece in self.encode_word(word)]
