"""Grammar rules that realise a clause: German word order (verb second, verb final, participle and
infinitive at the end, separable particles) and the English verb group (do-support, perfect, modals).
"""

from __future__ import annotations

from course_lib.corpus.clauses import Adjunct, Clause
from course_lib.corpus.noun_phrases import NounPhrase, english_np, german_np
from course_lib.corpus.verbs import _ADJUNCTS, _CONTRACTIONS, _HABEN, _MODALS, _SEIN, _TWO_WAY


def _german_pp(adjunct: Adjunct, tags: set[str]) -> list[str]:
    """German tokens of a prepositional phrase, with contractions (zu dem -> zum)."""
    prep, case, _, _ = _ADJUNCTS[adjunct.name]
    np = adjunct.np
    if case == "city":
        tags.add("city")
        return [prep, np.noun.de_sg]
    if prep in _TWO_WAY:
        tags.add("two_way_accusative" if case == "acc" else "two_way_dative")
    else:
        tags.add("accusative_preposition" if case == "acc" else "dative_preposition")
    tokens = german_np(np, case, tags)
    contracted = _CONTRACTIONS.get((prep, tokens[0])) if np.det == "def" and not np.plural else None
    if contracted:
        tags.add("contraction")
        return [contracted, *tokens[1:]]
    return [prep, *tokens]


def _english_pp(adjunct: Adjunct, tags: set[str]) -> list[str]:
    return _ADJUNCTS[adjunct.name][2].split() + english_np(adjunct.np, "obj", tags)


def _german_verb_forms(clause: Clause) -> tuple[str, list[str], list[str]]:
    """The finite verb, the words at the end of a main clause, and the verb-final cluster.

    Returns (finite, right_bracket, subordinate_cluster), e.g. for "anrufen" in the present:
    ("ruft", ["an"], ["anruft"]); in the perfect: ("hat", ["angerufen"], ["angerufen", "hat"]).
    """
    person = clause.subject.de_person
    verb = clause.verb
    if verb is None:
        finite = _SEIN[person]
        return finite, [], [finite]
    if clause.tense == "perfect":
        finite = (_SEIN if verb.aux == "sein" else _HABEN)[person]
        return finite, [verb.participle], [verb.participle, finite]
    if clause.tense == "modal":
        finite = _MODALS[clause.modal][person]
        return finite, [verb.de_inf], [verb.de_inf, finite]
    finite = verb.de_forms[person]
    if verb.prefix:
        return finite, [verb.prefix], [verb.prefix + finite]
    return finite, [], [finite]


def _german_predicate(clause: Clause, tags: set[str]) -> list[str]:
    """What follows sein: nicht, then an adjective, a place or a noun phrase."""
    tokens = ["nicht"] if clause.uses_nicht else []
    predicate = clause.predicate
    if isinstance(predicate, Adjunct):
        return tokens + _german_pp(predicate, tags)
    if isinstance(predicate, NounPhrase):
        tags.add("predicate_noun")
        return tokens + german_np(predicate, "nom", tags)
    tags.add("predicative_adjective")
    return [*tokens, predicate.de]


def _german_middle(clause: Clause, tags: set[str], pronouns: list[str] | None = None) -> list[str]:
    """Objects, nicht, prepositional object and adjunct, in German middle-field order.

    If a list is given as ``pronouns``, pronoun objects go there instead (they are then placed
    before a noun subject: "Heute gibt mir der Mann einen Apfel.").
    """
    if clause.verb is None:
        return _german_predicate(clause, tags)
    tokens: list[str] = []
    for np, case in ((clause.dat, "dat"), (clause.acc, "acc")):
        if np is not None:
            target = pronouns if pronouns is not None and np.det == "pronoun" else tokens
            target += german_np(np, case, tags)
    if clause.uses_nicht:
        tokens.append("nicht")
    if clause.pobj is not None:
        tokens += [clause.verb.pobj[0], *german_np(clause.pobj, "acc", tags)]
        tags.add("prepositional_object")
    if clause.adjunct is not None:
        tokens += _german_pp(clause.adjunct, tags)
    return tokens


def german_clause(clause: Clause, order: str, tags: set[str]) -> list[str]:
    """German tokens of a clause.

    Args:
        clause: the clause.
        order: "main" (subject, verb, ...), "inverted" (verb, subject, ...: after a fronted
            phrase, and in yes/no questions) or "sub" (subject ... verb at the end).
        tags: set collecting the phenomena used.
    """
    finite, right, cluster = _german_verb_forms(clause)
    subject = german_np(clause.subject, "nom", tags)
    _tag_clause(clause, order, tags)
    if order == "inverted":
        # unstressed pronoun objects come before a noun subject: "Heute sieht mich der Mann."
        pronouns: list[str] | None = [] if clause.subject.det != "pronoun" else None
        middle = _german_middle(clause, tags, pronouns)
        return [finite, *(pronouns or []), *subject, *middle, *right]
    middle = _german_middle(clause, tags)
    if order == "main":
        return [*subject, finite, *middle, *right]
    return subject + middle + cluster


