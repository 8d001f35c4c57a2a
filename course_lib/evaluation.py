"""Scoring translations: corpus BLEU (sacrebleu) and exact match.

BLEU is computed by sacrebleu on *detokenized* text (``course_lib.tokenization.detokenize``) with
its standard ``13a`` tokenization, so our numbers are comparable with published ones, and every
score comes with sacrebleu's signature string (e.g. ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|
version:2.6.0``) that says exactly how it was computed. Checked in ``tests/test_decoding.py``:
identical text scores 100, a known pair scores what ``sacrebleu.corpus_bleu`` says.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from torch import nn

from .decoding import translate_token_lists
from .tokenization import Vocab, detokenize


@dataclass
class BleuResult:
    """A corpus BLEU score (0-100) and the sacrebleu signature that pins down how it was computed."""

    score: float
    signature: str

    def __str__(self) -> str:
        return f"BLEU {self.score:.2f} ({self.signature})"


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> BleuResult:
    """Corpus BLEU of detokenized hypotheses against one reference each.

    Args:
        hypotheses: system outputs, one string per sentence.
        references: reference translations, aligned with ``hypotheses``.
    """
    from sacrebleu.metrics import BLEU

    _check_aligned(hypotheses, references)
    metric = BLEU()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return BleuResult(float(score.score), str(metric.get_signature()))


def exact_match_rate(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Fraction (0-1) of sentences translated exactly like the reference (whitespace-normalised)."""
    _check_aligned(hypotheses, references)
    if not hypotheses:
        return 0.0
    same = sum(" ".join(h.split()) == " ".join(r.split()) for h, r in zip(hypotheses, references, strict=True))
    return same / len(hypotheses)


def _check_aligned(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if isinstance(hypotheses, str) or isinstance(references, str):
        raise TypeError("hypotheses and references must be lists of strings, not a single str")
    if len(hypotheses) != len(references):
        raise ValueError(f"got {len(hypotheses)} hypotheses but {len(references)} references")


@dataclass
class TranslationScores:
    """Everything :func:`evaluate_translation` measured.

    Attributes:
        bleu: corpus BLEU (0-100).
        signature: sacrebleu signature of the BLEU computation.
        exact_match: fraction (0-1) of sentences translated exactly.
        seconds: wall-clock time of the decoding.
        sources, hypotheses, references: detokenized text, for showing examples and errors.
    """

    bleu: float
    signature: str
    exact_match: float
    seconds: float
    sources: list[str] = field(repr=False, default_factory=list)
    hypotheses: list[str] = field(repr=False, default_factory=list)
    references: list[str] = field(repr=False, default_factory=list)

    def summary(self) -> str:
        return f"BLEU {self.bleu:.2f}, exact match {100 * self.exact_match:.1f}% ({self.signature})"

    def errors(self) -> list[tuple[str, str, str]]:
        """(source, hypothesis, reference) for every sentence not translated exactly."""
        return [
            (s, h, r)
            for s, h, r in zip(self.sources, self.hypotheses, self.references, strict=True)
            if " ".join(h.split()) != " ".join(r.split())
        ]


def evaluate_translation(
    model: nn.Module,
    src_token_lists: Sequence[Sequence[str]],
    tgt_token_lists: Sequence[Sequence[str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    beam_size: int = 1,
    batch_size: int = 96,
    length_penalty_alpha: float = 0.6,
) -> TranslationScores:
    """Translate tokenized source sentences and score them against tokenized references.

    Args:
        model: the translation model.
        src_token_lists: source sentences as token lists.
        tgt_token_lists: reference translations as token lists (detokenized before scoring).
        src_vocab, tgt_vocab: the model's vocabularies.
        beam_size: 1 = greedy decoding.
        batch_size: sentences per decoding batch.
        length_penalty_alpha: GNMT alpha for beam search.
    """
    start = time.perf_counter()
    outputs = translate_token_lists(
        model, src_token_lists, src_vocab, tgt_vocab, batch_size, beam_size, length_penalty_alpha
    )
    seconds = time.perf_counter() - start
    hypotheses = [detokenize(tokens) for tokens in outputs]
    references = [detokenize(tokens) for tokens in tgt_token_lists]
    bleu = corpus_bleu(hypotheses, references)
    return TranslationScores(
        bleu=bleu.score,
        signature=bleu.signature,
        exact_match=exact_match_rate(hypotheses, references),
        seconds=seconds,
        sources=[detokenize(tokens) for tokens in src_token_lists],
        hypotheses=hypotheses,
        references=references,
    )
