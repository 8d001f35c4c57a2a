"""Exercise checks for notebook 12 (what changed since 2017, and how to scale up).

12.1 ``rms_norm``: RMSNorm, the LayerNorm variant of most recent models.
12.2 ``count_parameters``: the parameter count of a ``TransformerConfig`` by formula, without building the model.
12.3 ``rotate_pair``: the rotary position embedding (RoPE) of one pair of features.

Checkers compare with a reference (``nn.RMSNorm``, ``Transformer(config).num_parameters()``, a 2-D
rotation) and name the typical mistake they recognise: LayerNorm's mean subtraction, eps outside the
square root, a forgotten component of the model, a rotation in the wrong direction.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from course_lib.exercises import FAILED, PASSED, describe_difference, exercise, known_mistake
from course_lib.model import Transformer, TransformerConfig

# ----------------------------------------------------------------------------------------------
# 12.1 RMSNorm
# ----------------------------------------------------------------------------------------------


def reference_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x ``(..., d)`` -> x / sqrt(mean(x^2) + eps) * weight, over the last dimension (as ``nn.RMSNorm``)."""
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


_RMS_MISTAKES = [
    ("you subtract the mean first: that is LayerNorm; RMSNorm only divides by the root mean square",
     lambda x, w, eps: (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, keepdim=True, unbiased=False) + eps) * w),
    ("eps is added outside the square root (rms + eps); RMSNorm computes sqrt(mean(x^2) + eps)",
     lambda x, w, eps: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * w),
    ("you divide by the mean square, not its square root",
     lambda x, w, eps: x / (x.pow(2).mean(-1, keepdim=True) + eps) * w),
    ("you divide by the standard deviation (x.std), which subtracts the mean inside; use sqrt(mean(x^2) + eps)",
     lambda x, w, eps: x / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps) * w),
    ("you use the root of the SUM of squares; RMSNorm uses the MEAN of the squares over the last dimension",
     lambda x, w, eps: x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w),
    ("the gain (weight) is not applied: multiply the normalised x by weight",
     lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)),
    ("you normalise over the wrong dimension: use each position's own features, the LAST dimension",
     lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(0, keepdim=True) + eps) * w),
]


def _rms_cases():
    g = torch.Generator().manual_seed(12)
    cases = []
    for description, shape, scale, offset, eps in [
        ("x of shape (2, 5, 16), values of size ~2", (2, 5, 16), 2.0, 0.0, 1e-6),
        ("x with a large mean: shape (3, 8), values 5 + noise", (3, 8), 1.0, 5.0, 1e-6),
        ("tiny values: shape (2, 3, 8) * 1e-4, eps 1e-3", (2, 3, 8), 1e-4, 0.0, 1e-3),
        ("x of shape (4, 4, 32), eps 1e-5", (4, 4, 32), 1.0, 0.5, 1e-5),
    ]:
        x = (torch.randn(*shape, generator=g) * scale + offset).double()
        weight = (1 + 0.5 * torch.randn(shape[-1], generator=g)).double()
        cases.append((description, x, weight, eps))
    return cases


def _close(got, expected) -> bool:
    return (isinstance(got, torch.Tensor) and got.shape == expected.shape
            and torch.allclose(got.detach().double(), expected.double(), atol=1e-7, rtol=1e-5))


def _rms_diagnosis(outputs, cases) -> str | None:
    return known_mistake(
        _RMS_MISTAKES,
        lambda wrong: all(_close(got, wrong(x, w, eps)) for got, (_, x, w, eps) in zip(outputs, cases, strict=True)),
        tolerate=(RuntimeError,))


@exercise("12.1", points=2)
def check_rms_norm(ex, student_fn, quiet: bool = False):
    """``rms_norm(x, weight, eps)`` equals ``nn.RMSNorm`` over the last dimension."""
    cases = _rms_cases()
    outputs = []
    for description, x, weight, eps in cases:
        got, verdict = ex.call_student(student_fn, (x.clone(), weight.clone(), eps), case=description,
                                    quiet=quiet)
        if verdict is not None:
            return verdict
        outputs.append(got)
    for got, (description, x, weight, eps) in zip(outputs, cases, strict=True):
        difference = describe_difference(got, reference_rms_norm(x, weight, eps), atol=1e-6, rtol=1e-4)
        if difference:
            mistake = _rms_diagnosis(outputs, cases)
            return ex.report(FAILED, f"on case '{description}': {mistake or difference}.", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with the reference (the formula of nn.RMSNorm).",
                  quiet)


