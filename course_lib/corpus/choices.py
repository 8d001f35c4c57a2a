"""The corpus's random choices: :class:`CorpusRandom` (only ``Random.random()`` is used) and the
weighted and balanced picks built on it.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Sequence
from functools import cache
from itertools import accumulate

from course_lib.corpus.lexicon import ADJECTIVES, CITIES, NOUNS, Adjective, Noun

# ---------------------------------------------------------------------------------------
# Random choices. Only Random.random() is used (its Mersenne Twister stream is the same in
# every Python version); "balanced" picks prefer the less used of two candidates so that
# every word of the lists is seen often enough in training.
# ---------------------------------------------------------------------------------------

class CorpusRandom(random.Random):
    """``random.Random`` plus the counts that balanced picks consult (the generator's only state).

    ``usage`` counts how often each word entry was picked per context; ``token_counts`` counts
    the German tokens of the sentences accepted so far. Both are only looked up, never iterated.
    """

    def __init__(self, seed: int):
        super().__init__(seed)
        self.usage: dict[tuple[str, object], int] = {}
        self.token_counts: dict[str, int] = {}

    def rarer(self, first_token: str, second_token: str) -> bool:
        """True if ``second_token`` has been used less than ``first_token`` so far."""
        return self.token_counts.get(second_token, 0) < self.token_counts.get(first_token, 0)


class _Weights:
    """A fixed table of (value, weight) pairs to draw from."""

    def __init__(self, pairs: Sequence[tuple[object, float]]):
        self.values = tuple(value for value, _ in pairs)
        self.cumulative = tuple(accumulate(weight for _, weight in pairs))

    def pick(self, rng: random.Random):
        return self.values[bisect_right(self.cumulative, rng.random() * self.cumulative[-1])]


def _pick(rng: random.Random, items: Sequence):
    return items[int(rng.random() * len(items))]


def _pick_balanced(rng: CorpusRandom, items: Sequence, context: str):
    """Draw two candidates and keep the one used less so far in ``context`` ("power of two choices").

    Contexts are counted separately: an adjective used often attributively (ein kleiner Hund) is
    not thereby avoided as a predicate (der Hund ist klein).
    """
    first, second = _pick(rng, items), _pick(rng, items)
    usage = rng.usage
    key_first = (context, first if isinstance(first, str) else id(first))
    key_second = (context, second if isinstance(second, str) else id(second))
    count_first, count_second = usage.get(key_first, 0), usage.get(key_second, 0)
    if count_first <= count_second:
        usage[key_first] = count_first + 1
        return first
    usage[key_second] = count_second + 1
    return second


def _chance(rng: random.Random, probability: float) -> bool:
    return rng.random() < probability


def _shuffled(rng: random.Random, items: Sequence) -> list:
    """Fisher-Yates shuffle driven by Random.random() (stable across Python versions)."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        out[i], out[j] = out[j], out[i]
    return out


@cache
def _nouns_of(kinds: frozenset[str]) -> tuple[Noun, ...]:
    """All nouns (and cities, if asked for) with at least one of the given kinds, in table order."""
    found = tuple(n for n in NOUNS if n.kinds & kinds)
    return found + (CITIES if "city" in kinds else ())


@cache
def _adjectives_for(kinds: frozenset[str]) -> tuple[Adjective, ...]:
    return tuple(a for a in ADJECTIVES if a.kinds & kinds)
