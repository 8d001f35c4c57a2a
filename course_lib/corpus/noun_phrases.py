"""Grammar rules for noun phrases: choosing one and realising it in German (gender, case,
adjective endings) and in English (a/an, plurals).
"""

from __future__ import annotations

from typing import NamedTuple

from course_lib.corpus.choices import CorpusRandom, _adjectives_for, _chance, _nouns_of, _pick, _pick_balanced, _Weights
from course_lib.corpus.lexicon import _NUMBERS, _OBJECT_PRONOUNS, PRONOUNS, Adjective, Noun, Pronoun
from course_lib.corpus.verbs import (
    _DEFINITE,
    _INDEFINITE,
    _MIXED_ENDINGS,
    _STRONG_ENDINGS,
    _WEAK_ENDINGS,
    english_indefinite_article,
)

# ---------------------------------------------------------------------------------------
# Noun phrases
# ---------------------------------------------------------------------------------------

class NounPhrase(NamedTuple):
    """A noun phrase before it is put in a case.

    ``det`` is one of "def" (der), "indef" (ein), "kein", "none" (bare plural or mass noun),
    "num" (zwei Hunde), "city" (a name) or "pronoun".
    """

    det: str
    noun: Noun | None = None
    plural: bool = False
    adjective: Adjective | None = None
    numeral: tuple[str, str] | None = None
    pronoun: Pronoun | None = None

    @property
    def de_person(self) -> int:
        """Index into the six German verb forms (2 = er/sie/es, 5 = sie plural)."""
        if self.pronoun is not None:
            return self.pronoun.person
        return 5 if self.plural else 2

    @property
    def en_person(self) -> str:
        """'1sg' (I am), '3sg' (he is, she sees) or 'other' (you/we/they see)."""
        if self.pronoun is not None:
            return _EN_PERSON.get(self.pronoun.en_nom, "other")
        return "other" if self.plural else "3sg"

    def with_det(self, det: str) -> NounPhrase:
        """The same noun phrase with another determiner (never a number)."""
        return NounPhrase(det, self.noun, self.plural, self.adjective)


_EN_PERSON = {"I": "1sg", "he": "3sg", "she": "3sg", "it": "3sg", "that": "3sg"}


def _adjective_endings(det: str) -> dict[str, dict[str, str]]:
    if det == "def":
        return _WEAK_ENDINGS
    if det in ("indef", "kein"):
        return _MIXED_ENDINGS
    return _STRONG_ENDINGS


_ADJECTIVE_TAG = {"def": "adjective_after_definite", "indef": "adjective_after_indefinite",
                  "kein": "adjective_after_indefinite", "none": "adjective_strong", "num": "adjective_strong"}


def german_np(np: NounPhrase, case: str, tags: set[str]) -> list[str]:
    """German tokens of a noun phrase in ``case`` ("nom", "acc" or "dat"); adds tags it exercises."""
    if np.det == "pronoun":
        pronoun = np.pronoun
        return [pronoun.de_nom if case == "nom" else pronoun.de_acc if case == "acc" else pronoun.de_dat]
    noun = np.noun
    if np.det == "city":
        tags.add("city")
        return [noun.de_sg]
    key = "pl" if np.plural else noun.gender
    tokens: list[str] = []
    if np.det == "def":
        tokens.append(_DEFINITE[case][key])
    elif np.det == "indef":
        tokens.append(_INDEFINITE[case][key])
    elif np.det == "kein":
        tokens.append("k" + _INDEFINITE[case][key])
    elif np.det == "num":
        tokens.append(np.numeral[0])
        tags.add("number")
    if np.adjective is not None:
        tokens.append(np.adjective.stem + _adjective_endings(np.det)[case][key])
        tags.add(_ADJECTIVE_TAG[np.det])
    if np.plural:
        tokens.append(noun.de_dat_pl if case == "dat" else noun.de_pl)
        tags.add("plural")
    elif noun.de_weak is not None and case != "nom":
        tokens.append(noun.de_weak)
        tags.add("weak_noun")
    else:
        tokens.append(noun.de_sg)
    if noun.is_mass and np.det in ("none", "kein"):
        tags.add("mass_noun")
    if case != "nom":
        tags.add("accusative" if case == "acc" else "dative")
    return tokens


