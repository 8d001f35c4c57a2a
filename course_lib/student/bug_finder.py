""""Find my bug": which of the student's parts makes the model wrong, with the evidence.

    report = find_my_bug(load_my_parts())
    print(report)            # one line per part, the faulty part named first
    report.faulty            # ["layer_norm"]

Stage 1 checks every supplied part on its own: its contract (:mod:`course_lib.student.contracts`: shapes, dtype,
NaN, masked positions, the future), then its numbers against the course_lib twin on random inputs
(:mod:`course_lib.student.compare`: weights matched by trying every assignment of the part's projections to
the twin's roles, never by names or creation order; layers compared through their own sub-modules, in both
norm placements, post-norm and pre-norm), with a hint for the mistakes we know (``tests/test_bug_catalogue.py``
lists them); then what copied weights cannot show: a parameter the forward pass never uses (or that is
frozen), and starting values other than the contract's (LayerNorm gamma 1 and beta 0, small biases, the
embedding table N(0, 1/d_model) with a zero <pad> row).

Stage 2 runs only for what stage 1 cannot decide (a part whose weights it could not match to the twin's
roles) and only if stage 1 found no bug: a short training run on the toy corpus for the all-course_lib
model and for the model with those parts swapped in; a part whose validation loss ends clearly higher,
or that reads the German sentence clearly less, is named with both measurements as the evidence. The
model is the one the part belongs to: the translator for every part but ``decoder_only_layer``, which is
trained in a small GPT (:class:`course_lib.gpt.GPT`, notebook 15) on the English side of the toy corpus,
and named when its validation loss (next-token cross-entropy) ends clearly above course_lib's GPT's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch import nn

from ..data import build_vocabs, default_tokenizers, load_toy_corpus, make_dataset
from ..gpt import GPT, GPTConfig, encode_sentences, make_batches, train_language_model
from ..loading import make_eval_loader, make_train_loader
from ..losses import LabelSmoothingLoss
from ..model import TransformerConfig
from ..tokenization import Vocab
from ..training import TrainConfig, evaluate_loss, train
from ..utils import keeps_random_state
from .assembly import build_transformer
from .compare import compare_part
from .contracts import LAYER_PARTS, PART_NAMES, USED_BY, PartContractError, check_part


@dataclass
class Finding:
    """The verdict on one part.

    Attributes:
        part: the part's name.
        ok: True if the part passed.
        stage: 1 (contract and numbers) or 2 (training).
        evidence: what was measured, in one or two sentences.
    """

    part: str
    ok: bool
    stage: int
    evidence: str
    decided: bool = True  # False: stage 1 could not compare it number for number (stage 2 decides)

    def __str__(self) -> str:
        return f"{'ok  ' if self.ok else 'BUG '} {self.part:<21} {self.evidence}"


@dataclass
class Diagnosis:
    """Every finding, stage 1 first; ``faulty`` lists the parts with a bug."""

    findings: list[Finding] = field(default_factory=list)

    @property
    def faulty(self) -> list[str]:
        return [f.part for f in self.findings if not f.ok]

    def __str__(self) -> str:
        if not self.findings:
            return "no parts supplied: nothing to diagnose"
        head = (f"faulty: {', '.join(self.faulty)}" if self.faulty else
                "no bug found: every part passed")
        ordered = sorted(self.findings, key=lambda f: f.ok)  # the bugs first
        return "\n".join([head, *map(str, ordered)])


def _likely_cause(name: str, part, norm_first: bool, promise: str = "") -> str:
    """For a part that broke its contract: the comparison's diagnosis, when it has a specific one (and says more
    than the broken ``promise``)."""
    try:
        verdict = compare_part(name, part, norm_first)
    except Exception:  # the part crashed on the comparison inputs too: the contract's message says enough
        return ""
    if verdict.ok is False and not verdict.evidence.startswith("differs from") and verdict.evidence != promise:
        return f"; likely cause: {verdict.evidence}"
    return ""


@keeps_random_state
def compare_with_course(name: str, part, norm_first: bool | None = None, fully_masked_rows: bool = True) -> Finding:
    """Stage 1 for one part: its contract, then its numbers against course_lib's (:mod:`course_lib.student.compare`).

    Args:
        name: one of :data:`course_lib.builders.PART_NAMES`.
        part: the student's function or class.
        norm_first: for the layers, the norm placement to check; None (the default) checks both, post-norm
            first (notebooks 08-11 and 13 train post-norm; notebook 12 explains pre-norm, notebook 15's GPT trains it).
        fully_masked_rows: for the attention, hold it to notebook 06's promise too (no NaN for a query that may
            see no key); notebook 04 checks its first version without it.

    Returns:
        A :class:`Finding` (``ok`` False with the evidence if the part is wrong).
    """
    layer = name in LAYER_PARTS
    placements = ((False, True) if norm_first is None else (norm_first,)) if layer else (False,)
    findings = [_compare_once(name, part, placement, fully_masked_rows) for placement in placements]
    for placement, finding in zip(placements, findings, strict=True):
        if not finding.ok:
            if layer and placement and len(placements) > 1:  # post-norm passed: say which path is wrong
                where = ("as notebook 15's GPT trains" if name == "decoder_only_layer"
                         else "as notebook 12 explains and TransformerConfig(norm_first=True) builds")
                finding.evidence = f"with norm_first=True (pre-norm, {where}): {finding.evidence}"
            return finding
    if layer and len(placements) > 1 and all(f.decided for f in findings):
        first = findings[0]
        return Finding(name, True, 1, f"{first.evidence} (both norm placements, norm_first=False and True)")
    return next((f for f in findings if not f.decided), findings[0])


def _compare_once(name: str, part, norm_first: bool, fully_masked_rows: bool = True) -> Finding:
    try:
        check_part(name, part, norm_first, fully_masked_rows)
    except PartContractError as error:
        return Finding(name, False, 1,
                       f"breaks its contract: {error.promise}{_likely_cause(name, part, norm_first, error.promise)}")
    try:
        verdict = compare_part(name, part, norm_first)
    except Exception as error:  # a crash on the comparison inputs is evidence too
        return Finding(name, False, 1, f"raised {type(error).__name__} on the comparison inputs: {error}")
    if verdict.ok is None:
        return Finding(name, True, 1, f"keeps its contract; {verdict.evidence}: judged by training (stage 2)",
                       decided=False)
    if verdict.ok:
        return Finding(name, True, 1, f"keeps its contract and {verdict.evidence}")
    return Finding(name, False, 1, verdict.evidence)


def _probe_data(n_pairs: int):
    """(src vocab size, tgt vocab size, train loader factory, valid loader factory) on the toy corpus."""

    train_pairs, valid_pairs = load_toy_corpus("train")[:n_pairs], load_toy_corpus("valid")[:256]
    src_vocab, tgt_vocab = build_vocabs(train_pairs)
    train_set = make_dataset(train_pairs, src_vocab, tgt_vocab)
    valid_set = make_dataset(valid_pairs, src_vocab, tgt_vocab)
    return (len(src_vocab), len(tgt_vocab), lambda: make_train_loader(train_set, 64, 0),
            lambda: make_eval_loader(valid_set))


def _mean_nll(model: nn.Module, loader) -> float:

    stats = evaluate_loss(model, loader, LabelSmoothingLoss(0.0))
    return stats.nll_sum / max(stats.n_tokens, 1)  # mean cross-entropy per target token


def _shuffled_sources(loader):
    """The same batches with each target paired with another sentence's source (rolled by one)."""
    for src, tgt_in, tgt_out in loader:
        yield src.roll(1, dims=0), tgt_in, tgt_out


