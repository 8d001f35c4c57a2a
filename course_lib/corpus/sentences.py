"""Sentences, splits and files: sentence shapes, :func:`generate_tagged`, the train/valid/test splits,
tag look-ups and writing the TSV files.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import NamedTuple

from course_lib.corpus.choices import CorpusRandom, _pick, _pick_balanced, _shuffled, _Weights
from course_lib.corpus.clauses import (
    FRONTED_TENSE_WEIGHTS,
    PRESENT_OR_MODAL,
    QUESTION_TENSE_WEIGHTS,
    TENSE_WEIGHTS,
    Clause,
    random_clause,
)
from course_lib.corpus.lexicon import TIME_PHRASES
from course_lib.corpus.noun_phrases import _random_subject
from course_lib.corpus.realise import _english_pp, _german_pp, english_clause, german_clause
from course_lib.corpus.settings import DEFAULT_SEED, MAX_TOKENS, N_TEST, N_TRAIN, N_VALID, PHENOMENA, SPLIT_NAMES
from course_lib.corpus.verbs import _CONJUNCTIONS, _MATRIX_VERBS, _kinds

# ---------------------------------------------------------------------------------------
# Sentences
# ---------------------------------------------------------------------------------------

class TaggedPair(NamedTuple):
    """One sentence pair and the phenomena (keys of ``PHENOMENA``) it exercises, sorted."""

    german: str
    english: str
    tags: tuple[str, ...]

    @property
    def pair(self) -> tuple[str, str]:
        return self.german, self.english


def _sentence(tokens: list[str], end: str) -> str:
    """Join tokens into a sentence with a capital first letter and final punctuation."""
    text = " ".join(tokens).replace(" ,", ",")
    return text[0].upper() + text[1:] + end


def _statement(rng: CorpusRandom, tags: set[str]):
    clause = random_clause(rng)
    return german_clause(clause, "main", tags), english_clause(clause, tags), "."


def _fronted_time(rng: CorpusRandom, tags: set[str]):
    clause = random_clause(rng, tenses=FRONTED_TENSE_WEIGHTS, fronted=True)
    past = clause.tense == "perfect" and clause.verb is not None
    de_time, en_time, _ = _pick_balanced(rng, _PAST_TIMES if past else _PRESENT_TIMES, "time")
    tags.update(("fronted_time", "v2_inversion"))
    if past:
        tags.add("simple_past_en")
    de = de_time.split() + german_clause(clause, "inverted", tags)
    en = en_time.split() + english_clause(clause, tags, past=past)
    return de, en, "."


_PAST_TIMES = tuple(t for t in TIME_PHRASES if "past" in t[2])
_PRESENT_TIMES = tuple(t for t in TIME_PHRASES if "present" in t[2])


def _fronted_place(rng: CorpusRandom, tags: set[str]):
    clause = random_clause(rng, tenses=FRONTED_TENSE_WEIGHTS, need_locative=True, fronted=True)
    place, rest = clause.adjunct, clause.without_adjunct()
    past = clause.tense == "perfect"
    tags.update(("fronted_place", "v2_inversion"))
    if past:
        tags.add("simple_past_en")
    de = _german_pp(place, tags) + german_clause(rest, "inverted", tags)
    en = _english_pp(place, tags) + english_clause(rest, tags, past=past)
    return de, en, "."


def _question(rng: CorpusRandom, tags: set[str]):
    clause = random_clause(rng, tenses=QUESTION_TENSE_WEIGHTS, negation_p=0.0, question=True)
    tags.add("question")
    return german_clause(clause, "inverted", tags), english_clause(clause, tags, question=True), "?"


_ADVERBIAL_CONJUNCTIONS = ("weil", "wenn", "obwohl")


def _main_then_sub(rng: CorpusRandom, tags: set[str]):
    conjunction = _pick(rng, _ADVERBIAL_CONJUNCTIONS)
    # "wenn" (when/whenever) goes with a main clause in the present, not in the perfect
    main = random_clause(rng, tenses=PRESENT_OR_MODAL if conjunction == "wenn" else TENSE_WEIGHTS, copula_p=0.05)
    sub = random_clause(rng, verb_final=True)
    tags.add("subordinate_clause")
    de = [*german_clause(main, "main", tags), ",", conjunction, *german_clause(sub, "sub", tags)]
    en = [*english_clause(main, tags), _CONJUNCTIONS[conjunction], *english_clause(sub, tags)]
    return de, en, "."


def _sub_then_main(rng: CorpusRandom, tags: set[str]):
    conjunction = _pick(rng, _ADVERBIAL_CONJUNCTIONS)
    sub = random_clause(rng, verb_final=True)
    main = random_clause(rng, tenses=PRESENT_OR_MODAL, copula_p=0.05)
    tags.update(("subordinate_clause", "subordinate_first", "v2_inversion"))
    de = [conjunction, *german_clause(sub, "sub", tags), ",", *german_clause(main, "inverted", tags)]
    en = [_CONJUNCTIONS[conjunction], *english_clause(sub, tags), ",", *english_clause(main, tags)]
    return de, en, "."


def _reported(rng: CorpusRandom, tags: set[str]):
    matrix_verb, conjunction = _pick_balanced(rng, _MATRIX_VERBS, "matrix")
    matrix = Clause(_random_subject(rng, _kinds("person")), matrix_verb)
    sub = random_clause(rng, verb_final=True)
    tags.update(("subordinate_clause", "dass_clause" if conjunction == "dass" else "ob_clause"))
    de = [*german_clause(matrix, "main", tags), ",", conjunction, *german_clause(sub, "sub", tags)]
    en = [*english_clause(matrix, tags), _CONJUNCTIONS[conjunction], *english_clause(sub, tags)]
    return de, en, "."


# How often each sentence shape is drawn.
_SENTENCE_SHAPES = _Weights(((_statement, 30), (_fronted_time, 15), (_fronted_place, 6), (_question, 16),
                             (_main_then_sub, 14), (_sub_then_main, 6), (_reported, 13)))


def random_pair(rng: CorpusRandom) -> TaggedPair:
    """Draw one sentence pair with at most ``MAX_TOKENS`` words and punctuation marks per side."""
    while True:
        tags: set[str] = set()
        de_tokens, en_tokens, end = _SENTENCE_SHAPES.pick(rng)(rng, tags)
        if len(de_tokens) < MAX_TOKENS and len(en_tokens) < MAX_TOKENS:  # +1 for the final "." or "?"
            return TaggedPair(_sentence(de_tokens, end), _sentence(en_tokens, end), tuple(sorted(tags)))


def generate_tagged(n: int, seed: int = DEFAULT_SEED) -> list[TaggedPair]:
    """``n`` tagged pairs with pairwise different German sentences, in generation order.

    Args:
        n: number of pairs (> 0).
        seed: seed of the generator's own random number generator.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"n must be a positive int, got {n!r}")
    rng = CorpusRandom(seed)
    seen: set[str] = set()  # membership tests only; never iterated
    out: list[TaggedPair] = []
    counts = rng.token_counts
    for _ in range(20 * n + 1000):
        tagged = random_pair(rng)
        if tagged.german not in seen:
            seen.add(tagged.german)
            out.append(tagged)
            for token in tagged.german[:-1].replace(",", "").split():
                counts[token] = counts.get(token, 0) + 1
            if len(out) == n:
                return out
    raise RuntimeError(f"could only make {len(out)} different sentences out of {n} requested")