def english_np(np: NounPhrase, role: str, tags: set[str]) -> list[str]:
    """English tokens of a noun phrase.

    Args:
        np: the noun phrase.
        role: "subj", "obj" (pronoun forms differ) or "pred" (after "is not": a "kein" plural or
            mass noun has no article: "Those are not dogs.").
        tags: set collecting the phenomena used.
    """
    if np.det == "pronoun":
        return [np.pronoun.en_nom if role == "subj" else np.pronoun.en_obj]
    noun = np.noun
    if np.det == "city":
        return [noun.en_sg]
    words = ([np.adjective.en] if np.adjective is not None else []) + [noun.en_pl if np.plural else noun.en_sg]
    if np.plural and noun.en_pl != noun.en_sg + "s":
        tags.add("irregular_plural_en")
    if np.det == "def":
        return ["the", *words]
    if np.det == "num":
        return [np.numeral[1], *words]
    if np.det == "none":
        return words
    if np.det == "kein" and (np.plural or noun.is_mass):
        return words if role == "pred" else ["any", *words]
    article = english_indefinite_article(words[0])  # indef, or kein with a singular count noun
    if article == "an":
        tags.add("a_an")
    return [article, *words]


_SUBJECT_DETS = _Weights((("def", 62), ("indef", 26), ("num", 12)))
_OBJECT_DETS = _Weights((("def", 45), ("indef", 33), ("num", 10), ("none", 12)))
_NEGATED_OBJECT_DETS = _Weights((("def", 50), ("indef", 35), ("none", 15)))
_PP_DETS = _Weights((("def", 75), ("indef", 20), ("num", 5)))
_PLACE_DETS = _Weights((("def", 78), ("indef", 22)))
# "Das ist ein kleiner Hund / der kleine Hund / kalte Milch." and "Das sind zwei / die / kleine Hunde."
_SINGULAR_PREDICATE_DETS = _Weights((("indef", 70), ("def", 20), ("none", 10)))  # "none": mass nouns only
_PLURAL_PREDICATE_DETS = _Weights((("num", 45), ("def", 35), ("none", 20)))


def _random_np(rng: CorpusRandom, kinds: frozenset[str], dets: _Weights, plural_p: float = 0.25,
               adjective_p: float = 0.3, case: str | None = None) -> NounPhrase:
    """A random noun phrase whose noun has one of ``kinds``.

    Args:
        rng: the generator's :class:`CorpusRandom`.
        kinds: noun kinds to choose from.
        dets: determiner weights ("def", "indef", "num", "none").
        plural_p: probability of a plural after "def".
        adjective_p: probability of an adjective.
        case: the case the phrase will be used in; if given, of three adjectives the one whose
            ending form (kleiner, kleines ...) is rarest so far is kept.

    Impossible determiner choices are corrected: singular-only nouns (places, events) take
    der/ein, mass nouns take der or no article, "none" and "num" make the noun plural.
    """
    noun = _pick_balanced(rng, _nouns_of(kinds), "noun")
    return _random_np_of(rng, noun, dets, plural_p, adjective_p, case)


def _random_np_of(rng: CorpusRandom, noun: Noun, dets: _Weights, plural_p: float = 0.25,
                  adjective_p: float = 0.3, case: str | None = None) -> NounPhrase:
    """A random noun phrase around a given noun (see :func:`_random_np`)."""
    if noun.is_city:
        return NounPhrase("city", noun)
    det = dets.pick(rng)
    if noun.is_mass:
        det, plural = ("def" if det == "def" else "none"), False
    elif noun.de_pl is None:
        det, plural = ("indef" if det == "indef" else "def"), False
    else:
        plural = det in ("num", "none") or (det == "def" and _chance(rng, plural_p))
    adjectives = _adjectives_for(noun.kinds)
    adjective = None
    if adjectives and _chance(rng, adjective_p):
        adjective = _pick_balanced(rng, adjectives, "adjective")
        if case is not None:  # of three adjectives keep the one whose form here is rarest
            ending = _adjective_endings(det)[case]["pl" if plural else noun.gender]
            for _ in range(2):
                other = _pick_balanced(rng, adjectives, "adjective")
                if rng.rarer(adjective.stem + ending, other.stem + ending):
                    adjective = other
    numeral = _pick_balanced(rng, _NUMBERS, "number") if det == "num" else None
    return NounPhrase(det, noun, plural, adjective, numeral)


