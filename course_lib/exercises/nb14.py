"""Exercise checks for notebook 14 (from the toy corpus to real data).

14.1 ``peak_lr``: the recipe's peak learning rate for a model width and depth.
14.2 ``unknown_rate``: the share of tokens a vocabulary turns into ``<unk>``.

Checkers compare with the reference (:func:`course_lib.recipe.peak_lr_for`, a token count) and name
the typical mistake they recognise: the Noam exponent -0.5 instead of -1, the width ratio upside down, a forgotten depth
factor, no floor at the toy size; counting distinct words instead of tokens, a percentage instead of
a fraction, the known share instead of the unknown one.
"""

from __future__ import annotations

import math

from course_lib.exercises import FAILED, PASSED, exercise, known_mistake
from course_lib.recipe import ANCHOR_PEAK_LR, WIDTH_EXPONENT, peak_lr_for
from course_lib.tokenization import Vocab

# ----------------------------------------------------------------------------------------------
# 14.1 peak learning rate
# ----------------------------------------------------------------------------------------------

PEAK_CASES = [
    ("the toy size: d_model 64, 2 layers", 64, 2),
    ("the tutorial size: d_model 256, 3 layers", 256, 3),
    ("d_model 128, 4 layers", 128, 4),
    ("the paper's base size: d_model 512, 6 layers", 512, 6),
    ("smaller than the toy: d_model 32, 1 layer", 32, 1),
]

_PEAK_MISTAKES = [
    ("you scale the width like the Noam schedule, (64 / d_model)^0.5; the recipe divides by the width "
     "itself, 64 / d_model (an empirical rule inspired by µP's 1 / fan-in rate for Adam)",
     lambda d, n: ANCHOR_PEAK_LR * (max(d, 64) / 64) ** -0.5 * (max(n, 2) / 2) ** -0.5),
    ("your rate grows with the width: the factor is 64 / d_model, not d_model / 64",
     lambda d, n: ANCHOR_PEAK_LR * (max(d, 64) / 64) ** WIDTH_EXPONENT * (max(n, 2) / 2) ** -0.5),
    ("the depth factor (2 / layers)^0.5 is missing",
     lambda d, n: ANCHOR_PEAK_LR * (max(d, 64) / 64) ** -WIDTH_EXPONENT),
    ("the depth factor is (2 / layers)^0.5, a square root; you use (2 / layers)^1",
     lambda d, n: ANCHOR_PEAK_LR * (max(d, 64) / 64) ** -WIDTH_EXPONENT * (max(n, 2) / 2) ** -1.0),
    ("models smaller than the toy must keep the toy's rate: use max(d_model, 64) and max(layers, 2)",
     lambda d, n: ANCHOR_PEAK_LR * (d / 64) ** -WIDTH_EXPONENT * (n / 2) ** -0.5),
]


@exercise("14.1", points=2)
def check_peak_lr(ex, student_fn, quiet: bool = False):
    """``peak_lr(d_model, layers)`` equals :func:`course_lib.recipe.peak_lr_for` on several sizes."""
    for description, d_model, layers in PEAK_CASES:
        got, verdict = ex.call_student(student_fn, (d_model, layers), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        if hasattr(got, "item"):
            got = got.item()
        if not isinstance(got, int | float) or isinstance(got, bool) or not math.isfinite(got):
            return ex.report(FAILED, f"on '{description}': return a number, got {got!r}.", quiet)
        expected = peak_lr_for(d_model, layers)
        if not math.isclose(got, expected, rel_tol=1e-6):
            hint = known_mistake(_PEAK_MISTAKES, lambda wrong, got=got, d_model=d_model, layers=layers:
                                 math.isclose(got, wrong(d_model, layers), rel_tol=1e-6))
            hint = hint or "start from 8.8e-3 = (64 * 200)^-0.5, the toy's peak, and scale by width and depth"
            return ex.report(FAILED, f"on '{description}': your rate {got:.3g} is not the recipe's. Hint: "
                          f"{hint}.", quiet)
    return ex.report(PASSED, f"all {len(PEAK_CASES)} sizes agree with course_lib.recipe.peak_lr_for.", quiet)


# ----------------------------------------------------------------------------------------------
# 14.2 unknown-token rate
# ----------------------------------------------------------------------------------------------


def reference_unknown_rate(token_lists, vocab: Vocab) -> float:
    """Share (0-1) of all tokens in ``token_lists`` that ``vocab`` does not contain (0 for no tokens)."""
    tokens = [t for tokens in token_lists for t in tokens]
    return sum(t not in vocab for t in tokens) / len(tokens) if tokens else 0.0


def _unknown_cases():
    vocab = Vocab.build([["a", "dog", "runs", "."], ["a", "cat", "sleeps", "."]])
    return vocab, [
        ("every word known", [["a", "dog", "runs", "."]]),
        ("one unknown word in four tokens", [["a", "zebra", "runs", "."]]),
        ("an unknown word seen three times", [["a", "zebra", "."], ["a", "zebra", "."], ["zebra", "runs", "."]]),
        ("two sentences, three unknown tokens of ten", [["the", "dog", "runs", "."], ["a", "big", "cat", "naps", "a", "."]]),
        ("no sentences at all", []),
    ]


def _unknown_mistakes(token_lists, vocab):
    tokens = [t for tokens in token_lists for t in tokens]
    distinct = sorted(set(tokens))
    rate = reference_unknown_rate(token_lists, vocab)
    return [
        ("you count distinct words; count every token (a rare word seen three times counts three times)",
         sum(t not in vocab for t in distinct) / len(distinct) if distinct else 0.0),
        ("return a fraction between 0 and 1, not a percentage", 100 * rate),
        ("that is the share of KNOWN tokens; the unknown-token rate is the rest", 1 - rate if tokens else 1.0),
    ]


def _explain_zero_division(student_fn):
    """``student_fn`` whose ZeroDivisionError says what to do (the crash message of call_student shows it)."""
    def call(token_lists, vocab):
        try:
            return student_fn(token_lists, vocab)
        except ZeroDivisionError:
            raise ZeroDivisionError("division by zero; with no tokens the rate is 0") from None
    return call


@exercise("14.2", points=2)
def check_unknown_rate(ex, student_fn, quiet: bool = False):
    """``unknown_rate(token_lists, vocab)`` is the share of tokens not in ``vocab``."""
    vocab, cases = _unknown_cases()
    for description, token_lists in cases:
        got, verdict = ex.call_student(_explain_zero_division(student_fn),
                                    ([list(t) for t in token_lists], vocab), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        if not isinstance(got, int | float) or isinstance(got, bool):
            return ex.report(FAILED, f"on '{description}': return a number, got {got!r}.", quiet)
        expected = reference_unknown_rate(token_lists, vocab)
        if not math.isclose(got, expected, abs_tol=1e-9):
            hint = known_mistake(_unknown_mistakes(token_lists, vocab),
                                 lambda wrong, got=got: math.isclose(got, wrong, abs_tol=1e-9))
            hint = hint or "count the tokens that are not `in vocab`, divide by the number of tokens"
            return ex.report(FAILED, f"on '{description}': got {got:.4g}. Hint: {hint}.", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with the reference.", quiet)