def generate_pairs(n: int, seed: int = DEFAULT_SEED) -> list[tuple[str, str]]:
    """``n`` (german, english) pairs with pairwise different German sentences."""
    return [t.pair for t in generate_tagged(n, seed)]


def make_tagged_splits(seed: int = DEFAULT_SEED, n_train: int = N_TRAIN, n_valid: int = N_VALID,
                       n_test: int = N_TEST) -> dict[str, list[TaggedPair]]:
    """Generate ``n_train + n_valid + n_test`` unique pairs, shuffle them (seeded) and split.

    Because every German sentence is unique, no validation or test sentence is in training.
    Returns a dict with keys "train", "valid", "test".
    """
    for name, value in (("n_train", n_train), ("n_valid", n_valid), ("n_test", n_test)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    tagged = _shuffled(random.Random(seed + 1), generate_tagged(n_train + n_valid + n_test, seed))
    return {"train": tagged[:n_train], "valid": tagged[n_train:n_train + n_valid],
            "test": tagged[n_train + n_valid:]}


def make_splits(seed: int = DEFAULT_SEED, n_train: int = N_TRAIN, n_valid: int = N_VALID,
                n_test: int = N_TEST) -> dict[str, list[tuple[str, str]]]:
    """Like :func:`make_tagged_splits` but with plain (german, english) tuples."""
    splits = make_tagged_splits(seed, n_train, n_valid, n_test)
    return {name: [t.pair for t in items] for name, items in splits.items()}


def default_tagged_splits(seed: int = DEFAULT_SEED) -> dict[str, tuple[TaggedPair, ...]]:
    """The default-size tagged splits, generated once per process and cached (do not modify)."""
    return _cached_splits(seed)


@lru_cache(maxsize=2)
def _cached_splits(seed: int) -> dict[str, tuple[TaggedPair, ...]]:
    return {name: tuple(items) for name, items in make_tagged_splits(seed).items()}


def examples_with(tag: str, n: int = 5, split: str = "test", seed: int = DEFAULT_SEED,
                  without: Iterable[str] = ()) -> list[TaggedPair]:
    """The first ``n`` pairs of a split of the default-size corpus that carry ``tag``.

    Args:
        tag: a key of ``PHENOMENA``, e.g. "subordinate_clause", "perfect", "separable_split".
        n: how many examples.
        split: "train", "valid" or "test".
        seed: corpus seed (the committed files use ``DEFAULT_SEED``).
        without: tags the examples must not have, e.g. ("question", "subordinate_clause").
    """
    unknown = [t for t in (tag, *without) if t not in PHENOMENA]
    if unknown:
        raise ValueError(f"unknown tag(s) {unknown}; known tags: {', '.join(PHENOMENA)}")
    if split not in SPLIT_NAMES:
        raise ValueError(f"split must be one of {SPLIT_NAMES}, got {split!r}")
    excluded = tuple(without)
    found = (t for t in default_tagged_splits(seed)[split] if tag in t.tags and not any(x in t.tags for x in excluded))
    return list(islice(found, n))


def tags_by_german(seed: int = DEFAULT_SEED) -> dict[str, tuple[str, ...]]:
    """Map every German sentence of the default-size corpus to its tags (for error analysis)."""
    return {t.german: t.tags for items in default_tagged_splits(seed).values() for t in items}


def phenomenon_counts(tagged: Iterable[TaggedPair]) -> dict[str, int]:
    """How many pairs carry each tag, in ``PHENOMENA`` order (zero counts included)."""
    counts = dict.fromkeys(PHENOMENA, 0)
    for item in tagged:
        for tag in item.tags:
            counts[tag] += 1
    return counts


def format_tsv(pairs: Iterable[tuple[str, str]]) -> str:
    """One ``german<TAB>english`` line per pair, each ending in "\\n"."""
    lines = []
    for german, english in pairs:
        if any(ch in german or ch in english for ch in "\t\n\r"):
            raise ValueError(f"a sentence contains a tab or line break: {german!r} / {english!r}")
        lines.append(f"{german}\t{english}\n")
    return "".join(lines)


def write_splits(directory: str | os.PathLike, seed: int = DEFAULT_SEED, n_train: int = N_TRAIN,
                 n_valid: int = N_VALID, n_test: int = N_TEST) -> dict[str, Path]:
    """Regenerate the corpus and write ``train.tsv``, ``valid.tsv`` and ``test.tsv`` (UTF-8, "\\n").

    Returns the written paths by split name.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, pairs in make_splits(seed, n_train, n_valid, n_test).items():
        path = directory / f"{name}.tsv"
        path.write_bytes(format_tsv(pairs).encode("utf-8"))
        paths[name] = path
    return paths