def training_losses(candidates: Mapping[str, Mapping[str, object]], steps: int = 150,
                    n_pairs: int = 4000) -> dict[str, tuple[float, float]]:
    """Short training runs on the toy corpus: how well each model predicts, and how much it uses the source.

    Args:
        candidates: ``{run name: {part name: part}}``; ``{}`` is the all-course_lib model.
        steps: optimizer updates per run (same seed, data and recipe for every run).
        n_pairs: training pairs used.

    Returns:
        ``{run name: (validation loss, validation loss with every target paired with a wrong source)}``
        (mean cross-entropy per token); the gap between the two is how much the model reads the German.
    """

    src_size, tgt_size, train_loader, valid_loader = _probe_data(n_pairs)
    config = TransformerConfig(src_vocab_size=src_size, tgt_vocab_size=tgt_size)
    recipe = TrainConfig(max_steps=steps, progress=False, ema_decay=None, restore_best=False, warmup_steps=50)
    losses = {}
    for name, parts in candidates.items():
        torch.manual_seed(0)
        model = build_transformer(config, parts, check=False)
        train(model, train_loader(), None, recipe)
        losses[name] = (_mean_nll(model, valid_loader()), _mean_nll(model, _shuffled_sources(valid_loader())))
    return losses


def _gpt_probe_data(n_sentences: int):
    """(vocabulary size, longest sentence, training batches, validation batches): the toy corpus's English side."""
    english = default_tokenizers()[1]
    train_tokens = english.tokenize_many(target for _, target in load_toy_corpus("train")[:n_sentences])
    valid_tokens = english.tokenize_many(target for _, target in load_toy_corpus("valid")[:256])
    vocab = Vocab.build(train_tokens)
    train_ids, valid_ids = encode_sentences(train_tokens, vocab), encode_sentences(valid_tokens, vocab)
    longest = max(len(ids) for ids in (*train_ids, *valid_ids))
    return len(vocab.itos), longest, make_batches(train_ids, 64, seed=0), make_batches(valid_ids, 128)