# Subject pronoun weights: in statements, in questions (no "ich": "Sehe ich ...?" is rare), and
# for a separable verb at the end of a subordinate clause (no ich/du/ihr, so that rare joined
# forms such as "anrufst" do not appear at all).
_STATEMENT_PRONOUNS = _Weights((("ich", 15), ("du", 16), ("er", 9), ("sie_sg", 16), ("wir", 11), ("ihr", 16),
                                ("sie_pl", 17)))
_QUESTION_PRONOUNS = _Weights((("du", 30), ("ihr", 28), ("er", 8), ("sie_sg", 14), ("wir", 5), ("sie_pl", 15)))
_THIRD_PERSON_PRONOUNS = _Weights((("er", 12), ("sie_sg", 12), ("wir", 12), ("sie_pl", 13)))


def _random_subject(rng: CorpusRandom, kinds: frozenset[str], pronouns: _Weights = _STATEMENT_PRONOUNS,
                    pronoun_p: float = 0.5) -> NounPhrase:
    """A subject for a verb that accepts ``kinds``: a personal pronoun (for people) or a noun phrase."""
    if "person" in kinds and _chance(rng, pronoun_p):
        return NounPhrase("pronoun", pronoun=PRONOUNS[pronouns.pick(rng)])
    if kinds & {"animal", "baby"} and _chance(rng, 0.04):
        return NounPhrase("pronoun", pronoun=PRONOUNS["es"])
    return _no_bare_mass(_random_np(rng, kinds, _SUBJECT_DETS, case="nom"))


def _no_bare_mass(np: NounPhrase) -> NounPhrase:
    """Subjects take an article: "Die Milch ist kalt.", not "Milch ist kalt."."""
    return np.with_det("def") if np.det == "none" else np


def _random_object(rng: CorpusRandom, kinds: frozenset[str], subject: NounPhrase, case: str,
                   negated: bool) -> NounPhrase:
    """An accusative or dative object, never the subject's noun ("die Tochter trifft die Tochter")."""
    for _ in range(3):
        np = _random_object_once(rng, kinds, subject, case, negated)
        if np.noun is None or np.noun is not subject.noun:
            break
    return np


def _random_object_once(rng: CorpusRandom, kinds: frozenset[str], subject: NounPhrase, case: str,
                        negated: bool) -> NounPhrase:
    """An accusative or dative object; person objects are sometimes pronouns (mich, dir, uns ...).

    In a negated clause a dative object is definite ("hilft dem Kind nicht") and an accusative
    one is either definite (takes "nicht") or becomes "kein" ("sieht keinen Hund").
    """
    if "person" in kinds and _chance(rng, 0.25):
        subject_group = subject.pronoun.group if subject.pronoun is not None else "3"
        choices = [p for p in _OBJECT_PRONOUNS if PRONOUNS[p].group != subject_group]
        return NounPhrase("pronoun", pronoun=PRONOUNS[_pick(rng, choices)])
    if case == "dat":
        np = _random_np(rng, kinds, _PP_DETS, case="dat")
        return np.with_det("def") if negated and np.det != "def" else np
    if not negated:
        return _random_np(rng, kinds, _OBJECT_DETS, case="acc")
    np = _random_np(rng, kinds, _NEGATED_OBJECT_DETS, case="acc")
    return np.with_det("kein") if np.det in ("indef", "none") else np
