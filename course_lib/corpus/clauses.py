"""Grammar rules for clauses: adjuncts, copula clauses and :func:`random_clause`, the description
(subject, verb, objects, tense, negation) that both languages realise.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from course_lib.corpus.choices import CorpusRandom, _chance, _pick, _pick_balanced, _Weights
from course_lib.corpus.lexicon import ADJECTIVES, NOUNS, PRONOUNS, Adjective, Noun
from course_lib.corpus.noun_phrases import (
    _PLACE_DETS,
    _PLURAL_PREDICATE_DETS,
    _PP_DETS,
    _QUESTION_PRONOUNS,
    _SINGULAR_PREDICATE_DETS,
    _STATEMENT_PRONOUNS,
    _SUBJECT_DETS,
    _THIRD_PERSON_PRONOUNS,
    NounPhrase,
    _adjective_endings,
    _no_bare_mass,
    _random_np,
    _random_np_of,
    _random_object,
    _random_subject,
)
from course_lib.corpus.verbs import _ADJUNCTS, _LOCATIVE_ADJUNCTS, _MODALS, VERBS, Verb, _kinds

# ---------------------------------------------------------------------------------------
# Clauses
# ---------------------------------------------------------------------------------------

class Adjunct(NamedTuple):
    """A prepositional phrase: which entry of ``_ADJUNCTS`` and its noun phrase."""

    name: str
    np: NounPhrase


class Clause(NamedTuple):
    """Everything needed to say one clause in German and in English.

    ``tense`` is "present", "perfect" or "modal" (then ``modal`` names it). A clause with sein
    as its verb has ``verb=None`` and a ``predicate``: an adjective (ist klein), a place
    (ist im Garten) or a noun phrase (Das ist ein Hund).
    """

    subject: NounPhrase
    verb: Verb | None
    tense: str = "present"
    negated: bool = False
    modal: str | None = None
    dat: NounPhrase | None = None
    acc: NounPhrase | None = None
    pobj: NounPhrase | None = None
    adjunct: Adjunct | None = None
    predicate: Adjective | Adjunct | NounPhrase | None = None

    @property
    def uses_nicht(self) -> bool:
        """Negated with "nicht" (False when a "kein" noun phrase carries the negation)."""
        if not self.negated:
            return False
        carrier = self.predicate if isinstance(self.predicate, NounPhrase) else self.acc
        return carrier is None or carrier.det != "kein"

    def without_adjunct(self) -> Clause:
        return self._replace(adjunct=None)


_ADJUNCT_KINDS = {name: _kinds(spec[3]) for name, spec in _ADJUNCTS.items()}
_DEFINITE_ONLY = _Weights((("def", 1),))


def _random_adjunct(rng: CorpusRandom, name: str) -> Adjunct:
    """A prepositional phrase of type ``name``; only people and animals come in the plural there."""
    kinds = _ADJUNCT_KINDS[name]
    case = _ADJUNCTS[name][1] if _ADJUNCTS[name][1] != "city" else None
    if kinds & {"person", "animal"}:
        return Adjunct(name, _random_np(rng, kinds, _PP_DETS, plural_p=0.25, adjective_p=0.25, case=case))
    dets = _DEFINITE_ONLY if name == "at_station" else _PLACE_DETS  # always "am Bahnhof"
    return Adjunct(name, _random_np(rng, kinds, dets, plural_p=0.0, adjective_p=0.25, case=case))


_PLACE_PREDICATES = ("in", "on", "under", "next_to", "behind", "in_front")
_PLACE_SUBJECTS = _kinds("person animal baby thing food vehicle furniture")
_COPULA_SHAPES = _Weights((("adjective", 38), ("place", 22), ("noun", 40)))
_PREDICATE_GENDERS = _Weights((("m", 55), ("n", 30), ("f", 15)))  # "ein kleiner/kleines" are the rare forms


@cache
def _nouns_for_adjective(adjective: Adjective, gender: str | None = None, plural: bool = False) -> tuple[Noun, ...]:
    """Nouns an adjective can describe: with a plural if asked, of one gender if any fits."""
    nouns = tuple(n for n in NOUNS if n.kinds & adjective.kinds and (n.de_pl is not None or not plural))
    return (tuple(n for n in nouns if n.gender == gender) or nouns) if gender else nouns


def _random_copula_clause(rng: CorpusRandom, negated: bool, shape: str, pronouns: _Weights) -> Clause:
    """'Der Hund ist klein.', 'Der Hund ist im Garten.' or 'Das ist ein kleiner Hund.'

    For adjectives the adjective is drawn first (balanced), then a noun it fits, so that every
    adjective and each of its endings is seen often.
    """
    if shape == "place":
        subject = _random_subject(rng, _PLACE_SUBJECTS, pronouns)
        living = subject.noun is None or bool(subject.noun.kinds & {"person", "animal", "baby"})
        name = _pick(rng, _PLACE_PREDICATES + (("in_city",) if living else ()))
        return Clause(subject, None, negated=negated, predicate=_random_adjunct(rng, name))
    if shape == "adjective":
        adjective = _pick_balanced(rng, ADJECTIVES, "predicative")
        if "person" in adjective.kinds and _chance(rng, 0.3):
            subject = NounPhrase("pronoun", pronoun=PRONOUNS[pronouns.pick(rng)])
        else:
            noun = _pick_balanced(rng, _nouns_for_adjective(adjective), "noun")
            subject = _no_bare_mass(_random_np_of(rng, noun, _SUBJECT_DETS, adjective_p=0.0))
        return Clause(subject, None, negated=negated, predicate=adjective)
    plural = _chance(rng, 0.3)
    predicate = _random_predicate_noun(rng, plural)
    for _ in range(4):  # keep the rarest adjective form of five tries (ein leerer Bus ...)
        other = _random_predicate_noun(rng, plural)
        if rng.rarer(_nominative_adjective(predicate), _nominative_adjective(other)):
            predicate = other
    if negated:
        predicate = predicate.with_det("kein" if predicate.det in ("indef", "none") else "def")
    subject = PRONOUNS["das_pl" if predicate.plural else "das_sg"]
    return Clause(NounPhrase("pronoun", pronoun=subject), None, negated=negated, predicate=predicate)


def _random_predicate_noun(rng: CorpusRandom, plural: bool) -> NounPhrase:
    """A noun phrase with an adjective for 'Das ist ein kleiner Hund.' / 'Das sind zwei kleine Hunde.'"""
    adjective = _pick_balanced(rng, _COUNTABLE_ADJECTIVES if plural else ADJECTIVES, "predicate noun")
    nouns = _nouns_for_adjective(adjective, _PREDICATE_GENDERS.pick(rng), plural)
    noun = _pick_balanced(rng, nouns, "noun")
    if plural:
        np = _random_np_of(rng, noun, _PLURAL_PREDICATE_DETS, plural_p=1.0, adjective_p=0.0)
    else:
        np = _random_np_of(rng, noun, _SINGULAR_PREDICATE_DETS, plural_p=0.0, adjective_p=0.0)
        if np.plural:  # "none" with a count noun would be a bare plural
            np = NounPhrase("indef", noun)
    return np._replace(adjective=adjective)


_COUNTABLE_ADJECTIVES = tuple(a for a in ADJECTIVES if _nouns_for_adjective(a, None, True))  # not "heiß"


def _nominative_adjective(np: NounPhrase) -> str:
    return np.adjective.stem + _adjective_endings(np.det)["nom"]["pl" if np.plural else np.noun.gender]


# For a fronted place phrase the kind of place is drawn first (balanced), then a verb that takes it.
_VERBS_BY_LOCATIVE = {name: tuple(v for v in VERBS if name in v.adjuncts) for name in sorted(_LOCATIVE_ADJUNCTS)}
_FRONTABLE_LOCATIVES = tuple(name for name, verbs in _VERBS_BY_LOCATIVE.items() if verbs)
# Present-tense yes/no questions put the full verb first ("Siehst du ...?"), capitalised; a small
# set of verbs keeps each capitalised form frequent. Other questions start with hat/ist/kann ...
_QUESTION_VERBS = tuple(v for v in VERBS if v.de_inf in {"sehen", "haben", "mögen", "spielen", "schlafen", "kommen",
                                                           "gehen", "wohnen", "essen", "trinken", "kaufen", "anrufen"})
TENSE_WEIGHTS = _Weights((("present", 55), ("perfect", 27), ("modal", 18)))
FRONTED_TENSE_WEIGHTS = _Weights((("present", 32), ("perfect", 50), ("modal", 18)))
QUESTION_TENSE_WEIGHTS = _Weights((("present", 50), ("perfect", 25), ("modal", 25)))
PRESENT_OR_MODAL = _Weights((("present", 75), ("modal", 25)))


def random_clause(rng: CorpusRandom, *, tenses: _Weights = TENSE_WEIGHTS, negation_p: float = 0.22,
                  copula_p: float = 0.1, need_locative: bool = False, question: bool = False,
                  verb_final: bool = False, fronted: bool = False) -> Clause:
    """Draw one clause.

    Args:
        rng: the generator's :class:`CorpusRandom`.
        tenses: weights of "present", "perfect" and "modal".
        negation_p: probability that the clause is negated.
        copula_p: probability of a clause with sein as the main verb.
        need_locative: the clause must have a place adjunct (for a fronted place phrase).
        question: the clause becomes a yes/no question (verb first).
        verb_final: the clause becomes a subordinate clause (verb last).
        fronted: the clause follows a fronted time or place phrase.
    """
    negated = _chance(rng, negation_p)
    pronouns = _QUESTION_PRONOUNS if question else _STATEMENT_PRONOUNS
    if not need_locative and _chance(rng, copula_p):
        return _random_copula_clause(rng, negated, _COPULA_SHAPES.pick(rng), pronouns)
    tense = tenses.pick(rng)
    place = _pick_balanced(rng, _FRONTABLE_LOCATIVES, "fronted") if need_locative else None
    if place is not None:
        verbs = _VERBS_BY_LOCATIVE[place]
    elif question and tense == "present":
        verbs = _QUESTION_VERBS
    else:
        verbs = VERBS
    # balanced separately per tense and position, so that every verb's participle, infinitive,
    # question form and English simple past (after a fronted phrase) is frequent
    position = "question" if question else "sub" if verb_final else "fronted" if fronted else "main"
    verb = _pick_balanced(rng, verbs, f"verb {tense} {position}")
    modal = _pick(rng, _MODAL_NAMES) if tense == "modal" else None
    if verb_final and verb.is_separable and tense == "present":
        pronouns = _THIRD_PERSON_PRONOUNS
    pronoun_p = 0.55 if question else 0.5
    subject = _random_subject(rng, verb.subj, pronouns, pronoun_p)
    if tense == "present":  # of three subjects keep the one whose verb form is rarest (du spielst, ihr seht ...)
        for _ in range(2):
            other = _random_subject(rng, verb.subj, pronouns, pronoun_p)
            if rng.rarer(_present_form(verb, subject, question, verb_final),
                         _present_form(verb, other, question, verb_final)):
                subject = other
    dat = _random_object(rng, verb.dat, subject, "dat", negated) if verb.dat else None
    acc = _random_object(rng, verb.acc, subject, "acc", negated) if verb.acc else None
    pobj = _random_np(rng, verb.pobj[2], _PP_DETS, adjective_p=0.25, case="acc") if verb.pobj is not None else None
    adjunct = None
    adjunct_p = 0.45 if verb.acc or verb.dat or verb.pobj else 0.8  # "Ich schlafe." only once
    if place is not None:
        adjunct = _random_adjunct(rng, place)
    elif verb.adjuncts and (verb.adjunct_required or _chance(rng, adjunct_p)):
        adjunct = _random_adjunct(rng, _pick(rng, verb.adjuncts))
    return Clause(subject, verb, tense, negated, modal, dat, acc, pobj, adjunct)


def _present_form(verb: Verb, subject: NounPhrase, question: bool, verb_final: bool) -> str:
    """The present-tense verb token a subject calls for (capitalised first word of a question)."""
    form = verb.de_forms[subject.de_person]
    if verb_final and verb.prefix:
        return verb.prefix + form
    return form.capitalize() if question else form


_MODAL_NAMES = tuple(_MODALS)
