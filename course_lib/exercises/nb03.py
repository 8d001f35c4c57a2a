"""Exercise checks for notebook 03 (positional encoding).

03.1 ``fixed_table(max_len, d_model)``: the buggy loop from the articles, repaired.
03.2 ``encode_positions(positions, d_model)``: the sinusoidal vectors of arbitrary positions.
03.3 the wavelength of dimension pair i = 8 for d_model = 64.

When a table is wrong, the checks recognise the usual mistakes (sine and cosine swapped, the
two halves concatenated instead of interleaved, the exponent counted twice, the cosine given a
different exponent than its sine) and say which one it is. The two bugs of the articles' loop
(exponent counted twice; the cosine's i + 1) are recognised each on its own and in the sine or the
cosine separately, so a half-repaired loop is told which bug is left.
"""

from __future__ import annotations

import math

import torch

from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise, known_mistake


def _table(positions: torch.Tensor, d_model: int, exponent_sin=None, exponent_cos=None, layout="interleaved"):
    """Sinusoidal vectors for ``positions`` in float64; the keyword arguments build the usual wrong variants."""
    pos = positions.to(torch.float64)[:, None]  # (n, 1)
    even = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i
    exp_sin = even / d_model if exponent_sin is None else exponent_sin(even, d_model)
    exp_cos = even / d_model if exponent_cos is None else exponent_cos(even, d_model)
    sin = torch.sin(pos / 10000.0**exp_sin)  # (n, d_model / 2)
    cos = torch.cos(pos / 10000.0**exp_cos)  # (n, d_model / 2)
    if layout == "halves":
        return torch.cat([sin, cos], dim=-1)
    out = torch.zeros(len(positions), d_model, dtype=torch.float64)
    first, second = (sin, cos) if layout == "interleaved" else (cos, sin)
    out[:, 0::2], out[:, 1::2] = first, second
    return out


