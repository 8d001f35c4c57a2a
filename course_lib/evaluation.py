"""Scoring translations: corpus BLEU (sacrebleu) and exact match.

One BLEU, stated: the model's output tokens are joined into text (:func:`course_lib.tokenization.detokenize`,
``<unk>`` kept as the literal ``<unk>``, since that is what the system prints) and scored by sacrebleu's
standard ``13a`` tokenization against the *raw* reference sentences, with sacrebleu's signature
(e.g. ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0``). What is comparable with what:

* Our cased and lower-cased (``case:lc``) detokenized figures are comparable with any system scored the
  same way on the same references (sacreBLEU's point); cased figures only between systems that output case.
* Published Multi30k figures (e.g. bentrevett/pytorch-seq2seq's 36.5) are usually *tokenized and
  lower-cased*: BLEU over spaCy tokens of the lower-cased output and references.
  :func:`score_outputs` computes that too (``bleu_tok_lc``, sacrebleu with ``tok:none`` on those tokens),
  so a reader can put the course next to them; those systems differ in more than the scoring, though
  (hardware, epochs, vocabulary, checkpoint choice: bentrevett's tutorial scores the checkpoint with the
  best validation loss).

Subword output (BPE pieces, ``--subword-merges``) is glued back into words before either figure, so it is
scored exactly like word output.

One known cost: spaCy splits intra-word hyphens ("t-shirt" becomes ``t - shirt``) and the output keeps
them spaced, so such words never match a raw reference (37 of Multi30k's 1,000 ``test_2016_flickr``
references have one); every pipeline that outputs spaCy words pays it alike.

When references are given as token lists (the toy corpus in the notebooks), they are detokenized first;
on the toy corpus this gives back the reference file's text exactly (``tests/test_decoding.py``).
Checked in ``tests/test_decoding.py``: identical text scores 100, a known pair scores what
``sacrebleu.corpus_bleu`` says.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from torch import nn

from .decoding import translate_token_lists
from .subword import is_subword_sequence, pieces_to_words
from .tokenization import UNK, Vocab, detokenize


@dataclass
class BleuResult:
    """A corpus BLEU score (0-100) and the sacrebleu signature that pins down how it was computed."""

    score: float
    signature: str

    def __str__(self) -> str:
        return f"BLEU {self.score:.2f} ({self.signature})"


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str], lowercase: bool = False) -> BleuResult:
    """Corpus BLEU of detokenized hypotheses against one reference each.

    Args:
        hypotheses: system outputs, one string per sentence.
        references: reference translations, aligned with ``hypotheses``.
        lowercase: compare lower-cased text (sacrebleu's ``case:lc``).
    """
    from sacrebleu.metrics import BLEU

    _check_aligned(hypotheses, references)
    metric = BLEU(lowercase=lowercase)
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return BleuResult(float(score.score), str(metric.get_signature()))


def score_outputs(hypothesis_tokens: Sequence[Sequence[str]], references: Sequence[str], tokenizer) -> dict:
    """Every BLEU figure the benchmarks report for one set of outputs (see the module docstring).

    Args:
        hypothesis_tokens: the model's output tokens, one list per sentence (specials stripped).
        references: the raw reference sentences (the lines of the reference file).
        tokenizer: the target language's word tokenizer (for the tokenized, lower-cased figure).

    Returns:
        ``{"bleu", "bleu_lc", "bleu_tok_lc"}`` (0-100), their signatures under ``"signatures"``,
        ``"unk_share"`` (fraction of output tokens that are ``<unk>``) and ``"sentences"``.
    """
    from sacrebleu.metrics import BLEU

    hypothesis_tokens = [list(tokens) for tokens in hypothesis_tokens]
    _check_aligned(hypothesis_tokens, references)
    texts = [detokenize(tokens) for tokens in hypothesis_tokens]
    words = [pieces_to_words(tokens) if is_subword_sequence(tokens) else tokens for tokens in hypothesis_tokens]
    tokenized_hyps = [" ".join(tokens).lower() for tokens in words]  # BPE pieces glued into words first
    tokenized_refs = [" ".join(tokenizer(reference)).lower() for reference in references]
    metrics = {"bleu": (BLEU(), texts, list(references)), "bleu_lc": (BLEU(lowercase=True), texts, list(references)),
               "bleu_tok_lc": (BLEU(lowercase=True, tokenize="none", force=True), tokenized_hyps, tokenized_refs)}
    result: dict = {"signatures": {}}
    for name, (metric, hyps, refs) in metrics.items():
        result[name] = float(metric.corpus_score(hyps, [refs]).score)
        result["signatures"][name] = str(metric.get_signature())
    n_tokens = sum(len(tokens) for tokens in hypothesis_tokens)
    result["unk_share"] = sum(t == UNK for tokens in hypothesis_tokens for t in tokens) / max(1, n_tokens)
    result["sentences"] = len(hypothesis_tokens)
    return result


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
        bleu_lc: the same BLEU, lower-cased (``case:lc``).
        unk_share: fraction (0-1) of output words that are ``<unk>``.
        sources, hypotheses, references: detokenized text, for showing examples and errors.
    """

    bleu: float
    signature: str
    exact_match: float
    seconds: float
    bleu_lc: float = float("nan")
    unk_share: float = 0.0
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
        tgt_token_lists: reference translations: raw sentences (scored as they are; the command line
            passes the reference file's lines) or token lists (detokenized before scoring).
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
    references = [r if isinstance(r, str) else detokenize(r) for r in tgt_token_lists]
    bleu = corpus_bleu(hypotheses, references)
    n_words = sum(len(tokens) for tokens in outputs)
    return TranslationScores(
        bleu_lc=corpus_bleu(hypotheses, references, lowercase=True).score,
        unk_share=sum(token == UNK for tokens in outputs for token in tokens) / max(1, n_words),
        bleu=bleu.score,
        signature=bleu.signature,
        exact_match=exact_match_rate(hypotheses, references),
        seconds=seconds,
        sources=[detokenize(tokens) for tokens in src_token_lists],
        hypotheses=hypotheses,
        references=references,
    )