def gpt_training_losses(candidates: Mapping[str, Mapping[str, object]], steps: int = 150,
                        n_sentences: int = 4000) -> dict[str, float]:
    """Short training runs of a small GPT (notebook 15) on the English sentences of the toy corpus.

    Args:
        candidates: ``{run name: {part name: part}}``; ``{}`` is the all-course_lib model.
        steps: optimizer updates per run (same seed, data and recipe for every run).
        n_sentences: training sentences used.

    Returns:
        ``{run name: validation loss}`` (mean next-token cross-entropy; inf if it overflowed).
    """
    vocab_size, longest, train_batches, valid_batches = _gpt_probe_data(n_sentences)
    config = GPTConfig(vocab_size=vocab_size, max_len=longest)  # the course's defaults: pre-norm, d_model 64
    losses = {}
    for name, parts in candidates.items():
        torch.manual_seed(0)
        model = GPT(config, dict(parts))
        try:
            history = train_language_model(model, train_batches, valid_batches, steps, warmup=50, eval_every=steps,
                                           log=None)
            losses[name] = history[-1]["valid_loss"]
        except OverflowError:  # a perplexity too large for a float: the model has diverged
            losses[name] = math.inf
    return losses


def _gpt_stage_two(diagnosis: Diagnosis, part, steps: int, tolerance: float) -> None:
    """Train a small GPT with the student's ``decoder_only_layer`` and with course_lib's; decide the part's finding."""
    runs = gpt_training_losses({"course_lib": {}, "yours": {"decoder_only_layer": part}}, steps)
    yours, baseline = runs["yours"], runs["course_lib"]
    finding = next(f for f in diagnosis.findings if f.part == "decoder_only_layer")
    finding.stage, finding.decided = 2, True
    finding.ok = math.isfinite(yours) and yours <= baseline + tolerance
    finding.evidence = (f"{steps} training steps of a small GPT with your decoder_only_layer (the other parts "
                        f"course_lib's): validation loss {yours:.3f} per token; with course_lib's: {baseline:.3f}")


