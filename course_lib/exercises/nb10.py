"""Exercise checks for notebook 10 (training a German→English translator).

10.1 ``warmup_lr``: the learning rate of the warm-up ("Noam") schedule at a given step.
10.2 ``smoothed_targets``: the label-smoothed target distribution, one row per target token.
10.3 ``batch_padding_fraction``: the fraction of padding in one batch, from its sentence lengths.
10.4 spot the bug: what to change in the articles' recipe (5 sentences, Adam lr 0.01, d_model 512).

The first three compare with ``course_lib`` (:func:`course_lib.schedule.noam_lr`,
:func:`course_lib.losses.smoothed_target_distribution`, :func:`course_lib.data.padding_fraction`) and
recognise the typical mistakes: a missing factor or wrong exponent, spreading the smoothing mass over
``K - 1`` classes, forgetting the padding rows, dividing by the wrong total. 10.4 explains every option.
"""

from __future__ import annotations

import math

import torch

from course_lib.data import padding_fraction
from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise, known_mistake
from course_lib.losses import smoothed_target_distribution
from course_lib.schedule import noam_lr

# ----------------------------------------------------------------------------------------------
# 10.1 the warm-up learning rate
# ----------------------------------------------------------------------------------------------


def _lr_cases():
    """(description, (step, d_model, warmup, factor)); the rising part, the peak and the decay."""
    return [
        ("step 1, d_model 64, warmup 400, factor 2 (the very first update)", (1, 64, 400, 2.0)),
        ("step 100, d_model 64, warmup 400, factor 2 (warming up)", (100, 64, 400, 2.0)),
        ("step 400, d_model 64, warmup 400, factor 2 (the peak)", (400, 64, 400, 2.0)),
        ("step 1600, d_model 64, warmup 400, factor 2 (decaying)", (1600, 64, 400, 2.0)),
        ("step 4000, d_model 512, warmup 4000, factor 1 (the paper's peak)", (4000, 512, 4000, 1.0)),
        ("step 20000, d_model 512, warmup 4000, factor 1 (the paper, late)", (20000, 512, 4000, 1.0)),
    ]


# Mistakes we recognise: (what it looks like, the wrong formula).
_LR_MISTAKES = [
    ("you left out the factor", lambda s, d, w, f: d**-0.5 * min(s**-0.5, s * w**-1.5)),
    ("you left out d_model^-0.5", lambda s, d, w, f: f * min(s**-0.5, s * w**-1.5)),
    ("you used max instead of min: the smaller of the two terms is the rate",
     lambda s, d, w, f: f * d**-0.5 * max(s**-0.5, s * w**-1.5)),
    ("the warm-up term is step * warmup^-1.5 (you used warmup^-0.5)",
     lambda s, d, w, f: f * d**-0.5 * min(s**-0.5, s * w**-0.5)),
    ("the rate never warms up: you return only the decaying term factor * d_model^-0.5 * step^-0.5",
     lambda s, d, w, f: f * d**-0.5 * s**-0.5),
    ("you used d_model^+0.5 instead of d_model^-0.5 (larger models get SMALLER rates)",
     lambda s, d, w, f: f * d**0.5 * min(s**-0.5, s * w**-1.5)),
]


def _lr_hint(student_fn) -> str:
    cases = _lr_cases()
    try:
        message = known_mistake(_LR_MISTAKES, lambda wrong: all(
            math.isclose(float(student_fn(*args)), wrong(*args), rel_tol=1e-6) for _, args in cases))
    except Exception:  # a hint is optional: never let it crash the checker
        return ""
    return f" It looks like {message}." if message else ""