# ----------------------------------------------------------------------------------------------
# 12.2 the parameter count of a config
# ----------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def course_vocab_sizes() -> tuple[int, int]:
    """(German, English) vocabulary sizes of the course's translator: ``build_vocabs`` on the training split,
    as notebook 10 builds them (computed, so that they follow the corpus)."""
    from course_lib.data import build_vocabs, load_toy_corpus

    src_vocab, tgt_vocab = build_vocabs(load_toy_corpus("train"))
    return len(src_vocab), len(tgt_vocab)


def parameter_configs() -> list[tuple[str, TransformerConfig]]:
    """The (description, config) cases of exercise 12.2; the first uses the course's own vocabulary sizes."""
    src_size, tgt_size = course_vocab_sizes()
    return [(f"the course's default sizes, vocabularies {src_size} / {tgt_size}",
             TransformerConfig(src_vocab_size=src_size, tgt_vocab_size=tgt_size)), *_OTHER_PARAMETER_CONFIGS]


_OTHER_PARAMETER_CONFIGS = [
    ("d_model 32, 2 heads, 1 + 3 layers, d_ff 48, vocabularies 100 / 80",
     TransformerConfig(src_vocab_size=100, tgt_vocab_size=80, d_model=32, n_heads=2, n_encoder_layers=1,
                       n_decoder_layers=3, d_ff=48)),
    ("pre-norm (so a final LayerNorm after each stack) with tied target embedding and generator",
     TransformerConfig(src_vocab_size=200, tgt_vocab_size=150, d_model=48, n_heads=4, n_encoder_layers=2,
                       n_decoder_layers=2, d_ff=96, norm_first=True, tie_embeddings=True)),
    ("learned positions (max_len 64)",
     TransformerConfig(src_vocab_size=120, tgt_vocab_size=90, d_model=32, n_heads=4, n_encoder_layers=2,
                       n_decoder_layers=1, d_ff=64, max_len=64, positional="learned")),
    ("the paper's base model: d_model 512, 8 heads, 6 + 6 layers, d_ff 2048, vocabularies 37000, tied",
     TransformerConfig(src_vocab_size=37000, tgt_vocab_size=37000, d_model=512, n_heads=8, n_encoder_layers=6,
                       n_decoder_layers=6, d_ff=2048, tie_embeddings=True)),
]


def reference_parameter_count(config: TransformerConfig) -> int:
    """``Transformer(config).num_parameters()``, built on the meta device (no memory, no initialisation cost)."""
    with torch.device("meta"):
        return Transformer(config).num_parameters()


def _components(c: TransformerConfig) -> dict[str, int]:
    """Named pieces of the count whose omission (or double counting) explains a wrong answer."""
    d, n_enc, n_dec = c.d_model, c.n_encoder_layers, c.n_decoder_layers
    attention = 4 * d * d + 4 * d
    components = {
        "the cross-attention blocks of the decoder layers": n_dec * attention,
        "the LayerNorms (2 per encoder layer, 3 per decoder layer, 2 numbers per feature)":
            (2 * n_enc + 3 * n_dec) * 2 * d,
        "the biases of the attention projections (4 per attention block, d_model each)":
            (n_enc + 2 * n_dec) * 4 * d,
        "the biases of the feed-forward layers (d_ff + d_model per layer)": (n_enc + n_dec) * (c.d_ff + d),
        "the generator's bias (one per target token)": c.tgt_vocab_size,
        "the generator (d_model x target vocabulary, plus its bias)": c.tgt_vocab_size * d + c.tgt_vocab_size,
        "the source embedding": c.src_vocab_size * d,
    }
    if c.use_final_norm:
        components["the final LayerNorm after each stack (pre-norm models have one)"] = 2 * 2 * d
    if c.positional == "learned":
        components["the learned position tables (max_len x d_model, one for each side)"] = 2 * c.max_len * d
    if c.tie_embeddings:
        components["the tied matrix: with tie_embeddings the target embedding IS the generator's weight, count it once"] = (
            c.tgt_vocab_size * d
        )
    return components


def _parameter_hint(got: int, expected: int, config: TransformerConfig) -> str:
    difference = expected - got
    for name, size in _components(config).items():
        if difference == size:
            return f" You are {size:,} short: that is exactly {name}."
        if difference == -size:
            return f" You have {size:,} too many: that is exactly {name}."
    return ""


