""""Find my bug": which of the student's parts makes the model wrong, with the evidence.

    report = find_my_bug(load_my_parts())
    print(report)            # one line per part, the faulty part named first
    report.faulty            # ["layer_norm"]

Stage 1 checks every supplied part on its own: its contract (:mod:`course_lib.parts`: shapes, dtype,
NaN, masked positions, the future), then its numbers against the course_lib twin on random inputs
(with the same weights where the part has weights), with a hint for mistakes we know (the bugs of
the articles this course grew from: the doubled frequency index, the unbiased standard deviation
with eps outside the root, embeddings scaled by the square root of the sequence length, a missing
causal mask, inverted mask polarity, a missing 1/sqrt(d_k)).

Stage 2 runs only if every part passes stage 1: a short training run on the toy corpus for the
all-course_lib model and for the model with one student part swapped in at a time; a part whose
validation loss ends clearly higher is named, with both losses as the evidence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention, scaled_dot_product_attention
from .embeddings import sinusoidal_table
from .layers import PositionwiseFeedForward
from .parts import PART_NAMES, PartContractError, check_part


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


def _close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-4) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=atol, rtol=1e-4))


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> str:
    return f"largest difference {float((a - b).abs().max()):.3g}"


def _linears(module: nn.Module) -> list[nn.Linear]:
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def _compare_token_embedding(factory) -> str | None:
    d_model, vocab = 16, 11
    module = factory(vocab, d_model, 0).eval()
    tables = [p for p in module.parameters() if p.dim() == 2 and tuple(p.shape) == (vocab, d_model)]
    if len(tables) != 1:
        return None  # no single (vocab, d_model) table: stage 2 judges it
    ids = torch.randint(1, vocab, (2, 9), generator=torch.Generator().manual_seed(0))  # seq 9: sqrt 3 != sqrt 16
    with torch.no_grad():
        out, rows = module(ids), tables[0][ids]  # (2, 9, d_model) each
    if _close(out, rows * math.sqrt(d_model)):
        return ""
    scale = float(out.norm() / rows.norm())
    hint = ""
    if abs(scale - math.sqrt(ids.size(-1))) < 1e-3:
        hint = f" = sqrt(sequence length {ids.size(-1)}): scale by sqrt(d_model), not by a size of the id tensor"
    elif abs(scale - 1.0) < 1e-3:
        hint = ": the sqrt(d_model) scaling is missing"
    return f"vectors are the table rows times {scale:.3f}, expected times sqrt(d_model) = {math.sqrt(d_model):.3f}{hint}"


def _compare_positional_encoding(fn) -> str | None:
    max_len, d_model = 50, 16
    mine, expected = fn(max_len, d_model).float(), sinusoidal_table(max_len, d_model)
    if _close(mine, expected, atol=1e-5):
        return ""
    wrong = [c for c in range(d_model) if not _close(mine[:, c], expected[:, c], atol=1e-5)]
    hints = []
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    dims = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i
    doubled = torch.sin(positions / 10000 ** (2 * dims / d_model)).float()  # exponent 2*(2i)/d: i counted twice
    if _close(mine[:, 0::2], doubled, atol=1e-5):
        hints.append("the sines use exponent 2*(2i)/d_model: the pair index i is counted twice (a loop over "
                     "0, 2, 4, ... that then multiplies by 2 again); use 2i/d_model")
    if any(c % 2 == 1 for c in wrong):
        sine_freq = torch.asin(mine[1, 0::2].clamp(-1, 1).double())  # angle at position 1 = each sine's frequency
        cosine_freq = torch.acos(mine[1, 1::2].clamp(-1, 1).double())
        if not torch.allclose(sine_freq, cosine_freq, atol=1e-4):
            hints.append("the cosine of a pair has a different frequency from its sine: use the same angle for both")
    where = f"{wrong[:6]}{'...' if len(wrong) > 6 else ''}"
    return f"table differs from the sinusoid formula in dimensions {where}" + "".join(f"; {h}" for h in hints)


def _compare_attention(fn) -> str | None:
    generator = torch.Generator().manual_seed(1)
    q = torch.randn(2, 2, 4, 16, generator=generator)  # (batch, heads, q_len, d_k)
    k = torch.randn(2, 2, 6, 16, generator=generator)
    v = torch.randn(2, 2, 6, 5, generator=generator)
    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[1, ..., 4:] = False
    out, weights = fn(q, k, v, mask)
    ref_out, ref_weights = scaled_dot_product_attention(q, k, v, mask)
    if _close(out, ref_out) and _close(weights, ref_weights):
        return ""
    unscaled, _ = scaled_dot_product_attention(q * math.sqrt(16), k, v, mask)
    if _close(out, unscaled):
        return "scores are not divided by sqrt(d_k): softmax(q k^T) v instead of softmax(q k^T / sqrt(d_k)) v"
    return f"output differs from softmax(q k^T / sqrt(d_k)) v ({_max_diff(out, ref_out)})"


def _compare_multi_head_attention(factory) -> str | None:
    d_model, n_heads = 16, 4
    module = factory(d_model, n_heads).eval()
    linears = _linears(module)
    if len(linears) != 4 or any(tuple(m.weight.shape) != (d_model, d_model) for m in linears):
        return None  # not four d_model x d_model projections: stage 2 judges it
    reference = MultiHeadAttention(d_model, n_heads).eval()
    with torch.no_grad():
        for mine, theirs in zip(linears, (reference.q_proj, reference.k_proj, reference.v_proj, reference.out_proj),
                                strict=True):
            theirs.weight.copy_(mine.weight)
            if mine.bias is None:
                theirs.bias.zero_()
            else:
                theirs.bias.copy_(mine.bias)
        generator = torch.Generator().manual_seed(2)
        x, memory = torch.randn(2, 5, d_model, generator=generator), torch.randn(2, 7, d_model, generator=generator)
        mask = torch.ones(2, 1, 1, 7, dtype=torch.bool)
        mask[1, ..., 5:] = False
        out, expected = module(x, memory, memory, mask=mask), reference(x, memory, memory, mask=mask)
    if _close(out, expected):
        return ""
    return (f"output differs from course_lib's MultiHeadAttention with the same four projections in the order "
            f"q, k, v, out ({_max_diff(out, expected)}): check the head split/merge shapes")


def _compare_layer_norm(factory) -> str | None:
    d_model = 16
    module = factory(d_model).eval()
    vectors = [p for p in module.parameters() if tuple(p.shape) == (d_model,)]
    x = torch.randn(3, 5, d_model, generator=torch.Generator().manual_seed(4)) * 3 + 1
    weight = bias = None
    if len(vectors) == 2:  # gamma, beta in that order: give them values that matter
        generator = torch.Generator().manual_seed(5)
        weight, bias = torch.rand(d_model, generator=generator) + 0.5, torch.randn(d_model, generator=generator)
        with torch.no_grad():
            vectors[0].copy_(weight)
            vectors[1].copy_(bias)
    with torch.no_grad():
        out = module(x)
    expected = F.layer_norm(x, (d_model,), weight, bias, eps=1e-5)
    if _close(out, expected):
        return ""
    centered = x - x.mean(-1, keepdim=True)
    articles = centered / (x.std(-1, keepdim=True) + 1e-5)  # unbiased std (eps placement barely matters here)
    if weight is not None:
        articles = articles * weight + bias
    if _close(out, articles):
        return ("divides by the unbiased standard deviation (d_model - 1 in the variance); LayerNorm uses the "
                "biased variance (divide by d_model) with eps inside the square root, sqrt(var + eps)")
    return f"output differs from nn.LayerNorm with the same gamma and beta ({_max_diff(out, expected)})"


def _compare_feed_forward(factory) -> str | None:
    d_model, d_ff = 16, 24
    module = factory(d_model, d_ff).eval()
    linears = _linears(module)
    if [tuple(m.weight.shape) for m in linears] != [(d_ff, d_model), (d_model, d_ff)]:
        return None
    reference = PositionwiseFeedForward(d_model, d_ff).eval()
    with torch.no_grad():
        for mine, theirs in zip(linears, (reference.linear1, reference.linear2), strict=True):
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias if mine.bias is not None else torch.zeros_like(theirs.bias))
        x = torch.randn(2, 5, d_model, generator=torch.Generator().manual_seed(6))
        out, expected = module(x), reference(x)
    if _close(out, expected):
        return ""
    return f"output differs from W_2 relu(W_1 x + b_1) + b_2 with the same weights ({_max_diff(out, expected)})"


_COMPARE = {
    "token_embedding": _compare_token_embedding,
    "positional_encoding": _compare_positional_encoding,
    "attention": _compare_attention,
    "multi_head_attention": _compare_multi_head_attention,
    "layer_norm": _compare_layer_norm,
    "feed_forward": _compare_feed_forward,
}


def compare_with_course(name: str, part) -> Finding:
    """Stage 1 for one part: its contract, then its numbers against course_lib's.

    Args:
        name: one of :data:`course_lib.parts.PART_NAMES`.
        part: the student's function or class.

    Returns:
        A :class:`Finding` (``ok`` False with the evidence if the part is wrong).
    """
    try:
        check_part(name, part)
    except PartContractError as error:
        return Finding(name, False, 1, f"breaks its contract: {error.promise}")
    if name not in _COMPARE:  # masks: the contract pins them down exactly; layers: stage 2
        return Finding(name, True, 1, "keeps its contract")
    torch.manual_seed(0)
    try:
        problem = _COMPARE[name](part)
    except Exception as error:  # a crash on the comparison inputs is evidence too
        return Finding(name, False, 1, f"raised {type(error).__name__} on the comparison inputs: {error}")
    if problem is None:
        return Finding(name, True, 1, "keeps its contract (weights not comparable one to one; judged by training)")
    if problem:
        return Finding(name, False, 1, problem)
    return Finding(name, True, 1, "keeps its contract and equals course_lib's on random inputs")


def _probe_data(n_pairs: int):
    """(src vocab size, tgt vocab size, train loader factory, valid loader factory) on the toy corpus."""
    from .data import build_vocabs, load_toy_corpus, make_dataset
    from .loading import make_eval_loader, make_train_loader

    train_pairs, valid_pairs = load_toy_corpus("train")[:n_pairs], load_toy_corpus("valid")[:256]
    src_vocab, tgt_vocab = build_vocabs(train_pairs)
    train_set = make_dataset(train_pairs, src_vocab, tgt_vocab)
    valid_set = make_dataset(valid_pairs, src_vocab, tgt_vocab)
    return (len(src_vocab), len(tgt_vocab), lambda: make_train_loader(train_set, 64, 0),
            lambda: make_eval_loader(valid_set))


def _mean_nll(model: nn.Module, loader) -> float:
    from .losses import LabelSmoothingLoss
    from .training import evaluate_loss

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
    from .assembly import build_transformer
    from .model import TransformerConfig
    from .training import TrainConfig, train

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


def _healthy(run: tuple[float, float], baseline: tuple[float, float], tolerance: float) -> bool:
    loss, wrong_source = run
    source_use, baseline_use = wrong_source - loss, baseline[1] - baseline[0]
    return math.isfinite(loss) and loss <= baseline[0] + tolerance and source_use >= 0.5 * baseline_use


def _describe(run: tuple[float, float]) -> str:
    return f"validation loss {run[0]:.3f}, {run[1] - run[0]:.3f} higher with the wrong German sentence"


def find_my_bug(parts: Mapping[str, object], train_steps: int = 150, tolerance: float = 0.3) -> Diagnosis:
    """Name the faulty part(s) among ``parts``, with the evidence.

    Args:
        parts: ``{part name: function or class}`` (e.g. from ``course_lib.assembly.load_my_parts()``).
        train_steps: updates per short training run in stage 2 (0 skips stage 2).
        tolerance: stage 2 names a part whose validation loss exceeds course_lib's by more than this,
            or that uses the source sentence less than half as much as course_lib's model.

    Returns:
        A :class:`Diagnosis`; ``print`` it, or read ``.faulty``.
    """
    unknown = sorted(set(parts) - set(PART_NAMES))
    if unknown:
        raise ValueError(f"unknown part names {unknown}; the parts are {list(PART_NAMES)}")
    diagnosis = Diagnosis([compare_with_course(name, parts[name]) for name in PART_NAMES if name in parts])
    if diagnosis.faulty or not parts or train_steps <= 0:
        return diagnosis
    runs = training_losses({"course_lib": {}, "yours": dict(parts)}, train_steps)
    baseline = runs["course_lib"]
    together = (f"{train_steps} training steps with all your parts: {_describe(runs['yours'])}; "
                f"course_lib's: {_describe(baseline)}")
    if _healthy(runs["yours"], baseline, tolerance):
        diagnosis.findings.append(Finding("all parts together", True, 2, together))
        return diagnosis
    if len(parts) == 1:  # one part: the run with all of yours is the run with it alone
        alone = {name: runs["yours"] for name in parts}
    else:
        alone = training_losses({name: {name: parts[name]} for name in PART_NAMES if name in parts}, train_steps)
    for finding in diagnosis.findings:
        run = alone[finding.part]
        finding.stage, finding.ok = 2, _healthy(run, baseline, tolerance)
        finding.evidence = f"swapped in alone, {train_steps} training steps: {_describe(run)}"
    diagnosis.findings.append(Finding("all parts together", False, 2, together))
    return diagnosis