def _healthy(run: tuple[float, float], baseline: tuple[float, float], tolerance: float) -> bool:
    loss, wrong_source = run
    source_use, baseline_use = wrong_source - loss, baseline[1] - baseline[0]
    return math.isfinite(loss) and loss <= baseline[0] + tolerance and source_use >= 0.5 * baseline_use


def _describe(run: tuple[float, float]) -> str:
    return f"validation loss {run[0]:.3f}, {run[1] - run[0]:.3f} higher with the wrong German sentence"


@keeps_random_state
def find_my_bug(parts: Mapping[str, object], train_steps: int = 150, tolerance: float = 0.3) -> Diagnosis:
    """Name the faulty part(s) among ``parts``, with the evidence.

    Stage 1 compares every part with its twin (contract, then numbers). Stage 2 trains only when stage 1
    could not compare some part number for number (an unusual weight layout, a layer built on
    ``nn.MultiheadAttention``) and found no bug: those parts are trained with course_lib's others, in the
    translator (``decoder_only_layer``: in a small GPT).

    Args:
        parts: ``{part name: function or class}`` (e.g. from ``course_lib.student.package.load_my_parts()``).
        train_steps: updates per short training run in stage 2 (0 skips stage 2).
        tolerance: stage 2 names a part whose validation loss exceeds course_lib's by more than this,
            or (in the translator) that uses the source sentence less than half as much as course_lib's model.

    Returns:
        A :class:`Diagnosis`; ``print`` it, or read ``.faulty``.
    """
    unknown = sorted(set(parts) - set(PART_NAMES))
    if unknown:
        raise ValueError(f"unknown part names {unknown}; the parts are {list(PART_NAMES)}")
    diagnosis = Diagnosis([compare_with_course(name, parts[name]) for name in PART_NAMES if name in parts])
    undecided = {f.part: parts[f.part] for f in diagnosis.findings if not f.decided}
    if diagnosis.faulty or not undecided or train_steps <= 0:
        return diagnosis
    if "decoder_only_layer" in undecided:  # a GPT's block: trained in a GPT
        _gpt_stage_two(diagnosis, undecided.pop("decoder_only_layer"), train_steps, tolerance)
    translator = {name: part for name, part in undecided.items() if name in USED_BY["transformer"]}
    if translator:
        _translator_stage_two(diagnosis, translator, train_steps, tolerance)
    return diagnosis


def _translator_stage_two(diagnosis: Diagnosis, undecided: dict, train_steps: int, tolerance: float) -> None:
    """Train the translator with the ``undecided`` parts (together, then alone if it is worse); decide them."""
    runs = training_losses({"course_lib": {}, "yours": undecided}, train_steps)
    baseline = runs["course_lib"]
    names = ", ".join(undecided)
    together = (f"{train_steps} training steps with your {names} (the other parts equal course_lib's): "
                f"{_describe(runs['yours'])}; course_lib's: {_describe(baseline)}")
    if _healthy(runs["yours"], baseline, tolerance):
        diagnosis.findings.append(Finding("stage 2", True, 2, together))
        return
    if len(undecided) == 1:  # one part: the run with it is the run with it alone
        alone = {name: runs["yours"] for name in undecided}
    else:
        alone = training_losses({name: {name: part} for name, part in undecided.items()}, train_steps)
    for finding in diagnosis.findings:
        if finding.part in alone:
            run = alone[finding.part]
            finding.stage, finding.ok = 2, _healthy(run, baseline, tolerance)
            finding.evidence = f"swapped in alone, {train_steps} training steps: {_describe(run)}"
    if all(f.ok for f in diagnosis.findings if f.part in alone):
        diagnosis.findings.append(Finding("stage 2", False, 2, together))