@exercise("10.1", points=2)
def check_warmup_lr(ex, student_fn, quiet: bool = False):
    """``warmup_lr(step, d_model, warmup, factor)`` equals ``course_lib.schedule.noam_lr``."""
    cases = _lr_cases()
    for description, args in cases:
        got, verdict = ex.call_student(student_fn, args, case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = float(got)
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return ex.report(FAILED, f"on case '{description}': return a number, got {type(got).__name__}.",
                          quiet)
        expected = noam_lr(*args)
        if not math.isclose(got, expected, rel_tol=1e-6):
            return ex.report(FAILED, f"on case '{description}': expected {expected:.6g}, got {got:.6g}."
                          f"{_lr_hint(student_fn)}", quiet)
    return ex.report(PASSED, f"all {len(cases)} steps agree with course_lib.schedule.noam_lr.", quiet)


# ----------------------------------------------------------------------------------------------
# 10.2 the label-smoothed target distribution
# ----------------------------------------------------------------------------------------------


def _smoothing_cases():
    """(description, (target, num_classes, smoothing, pad_id))."""
    return [
        ("target=[5], K=8, smoothing=0.1", (torch.tensor([5]), 8, 0.1, 0)),
        ("target=[4, 6, 2], K=8, smoothing=0.2", (torch.tensor([4, 6, 2]), 8, 0.2, 0)),
        ("a padded target [4, 7, 2, 0, 0], K=10, smoothing=0.1 (rows of <pad> targets)",
         (torch.tensor([4, 7, 2, 0, 0]), 10, 0.1, 0)),
        ("a batch (2, 3) of targets, K=6, smoothing=0.3", (torch.tensor([[4, 5, 2], [3, 2, 0]]), 6, 0.3, 0)),
        ("smoothing=0 (plain one-hot targets), K=5", (torch.tensor([4, 1, 0]), 5, 0.0, 0)),
    ]


def _smoothing_hint(got: torch.Tensor, target, num_classes: int, smoothing: float, pad_id: int) -> str:
    expected = smoothed_target_distribution(target, num_classes, smoothing, pad_id)
    keep = target != pad_id
    if got.shape != expected.shape:
        return " The result needs one row of K probabilities per target token: shape (*target.shape, K)."
    no_pad = smoothed_target_distribution(target, num_classes, smoothing, None)
    if torch.allclose(got.double(), no_pad.double(), atol=1e-6):
        return " Rows whose target is <pad> must be all zeros: the loss ignores them."
    other = torch.full((*target.shape, num_classes), smoothing / max(num_classes - 1, 1), dtype=torch.double)
    other.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    other[~keep] = 0.0
    if torch.allclose(got.double(), other, atol=1e-6):
        return (" You spread the mass over the K - 1 wrong classes and gave the true class exactly 1 - smoothing."
                " The course (and F.cross_entropy) spreads smoothing / K over ALL K classes, the true one included,"
                " so the true class gets 1 - smoothing + smoothing / K.")
    rows = got.double()[keep]
    if rows.numel() and not torch.allclose(rows.sum(-1), torch.ones(rows.shape[0], dtype=torch.double), atol=1e-5):
        return " Each non-padding row must sum to 1 (it is a probability distribution)."
    return ""


@exercise("10.2", points=2)
def check_smoothed_targets(ex, student_fn, quiet: bool = False):
    """``smoothed_targets(target, num_classes, smoothing, pad_id)`` equals ``smoothed_target_distribution``."""
    cases = _smoothing_cases()
    for description, args in cases:
        target, num_classes, smoothing, pad_id = args
        got, verdict = ex.call_student(student_fn, (target.clone(), num_classes, smoothing, pad_id),
                                    case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        if not isinstance(got, torch.Tensor):
            return ex.report(FAILED, f"on case '{description}': return a tensor, got {type(got).__name__}.",
                          quiet)
        if not got.dtype.is_floating_point:
            return ex.report(FAILED, f"on case '{description}': return float probabilities, got dtype "
                          f"{got.dtype}.", quiet)
        expected = smoothed_target_distribution(*args)
        difference = describe_difference(got, expected, atol=1e-6)
        if difference:
            hint = _smoothing_hint(got, *args)
            return ex.report(FAILED, f"on case '{description}': {difference}.{hint}", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with course_lib.losses.smoothed_target_distribution.",
                  quiet)


# ----------------------------------------------------------------------------------------------
# 10.3 the padding fraction of one batch
# ----------------------------------------------------------------------------------------------


def reference_batch_padding_fraction(lengths) -> float:
    """Fraction of padding when sentences of these lengths are padded to the longest of them."""
    return padding_fraction([list(range(len(lengths)))], list(lengths))


def _padding_cases():
    return [
        ("lengths [5, 3, 2]", ([5, 3, 2],)),
        ("lengths [4, 4, 4, 4] (no padding at all)", ([4, 4, 4, 4],)),
        ("one sentence [7]", ([7],)),
        ("lengths [10, 1, 1, 1, 1, 1] (one long sentence)", ([10, 1, 1, 1, 1, 1],)),
        ("lengths [12, 11, 13, 12] (a length-bucketed batch)", ([12, 11, 13, 12],)),
    ]


def _padding_hint(student_fn) -> str:
    mistakes = [
        ("you returned the fraction of REAL tokens; padding is 1 minus that",
         lambda n: sum(n) / (max(n) * len(n))),
        ("you divided the padding by the number of real tokens; divide by all positions, max(lengths) * batch",
         lambda n: (max(n) * len(n) - sum(n)) / sum(n)),
        ("you padded to the MEAN length; a batch is padded to its LONGEST sentence",
         lambda n: 1 - sum(n) / (sum(n) / len(n) * len(n))),
        ("you returned the number of padding positions; the exercise asks for the fraction",
         lambda n: float(max(n) * len(n) - sum(n))),
    ]
    cases = [args[0] for _, args in _padding_cases() if len(set(args[0])) > 1]
    try:
        message = known_mistake(mistakes, lambda wrong: all(
            math.isclose(float(student_fn(list(n))), wrong(n), rel_tol=1e-9, abs_tol=1e-12) for n in cases))
    except Exception:  # a hint is optional: never let it crash the checker
        return ""
    return f" It looks like {message}." if message else ""


@exercise("10.3", points=2)
def check_batch_padding_fraction(ex, student_fn, quiet: bool = False):
    """``batch_padding_fraction(lengths)`` for one batch padded to its longest sentence."""
    cases = _padding_cases()
    for description, args in cases:
        got, verdict = ex.call_student(student_fn, (list(args[0]),), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = float(got)
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return ex.report(FAILED, f"on case '{description}': return a number between 0 and 1, "
                          f"got {type(got).__name__}.", quiet)
        expected = reference_batch_padding_fraction(*args)
        if not math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-9):
            return ex.report(FAILED, f"on case '{description}': expected {expected:.4f}, got {got:.4f}."
                          f"{_padding_hint(student_fn)}", quiet)
    return ex.report(PASSED, f"all {len(cases)} batches agree with course_lib.data.padding_fraction.", quiet)


# ----------------------------------------------------------------------------------------------
# 10.4 spot the bug: the articles' recipe
# ----------------------------------------------------------------------------------------------

RECIPE_OPTIONS = {
    "A": "train for 300 epochs instead of 30",
    "B": "train on thousands of sentence pairs instead of 5",
    "C": "switch label smoothing off",
    "D": "use the warm-up schedule (peak about 0.0007 for d_model 512) instead of a constant lr of 0.01",
    "E": "make the model bigger: d_model 1024",
    "F": "drop the causal mask, so the loss falls faster",
}
RECIPE_ANSWER = frozenset({"B", "D"})
_RECIPE_WHY = {
    "A": "more epochs on 5 sentences can at best memorise them; it cannot teach a model to translate anything "
         "else, and at lr 0.01 the loss does not even go down",
    "B": "five sentences cannot teach a grammar: a model needs many examples of every word and construction",
    "C": "label smoothing of 0.1 keeps the lowest possible loss above 0, but it does not stop a model from learning",
    "D": "Adam at a constant 0.01 is about 14 times the paper's peak for d_model 512 and starts at full speed from "
         "random weights: a post-norm Transformer then gets stuck, with the loss stalling far above 0",
    "E": "a bigger model needs a smaller learning rate and more data, so it makes both real problems worse",
    "F": "without the causal mask the loss falls because the decoder copies the next token from its input, "
         "and greedy decoding then produces garbage (notebook 06)",
}


def _as_letters(answer):
    """A set of option letters from 'BD', 'B, D', ['B', 'D'], {'b', 'd'}; or None if it cannot be read."""
    if isinstance(answer, str):
        letters = [c for c in answer.upper() if c.isalpha()]
    elif isinstance(answer, (list, tuple, set, frozenset)) and all(isinstance(a, str) for a in answer):
        letters = [a.strip().upper() for a in answer]
    else:
        return None
    return set(letters)


@exercise("10.4", points=1, kind=VALUE)
def check_recipe_fix(ex, answer, quiet: bool = False):
    """Which TWO changes fix the articles' recipe (letters of ``RECIPE_OPTIONS``)."""
    if answer is None:
        return ex.not_attempted("replace `None` by your letters, e.g. {\"A\", \"C\"}", quiet)
    letters = _as_letters(answer)
    if letters is None:
        return ex.report(FAILED, f"give your choice as letters, e.g. {{\"A\", \"C\"}} or \"AC\"; got {answer!r}.",
                      quiet)
    unknown = sorted(letters - set(RECIPE_OPTIONS))
    if unknown:
        return ex.report(FAILED, f"there is no option {', '.join(unknown)}; choose from "
                      f"{', '.join(sorted(RECIPE_OPTIONS))}.", quiet)
    wrong = sorted(letters - RECIPE_ANSWER)
    missing = sorted(RECIPE_ANSWER - letters)
    if not wrong and not missing:
        return ex.report(PASSED, "B and D. " + _RECIPE_WHY["B"][0].upper() + _RECIPE_WHY["B"][1:]
                      + "; and " + _RECIPE_WHY["D"] + ".", quiet)
    parts = [f"{letter} does not help: {_RECIPE_WHY[letter]}" for letter in wrong]
    if missing:
        parts.append(f"{len(missing)} of the two real fixes {'is' if len(missing) == 1 else 'are'} missing from your "
                     "choice (look at the data and at the learning rate)")
    return ex.report(FAILED, "; ".join(parts) + ".", quiet)
