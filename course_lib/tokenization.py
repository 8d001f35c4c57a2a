"""Tokenizers and vocabularies for the course.

Tokenizers are spaCy's rule-based ones from ``spacy.blank(lang)``: they split punctuation,
clitics and numbers by hand-written rules and need no model download, so they work offline
and on Colab. ``Vocab`` maps tokens to integer ids with four fixed special tokens:

    <pad> = 0, <bos> = 1, <eos> = 2, <unk> = 3

Vocabularies are built in a reproducible order (most frequent first, ties in string order: code points, capitals first), so
the same corpus always gives the same ids.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

from .bpe import END_OF_WORD

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3

# Characters that attach to the previous token when text is detokenized ("dog ." -> "dog.").
_NO_SPACE_BEFORE = {".", ",", "!", "?", ";", ":", ")", "]", "%", "'s", "n't"}
_NO_SPACE_AFTER = {"(", "["}


@cache
def _blank_pipeline(lang: str):
    import spacy

    return spacy.blank(lang)


class Tokenizer:
    """A spaCy rule-based tokenizer (no statistical model, nothing downloaded).

    Args:
        lang: a spaCy language code such as ``"de"`` or ``"en"``.
        lowercase: lower-case every token after splitting.
    """

    def __init__(self, lang: str, lowercase: bool = False):
        if not isinstance(lang, str) or not lang:
            raise ValueError(f"lang must be a language code such as 'de' or 'en', got {lang!r}")
        self.lang = lang
        self.lowercase = lowercase
        try:
            self._nlp = _blank_pipeline(lang)
        except (ImportError, KeyError) as exc:  # spaCy raises ImportError for unknown codes
            raise ValueError(f"lang {lang!r} is not a language spaCy knows: {exc}") from exc

    def __call__(self, text: str) -> list[str]:
        """Split one string into a list of token strings (whitespace dropped)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        tokens = [t.text for t in self._nlp.tokenizer(text) if not t.is_space]
        return [t.lower() for t in tokens] if self.lowercase else tokens

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Tokenize many strings: the same token lists as calling the tokenizer on each string.

        A convenience, not a speed-up: in spaCy 3 ``Tokenizer.pipe`` is itself a loop over the texts.
        """
        out = []
        for doc in self._nlp.tokenizer.pipe(texts, batch_size=1000):
            tokens = [t.text for t in doc if not t.is_space]
            out.append([t.lower() for t in tokens] if self.lowercase else tokens)
        return out

    def __repr__(self) -> str:
        return f"Tokenizer(lang={self.lang!r}, lowercase={self.lowercase})"


def whitespace_tokenize(text: str) -> list[str]:
    """The naive baseline: split on whitespace only (punctuation stays glued to words)."""
    return text.split()


def detokenize(tokens: Sequence[str]) -> str:
    """Join tokens into readable text: no space before punctuation such as '.' or ','.

    BPE pieces (the last piece of each word ends with ``"</w>"``) are glued into words first.
    """
    if any(token.endswith("</w>") for token in tokens):  # BPE pieces (course_lib.subword): glue into words first
        tokens = pieces_to_words(tokens)
    pieces: list[str] = []
    for token in tokens:
        if pieces and token not in _NO_SPACE_BEFORE and pieces[-1] not in _NO_SPACE_AFTER:
            pieces.append(" ")
        pieces.append(token)
    return "".join(pieces)


class Vocab:
    """A two-way map between tokens and integer ids.

    Ids 0-3 are always ``<pad> <bos> <eos> <unk>``; unknown tokens encode to ``<unk>``.

    Args:
        tokens: the non-special tokens in id order (ids start at 4). Duplicates or special
            tokens in this list are an error.
    """

    def __init__(self, tokens: Iterable[str] = ()):
        self.itos: list[str] = list(SPECIALS)
        self.stoi: dict[str, int] = {tok: i for i, tok in enumerate(SPECIALS)}
        for tok in tokens:
            if not isinstance(tok, str) or not tok:
                raise ValueError(f"tokens must be non-empty strings, got {tok!r}")
            if tok in self.stoi:
                raise ValueError(f"tokens contains {tok!r} twice (or a special token)")
            self.stoi[tok] = len(self.itos)
            self.itos.append(tok)

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    @classmethod
    def build(
        cls,
        token_streams: Iterable[Iterable[str]],
        min_freq: int = 1,
        max_size: int | None = None,
    ) -> Vocab:
        """Build a vocabulary from tokenized sentences.

        Args:
            token_streams: an iterable of token lists (one per sentence).
            min_freq: keep tokens seen at least this many times; rarer ones become ``<unk>``.
            max_size: keep at most this many non-special tokens (the most frequent).

        Order: most frequent first, ties broken by string order (code points), so the result never depends
        on dictionary or set iteration order.
        """
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < 0:
            raise ValueError(f"max_size must be >= 0 or None, got {max_size}")
        counts: Counter[str] = Counter()
        for tokens in token_streams:
            if isinstance(tokens, str):
                raise TypeError("token_streams must yield lists of tokens, got a str (tokenize it first)")
            counts.update(tokens)
        for special in SPECIALS:
            counts.pop(special, None)
        kept = sorted((tok for tok, n in counts.items() if n >= min_freq), key=lambda t: (-counts[t], t))
        if max_size is not None:
            kept = kept[:max_size]
        return cls(kept)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)})"

    def token_to_id(self, token: str) -> int:
        return self.stoi.get(token, UNK_ID)

    def id_to_token(self, index: int) -> str:
        if not 0 <= index < len(self.itos):
            raise IndexError(f"index must be in [0, {len(self.itos)}), got {index}")
        return self.itos[index]

    def encode(self, tokens: Sequence[str], add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Map tokens to ids; optionally wrap them in ``<bos>`` ... ``<eos>``."""
        if isinstance(tokens, str):
            raise TypeError("tokens must be a list of tokens, got a str (tokenize it first)")
        ids = [self.stoi.get(tok, UNK_ID) for tok in tokens]
        return ([BOS_ID] if add_bos else []) + ids + ([EOS_ID] if add_eos else [])

    def decode(self, ids: Iterable[int], strip_specials: bool = True) -> list[str]:
        """Map ids back to tokens.

        With ``strip_specials`` (the default) decoding stops at the first ``<eos>`` and drops
        ``<pad>`` and ``<bos>``; ``<unk>`` is kept so a reader sees what was lost.
        """
        tokens = []
        for index in ids:
            index = int(index)
            if strip_specials:
                if index == EOS_ID:
                    break
                if index in (PAD_ID, BOS_ID):
                    continue
            tokens.append(self.id_to_token(index))
        return tokens

    def to_dict(self) -> dict:
        return {"itos": self.itos}

    @classmethod
    def from_dict(cls, data: dict) -> Vocab:
        itos = data.get("itos") if isinstance(data, dict) else None
        if not isinstance(itos, list) or list(itos[: len(SPECIALS)]) != list(SPECIALS):
            raise ValueError(f"a vocab dict needs 'itos' starting with {list(SPECIALS)}")
        return cls(itos[len(SPECIALS):])

    def save(self, path: str | os.PathLike) -> None:
        """Write the vocabulary as JSON (UTF-8)."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=0), encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocab:
        """Read a vocabulary written by :meth:`save`."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"vocab file not found: {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"vocab file {path} is not valid JSON: {exc}") from exc
        return cls.from_dict(data)


def is_subword_sequence(pieces: Sequence[str]) -> bool:
    """True if ``pieces`` look like BPE pieces (some end with ``"</w>"``)."""
    return any(p.endswith(END_OF_WORD) for p in pieces)


def pieces_to_words(pieces: Sequence[str]) -> list[str]:
    """Glue BPE pieces back into word tokens: ``["Hund", "es</w>", ".</w>"] -> ["Hundes", "."]``.

    A trailing word without its final ``"</w>"`` piece (cut off by a length limit) is kept as it is. An
    ``<unk>`` piece (a piece the vocabulary dropped) stands for a word of its own, never glued to its neighbours.
    """
    words, current = [], ""
    for piece in pieces:
        if piece == UNK:
            words += [current, UNK] if current else [UNK]
            current = ""
        elif piece.endswith(END_OF_WORD):
            words.append(current + piece[: -len(END_OF_WORD)])
            current = ""
        else:
            current += piece
    if current:
        words.append(current)
    return words