@exercise("12.2", points=3)
def check_parameter_count(ex, student_fn, quiet: bool = False):
    """``count_parameters(config)`` equals ``Transformer(config).num_parameters()`` on several configs."""
    configs = parameter_configs()
    for description, config in configs:
        got, verdict = ex.call_student(student_fn, (config,), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        if not isinstance(got, int) or isinstance(got, bool):
            return ex.report(FAILED, f"on config '{description}': return an int, got {type(got).__name__}.",
                          quiet)
        expected = reference_parameter_count(config)
        if got != expected:
            hint = _parameter_hint(got, expected, config)
            return ex.report(FAILED, f"on config '{description}': expected {expected:,} parameters, "
                          f"got {got:,}.{hint}", quiet)
    return ex.report(PASSED, f"all {len(configs)} configs agree with Transformer(config)"
                  ".num_parameters().", quiet)


# ----------------------------------------------------------------------------------------------
# 12.3 RoPE for one pair
# ----------------------------------------------------------------------------------------------


def reference_rotate_pair(pair: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotate each 2-vector ``pair[i]`` ``(seq, 2)`` by the angle ``positions[i] * theta`` in the direction of
    notebook 03's R(k): ``(x, y) -> (x cos + y sin, -x sin + y cos)``, the block [[cos, sin], [-sin, cos]]
    that maps the pair (sin a, cos a) of PE(p) to the pair (sin(a + b), cos(a + b)) of PE(p + k)."""
    angle = positions.to(pair.dtype) * theta  # (seq,)
    cos, sin = angle.cos(), angle.sin()
    x, y = pair[:, 0], pair[:, 1]
    return torch.stack([x * cos + y * sin, -x * sin + y * cos], dim=-1)  # (seq, 2)


_ROPE_MISTAKES = [
    ("your rotation goes the other way (x cos - y sin, x sin + y cos). The course's RoPE turns each pair like "
     "notebook 03's R(k), the block [[cos, sin], [-sin, cos]]: (x cos + y sin, -x sin + y cos)",
     lambda p, pos, th: reference_rotate_pair(p, pos, -th)),
    ("the angle must be position * theta; you rotate every position by theta alone",
     lambda p, pos, th: reference_rotate_pair(p, torch.ones_like(pos), th)),
    ("you treat the angle as degrees; torch.cos and torch.sin take radians, and the angle is position * theta",
     lambda p, pos, th: reference_rotate_pair(p, pos, math.radians(th))),
    ("you swapped cos and sin",
     lambda p, pos, th: torch.stack([p[:, 0] * (pos * th).sin() + p[:, 1] * (pos * th).cos(),
                                     -p[:, 0] * (pos * th).cos() + p[:, 1] * (pos * th).sin()], dim=-1)),
]


def _rope_cases():
    g = torch.Generator().manual_seed(3)
    return [
        ("(1, 0) at position 1 with theta = pi/2", torch.tensor([[1.0, 0.0]], dtype=torch.float64),
         torch.tensor([1]), math.pi / 2),
        ("position 0 leaves the pair unchanged", torch.tensor([[0.3, -1.2]], dtype=torch.float64),
         torch.tensor([0]), 0.7),
        ("5 pairs at positions 0..4, theta = 0.5", torch.randn(5, 2, generator=g, dtype=torch.float64),
         torch.arange(5), 0.5),
        ("3 pairs at positions 10, 3, 7, theta = 0.01", torch.randn(3, 2, generator=g, dtype=torch.float64),
         torch.tensor([10, 3, 7]), 0.01),
    ]


@exercise("12.3", points=2)
def check_rotate_pair(ex, student_fn, quiet: bool = False):
    """``rotate_pair(pair, positions, theta)`` rotates each (x, y) by position * theta like notebook 03's R(k)."""
    cases = _rope_cases()
    for description, pair, positions, theta in cases:
        got, verdict = ex.call_student(student_fn, (pair.clone(), positions.clone(), theta), case=description,
                                    quiet=quiet)
        if verdict is not None:
            return verdict
        expected = reference_rotate_pair(pair, positions, theta)
        difference = describe_difference(got, expected, atol=1e-6)
        if difference:

            def gives_got(wrong, got=got, pair=pair, positions=positions, theta=theta, expected=expected):
                candidate = wrong(pair, positions, theta)
                return _close(got, candidate) and not _close(candidate, expected)

            message = known_mistake(_ROPE_MISTAKES, gives_got)
            hint = f" It looks like {message}." if message else ""
            return ex.report(FAILED, f"on case '{description}': {difference}.{hint}", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with the rotation by position × theta.", quiet)
