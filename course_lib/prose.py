"""Keep the figures quoted in a notebook's prose equal to what the notebook computes.

A sentence such as "the corpus has about 24,000 training pairs" goes stale when the corpus or the
recipe changes and the notebook is regenerated. So every figure in the prose about the course's own
data, model or runs is checked by a code cell right after the computation::

    prose.check("about 24,000 training pairs", len(train_pairs), rel=0.05)

``check`` reads the figures out of the quoted phrase itself (here 24,000) and asserts that the
computed values match them: a regeneration that changes a figure fails, and nbval fails with it.
``tests/test_prose.py`` checks, without running anything, that every phrase passed to ``check`` occurs
word for word in a markdown cell of the same notebook, and that every figure in the prose is either
inside a checked phrase or declared in ``notebooks/prose_facts.txt`` as a fact from outside the course
(the paper, another project) or a figure the text itself sets (an exercise's input).

Rules for the figures inside a phrase: ``$...$`` (LaTeX) and ```...``` (code) are skipped; ``1,234``
``1.5`` and ``1.6e+19`` are numbers, ``−`` or ``-`` directly before a digit makes them negative; a following
``thousand``/``million``/``k``/``M`` multiplies them. Percentages are compared as written (pass 52
for "52 %").

After a change that moves many figures at once (a new initialisation, say), regenerate with the
environment variable ``COURSE_PROSE_SURVEY=1``: every mismatch is then printed (``prose mismatch: ...``)
instead of raised, so one run lists all the sentences to update. Never set it in CI.
"""

from __future__ import annotations

import math
import os
import re
import sys

__all__ = ["check", "figures"]

_NUMBER = re.compile(r"(?<![\w.])([−-])?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?(?:e[+-]?\d+)?)(?:\s*(thousand|million|k\b|M\b))?")
_SCALE = {"thousand": 1e3, "k": 1e3, "million": 1e6, "M": 1e6}
_SKIP = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", re.S)


def figures(phrase: str) -> list[tuple[float, float]]:
    """The numbers quoted in ``phrase`` as (value, half a unit of the last quoted digit).

    Args:
        phrase: text copied from a markdown cell.

    Returns:
        One ``(value, resolution)`` pair per number, in order; "0.36" gives (0.36, 0.005),
        "24,000" gives (24000.0, 0.5), "355 thousand" gives (355000.0, 500.0).
    """
    out = []
    for match in _NUMBER.finditer(_SKIP.sub(" ", phrase)):
        sign, digits, unit = match.groups()
        mantissa, _, exponent = digits.partition("e")
        value = float(digits.replace(",", ""))
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        factor = _SCALE.get(unit, 1.0) * 10.0 ** int(exponent or 0)
        value = value / 10.0 ** int(exponent or 0)  # the factor puts the exponent back
        value = -value * factor if sign else value * factor
        out.append((value, 0.5 * 10.0**-decimals * factor))
    return out


def check(phrase: str, *values: float, rel: float | None = None, abs: float | None = None) -> None:
    """Assert that the figures quoted in ``phrase`` agree with the computed ``values``.

    Args:
        phrase: a phrase copied word for word from a markdown cell of the notebook (the test suite
            checks that it occurs there); it must quote exactly ``len(values)`` numbers.
        values: the computed figures, in the order the phrase quotes them.
        rel: allowed relative difference, for rounded figures ("about 24,000", "≈ 7,500").
        abs: allowed absolute difference.
        Without ``rel`` or ``abs`` a value must round to the quoted figure at the quoted precision
        ("0.36" accepts 0.355 to 0.365; "1,928" only 1,928).

    Raises:
        ValueError: the phrase quotes a different number of figures than values were given.
        AssertionError: a value does not match its figure (the message names both).
    """
    quoted = figures(phrase)
    if len(quoted) != len(values):
        raise ValueError(f"phrase {phrase!r} quotes {len(quoted)} figures {[q for q, _ in quoted]}, "
                         f"but {len(values)} values were given")
    for (figure, resolution), value in zip(quoted, values, strict=True):
        value = float(value.detach() if hasattr(value, "detach") else value)  # tensors, numbers
        if rel is not None or abs is not None:
            tolerance = max((rel or 0.0) * math.fabs(figure), abs or 0.0)
        else:
            tolerance = resolution * (1 + 1e-9)
        if not math.fabs(value - figure) <= tolerance:
            message = (f"the prose says {phrase!r}, but the computation gives {value:g} for {figure:g} "
                       f"(allowed difference {tolerance:g}): update the text of the notebook")
            if os.environ.get("COURSE_PROSE_SURVEY"):
                print(f"prose mismatch: {message}", file=sys.stderr)
                continue
            raise AssertionError(message)