def _tag_clause(clause: Clause, order: str, tags: set[str]) -> None:
    subject = clause.subject
    if subject.det == "pronoun" and subject.pronoun.de_nom != "das":
        tags.add("pronoun_subject")
    if (clause.dat is not None and clause.dat.det == "pronoun") or (clause.acc is not None and clause.acc.det == "pronoun"):
        tags.add("pronoun_object")
    if clause.negated:
        tags.add("negation_nicht" if clause.uses_nicht else "negation_kein")
    verb = clause.verb
    if verb is None:
        tags.add("copula")
        return
    if clause.tense == "perfect":
        tags.add("perfect")
        if verb.aux == "sein":
            tags.add("perfect_sein")
    elif clause.tense == "modal":
        tags.add("modal")
    if verb.is_separable:
        tags.add("separable_verb")
        if clause.tense == "present" and order != "sub":
            tags.add("separable_split")
    if verb.dat and verb.acc:
        tags.add("ditransitive")
    elif verb.dat:
        tags.add("dative_verb")


def _english_verb_group(clause: Clause, question: bool, past: bool) -> tuple[list[str], list[str]]:
    """English verb words before and after the subject.

    In statements everything comes after the subject; in questions the auxiliary comes first:
    "Does the man see ...", "Has the man seen ...", "Can the man see ...", "Is the dog ...".
    """
    person = clause.subject.en_person
    neg = clause.negated
    third = person == "3sg"
    do = "does" if third else "do"
    if clause.verb is None:
        be = "am" if person == "1sg" else "is" if third else "are"
        return ([be], []) if question else ([], [be, "not"] if neg else [be])
    base, s_form, simple_past, participle = clause.verb.en
    if clause.tense == "perfect" and past:
        return [], (["did", "not", base] if neg else [simple_past])
    if clause.tense == "perfect":
        have = "has" if third else "have"
        return ([have], [participle]) if question else ([], [have, "not", participle] if neg else [have, participle])
    if clause.tense == "modal":
        return _english_modal_group(clause.modal, base, third, neg, question)
    if question:
        return [do], [base]
    return [], ([do, "not", base] if neg else [s_form if third else base])


def _english_modal_group(modal: str, base: str, third: bool, neg: bool, question: bool
                         ) -> tuple[list[str], list[str]]:
    """kann -> can / can not; muss -> has to / does not have to; will -> wants to / does not want to.

    "can not" is written as two words because spaCy splits "cannot" into "can" + "not", so a model
    trained on spaCy tokens could never reproduce "cannot" after detokenizing.
    """
    if modal == "können":
        return (["can"], [base]) if question else ([], ["can", "not", base] if neg else ["can", base])
    do = "does" if third else "do"
    verb = "have" if modal == "müssen" else "want"
    if question:
        return [do], [verb, "to", base]
    if neg:
        return [], [do, "not", verb, "to", base]
    inflected = ("has" if third else "have") if modal == "müssen" else ("wants" if third else "want")
    return [], [inflected, "to", base]


def english_clause(clause: Clause, tags: set[str], question: bool = False, past: bool = False) -> list[str]:
    """English tokens of a clause (subject first, or the auxiliary first when ``question``).

    Args:
        clause: the clause.
        tags: set collecting the phenomena used.
        question: yes/no question word order with do-support.
        past: render a German perfect as the English simple past (after a fronted phrase).
    """
    before, after = _english_verb_group(clause, question, past)
    subject = english_np(clause.subject, "subj", tags)
    if clause.verb is None:
        predicate = clause.predicate
        if isinstance(predicate, Adjunct):
            rest = _english_pp(predicate, tags)
        elif isinstance(predicate, NounPhrase):
            rest = english_np(predicate, "pred", tags)
        else:
            rest = [predicate.en]
        return before + subject + after + rest
    verb = clause.verb
    if clause.tense == "perfect" and not past and not verb.en[3].endswith("ed"):
        tags.add("irregular_participle_en")
    objects: list[str] = []
    if clause.dat is not None:
        objects += english_np(clause.dat, "obj", tags)
    if clause.acc is not None:
        objects += english_np(clause.acc, "obj", tags)
    particle = verb.en_particle.split()
    if particle and verb.particle_moves and clause.acc is not None and clause.acc.det == "pronoun":
        objects, particle = objects + particle, []  # "picks me up", not "picks up me"
    rest = particle + objects
    if clause.pobj is not None:
        rest += [verb.pobj[1], *english_np(clause.pobj, "obj", tags)]
    if clause.adjunct is not None:
        rest += _english_pp(clause.adjunct, tags)
    return before + subject + after + rest
