"""Exercise checks for notebook 04 (attention).

04.1 predict the variance of an unscaled dot product of two random vectors with d_k = 64.
04.2 which key does a small query attend to most (dot product, not angle)?
04.3 ``attention_by_hand(q, k, v, mask=None)``: softmax(q k^T / sqrt(d_k)) v written with exp, max and
     sum instead of ``softmax``, numerically stable for large scores.

The checks name the usual mistakes: the standard deviation instead of the variance, the most
*aligned* key instead of the highest-scoring one, a forgotten 1/sqrt(d_k), softmax over the wrong
dimension, and an overflowing exp.
"""

from __future__ import annotations

import math

import torch

from course_lib.attention import scaled_dot_product_attention
from course_lib.exercises import FAILED, VALUE, describe_difference, exercise

# ---------------------------------------------------------------------------------------------
# 04.1
# ---------------------------------------------------------------------------------------------


@exercise("04.1", points=1, kind=VALUE)
def check_dot_product_variance(ex, answer, quiet: bool = False):
    """Var(q · k) for q, k with d_k = 64 independent N(0, 1) entries, without scaling."""
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = float(answer)
    hint = ("q · k is a sum of d_k products q_j k_j; each product has mean 0 and variance "
            "E[q_j²] E[k_j²] = 1, and variances of independent terms add up.")
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = float(answer)
        if math.isclose(answer, 8.0, abs_tol=0.05):
            hint = "8 = √d_k is the standard deviation of q · k (its typical size); the question asks for the variance."
        elif math.isclose(answer, 1.0, abs_tol=0.05):
            hint = "1 is the variance *after* dividing by √d_k; the question asks about the unscaled dot product."
        elif math.isclose(answer, 4096.0, abs_tol=1.0):
            hint = "4096 = d_k²: the variances of the d_k independent products add up, they are not multiplied."
    return ex.check_answer(answer, 64.0, hint=hint, atol=0.5, quiet=quiet)


# ---------------------------------------------------------------------------------------------
# 04.2
# ---------------------------------------------------------------------------------------------

WHICH_KEY_QUERY = (1.0, 2.0)
WHICH_KEY_KEYS = {"Katze": (0.5, 1.0), "Ball": (4.0, 0.0), "Hund": (-1.0, 1.5), "Haus": (1.0, -1.0)}


def _which_key_scores() -> dict[str, float]:
    q = WHICH_KEY_QUERY
    return {token: q[0] * key[0] + q[1] * key[1] for token, key in WHICH_KEY_KEYS.items()}


@exercise("04.2", points=1, kind=VALUE)
def check_most_attended_key(ex, answer, quiet: bool = False):
    """The token whose key gets the largest attention weight from the query (1, 2)."""
    scores = _which_key_scores()
    expected = max(scores, key=scores.get)
    if answer is not None and not isinstance(answer, str):
        return ex.report(FAILED, f"answer with the token as a string, e.g. \"Hund\", got {type(answer).__name__}", quiet)
    hint = ""
    if isinstance(answer, str):
        answer = answer.strip()
        if answer == "Katze":
            hint = ("Katze's key points exactly in the query's direction, but the score is a dot product, which also "
                    f"grows with the key's length: Katze scores {scores['Katze']:g}, another key scores more.")
        elif answer in scores:
            hint = f"{answer} scores {scores[answer]:g}; compute q · k for every key and take the largest."
        else:
            hint = f"Choose one of {sorted(scores)}."
    return ex.check_answer(answer, expected, hint=hint, quiet=quiet)


# ---------------------------------------------------------------------------------------------
# 04.3
# ---------------------------------------------------------------------------------------------


def _reference(q, k, v, mask=None):
    return scaled_dot_product_attention(q, k, v, mask=mask)[0]


def _cases():
    generator = torch.Generator().manual_seed(4)

    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=generator) * scale

    padding = torch.tensor([[True, True, True, True, True], [True, True, True, False, False]])[:, None, :]  # (2, 1, 5)
    return [
        ("one query, 3 keys, d_k=2", (randn(1, 2), randn(3, 2), randn(3, 2))),
        ("batch=2, q_len=3, k_len=5, d_k=8", (randn(2, 3, 8), randn(2, 5, 8), randn(2, 5, 8))),
        ("cross-attention shapes q_len=2, k_len=7, d_v=3", (randn(2, 2, 4), randn(2, 7, 4), randn(2, 7, 3))),
        ("heads (batch=2, n_heads=4, seq=6, d_head=16)", (randn(2, 4, 6, 16), randn(2, 4, 6, 16), randn(2, 4, 6, 16))),
        ("large scores (q and k entries around ±30)", (randn(1, 3, 64, scale=30), randn(1, 4, 64, scale=30),
                                                       randn(1, 4, 64))),
        ("a padding mask (True = may attend)", (randn(2, 3, 8), randn(2, 5, 8), randn(2, 5, 8), padding)),
    ]


def _diagnose(student_fn, cases) -> str:
    """A sentence naming a recognised mistake, or ''."""
    for _description, args in cases:
        try:
            with torch.no_grad():
                got = student_fn(*args)
        except Exception:  # the crash itself is already reported
            return ""
        if isinstance(got, tuple):
            return " Return only the output tensor (not the weights)."
        if not isinstance(got, torch.Tensor) or got.shape != _reference(*args).shape:
            continue
        if describe_difference(got, _reference(*args), atol=1e-4) is None:
            continue  # this case is right; look for the one that is wrong
        if torch.isnan(got).any():
            return (" exp of a large score overflows to inf and inf / inf = NaN. Subtract each row's largest score "
                    "before exp: softmax does not change when a whole row is shifted by a constant.")
        q, k, v = args[:3]
        mask = args[3] if len(args) > 3 else None
        unscaled = _reference(q * math.sqrt(q.size(-1)), k, v, mask)
        if torch.allclose(got, unscaled, atol=1e-4) and not torch.allclose(unscaled, _reference(*args), atol=1e-4):
            return " It looks like you forgot to divide the scores by sqrt(d_k)."
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if mask is None and torch.allclose(got, scores.softmax(dim=-2) @ v, atol=1e-4):
            return " It looks like you normalised over the queries; each query's weights over the keys (dim=-1) must sum to 1."
        if mask is not None and torch.allclose(got, _reference(q, k, v), atol=1e-4):
            return " The mask was ignored: set the scores of masked keys (mask False) to -inf before the exp."
    return ""


@exercise("04.3", points=3)
def check_attention_by_hand(ex, student_fn, quiet: bool = False):
    """``attention_by_hand(q, k, v, mask=None)`` equals softmax(q k^T / sqrt(d_k)) v."""
    cases = _cases()
    result = ex.check_function(student_fn, _reference, cases, atol=1e-4, quiet=True)
    if result.status == FAILED:
        return ex.report(FAILED, result.message + _diagnose(student_fn, cases), quiet)
    return ex.report(result.status, result.message, quiet)