def reference_encode_positions(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    """The course's answer to 03.2: ``(len(positions), d_model)`` float32."""
    return _table(positions, d_model).float()


_LAYOUT_MISTAKES = [
    ("sine and cosine are swapped: even dimensions 2i hold the sine, odd dimensions 2i+1 the cosine",
     {"layout": "swapped"}),
    ("you put all sines first and all cosines second; the course interleaves them (sin, cos, sin, cos, ...) "
     "so that dimensions 2i and 2i+1 form a pair", {"layout": "halves"}),
    ("the exponent uses the pair index i where it needs 2i / d_model", {"exponent_sin": lambda e, d: e / 2 / d,
                                                                        "exponent_cos": lambda e, d: e / 2 / d}),
]

# The two bugs of the articles' loop, each recognised on its own (03.1 is solved in two steps, and the
# check must say which step is still missing). ``e`` is the loop variable (the even dimension 2i).
_SIN_EXPONENTS = {
    "right": lambda e, d: e / d,
    "doubled": lambda e, d: 2 * e / d,
}
_COS_EXPONENTS = {
    "right": lambda e, d: e / d,
    "doubled": lambda e, d: 2 * e / d,
    "shifted": lambda e, d: (e + 1) / d,
    "doubled and shifted": lambda e, d: 2 * (e + 1) / d,
}
_DOUBLED = "the loop variable i already is the even dimension 2i, so the exponent is i / d_model, not 2 * i / d_model"
_SHIFTED = ("the cosine uses i + 1 where it needs i: dimensions 2i and 2i+1 form one pair and share the sine's "
            "frequency 1 / 10000^(2i / d_model)")


def _exponent_bugs(sin_kind: str, cos_kind: str) -> str:
    """Name the exponent bugs left in a table whose sine and cosine exponents are of these kinds."""
    doubled = [name for name, kind in (("sine", sin_kind), ("cosine", cos_kind)) if "doubled" in kind]
    bugs = []
    if doubled:
        bugs.append(f"the exponent of the {' and the '.join(doubled)} is counted twice ({_DOUBLED})")
    if "shifted" in cos_kind:
        bugs.append(_SHIFTED)
    if (sin_kind, cos_kind) == ("doubled", "doubled and shifted"):
        return "both bugs of the loop are still there: " + "; and ".join(bugs)
    if len(bugs) == 1:
        return "one bug is left: " + bugs[0]
    return "two things are still wrong: " + "; and ".join(bugs)


def _diagnose(got: torch.Tensor, positions: torch.Tensor, d_model: int) -> str:
    """Name a known mistake that explains ``got`` (empty string if none does)."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != (len(positions), d_model):
        return ""
    exponent_mistakes = [(_exponent_bugs(sin_kind, cos_kind), {"exponent_sin": sin, "exponent_cos": cos})
                         for sin_kind, sin in _SIN_EXPONENTS.items() for cos_kind, cos in _COS_EXPONENTS.items()
                         if (sin_kind, cos_kind) != ("right", "right")]
    mistake = known_mistake(
        [*_LAYOUT_MISTAKES, *exponent_mistakes],
        lambda variant: describe_difference(got, _table(positions, d_model, **variant), atol=1e-4) is None)
    return f" It looks like {mistake}." if mistake else ""


def _check_tables(ex, call, cases, quiet: bool):
    """``cases``: (description, args, positions, d_model); ``call(*args)`` is the student's table."""
    for description, args, positions, d_model in cases:
        got, verdict = ex.call_student(call, args, case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        expected = reference_encode_positions(positions, d_model)
        difference = describe_difference(got, expected, atol=1e-4)
        if difference:
            return ex.report(FAILED, f"on case '{description}': {difference}.{_diagnose(got, positions, d_model)}", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with the reference.", quiet)


@exercise("03.2", points=2)
def check_encode_positions(ex, student_fn, quiet: bool = False):
    """``encode_positions(positions, d_model)`` -> ``(len(positions), d_model)`` sinusoidal vectors."""
    cases = []
    for description, positions, d_model in [
        ("positions 0..9, d_model=4", torch.arange(10), 4),
        ("positions 0..49, d_model=64", torch.arange(50), 64),
        ("positions [0, 7, 3, 100], d_model=16", torch.tensor([0, 7, 3, 100]), 16),
        ("the single position [5], d_model=2", torch.tensor([5]), 2),
    ]:
        cases.append((description, (positions.clone(), d_model), positions, d_model))
    return _check_tables(ex, student_fn, cases, quiet)


@exercise("03.1", points=2)
def check_fixed_table(ex, student_fn, quiet: bool = False):
    """``fixed_table(max_len, d_model)`` -> the correct ``(max_len, d_model)`` table."""
    cases = [
        (f"max_len={max_len}, d_model={d_model}", (max_len, d_model), torch.arange(max_len), d_model)
        for max_len, d_model in [(10, 4), (30, 16), (50, 64)]
    ]
    return _check_tables(ex, student_fn, cases, quiet)


WAVELENGTH_D_MODEL, WAVELENGTH_PAIR = 64, 8


@exercise("03.3", points=1, kind=VALUE)
def check_wavelength(ex, answer, quiet: bool = False):
    """Positions per full wave of pair i = 8 (dimensions 16 and 17) when d_model = 64."""
    expected = 2 * math.pi * 10000 ** (2 * WAVELENGTH_PAIR / WAVELENGTH_D_MODEL)  # 2π · 10 ≈ 62.83
    hint = ("The angle of pair i grows by ω_i = 1 / 10000^(2i / d_model) per position, and one full wave is "
            "an angle of 2π, so the wave length is 2π / ω_i.")
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = float(answer)
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = float(answer)
        if math.isclose(answer, 10.0, rel_tol=1e-3):
            hint = "10 is 1 / ω_i, the number of positions per radian; a full wave is 2π radians."
        elif math.isclose(answer, 0.1, rel_tol=1e-3):
            hint = "0.1 is the frequency ω_i (radians per position); the wave length is 2π / ω_i."
        elif math.isclose(answer, 2 * math.pi * 100, rel_tol=1e-3):
            hint = "That is the double-counting bug: with i = 8 the exponent is 2·8/64 = 1/4, not 2·16/64."
    return ex.check_answer(answer, expected, hint=hint, atol=0.01 * expected, quiet=quiet)
