"""The course's German→English toy corpus: a small, seeded grammar that writes sentence pairs.

Every German sentence is built from a clause description (subject, verb, objects, tense,
negation, word order) and the same description is then realised in German and in English.
The word lists and the grammar were written for this course. Because the English side is a
function of the German sentence alone (no random choice is made after the German is fixed),
a model can in principle translate every held-out sentence perfectly.

What the grammar exercises (each pair carries tags naming these, see ``PHENOMENA``):

* gender, articles and the three cases: der/die/das, ein/eine, den/dem/einem/einer, dative
  plural -n (den Kindern), weak masculine nouns (den Jungen), mass nouns without article;
* adjective declension after definite articles, indefinite articles and with no article
  (der kleine Hund, ein kleiner Hund, kaltes Wasser), predicative adjectives (ist klein);
* verb agreement for ich/du/er/sie/es/wir/ihr/sie and nouns, with stem-changing verbs;
* prepositions with dative (mit, bei, nach, von, zu, aus), accusative (für, ohne, durch,
  gegen) and two-way prepositions (in/auf/unter/neben/hinter/vor), with the usual
  contractions (im, ins, am, zum, zur, beim, vom);
* verb-second inversion after a fronted time or place phrase (Heute sieht der Mann ...);
* perfect tense with haben or sein and the participle at the end; modal verbs
  (können, müssen, wollen) with the infinitive at the end;
* subordinate clauses with weil/wenn/obwohl/dass/ob and the verb at the end, also in
  front of the main clause (Wenn ..., lacht das Kind.);
* negation with nicht and kein; yes/no questions; separable verbs; numbers; object pronouns.

English conventions (one rendering per German construction, American spelling):
present simple ("sees"); do-support in negation and questions; German perfect → English
present perfect ("has seen"), except after a fronted time or place phrase, where it becomes
the simple past ("Yesterday the man saw the dog."); "kein" → "does not ... a/any";
"muss" → "has to"; "will" → "wants to"; "kann nicht" → "can not" (two words: spaCy splits
"cannot", so only "can not" survives tokenizing and detokenizing); "du" and "ihr" → "you";
"sie" is "she" or "they" according to the verb form; the formal "Sie" is never generated.

Modules (each imported here, so ``from course_lib.corpus import X`` works for every public name)::

    settings       sizes, seed, split names and the tags (PHENOMENA)
    lexicon        nouns, cities, adjectives, numbers, time phrases, pronouns (word lists)
    verbs          verbs and function words: frames, auxiliaries, modals, prepositions, articles, endings
    choices        CorpusRandom and the weighted / balanced random picks
    noun_phrases   grammar rules for noun phrases (German case and endings, English a/an and plurals)
    clauses        grammar rules choosing a clause (random_clause, adjuncts, copula clauses)
    realise        grammar rules writing a clause in German (word order) and in English (verb group)
    sentences      sentence shapes, generation, splits, tag look-ups and the TSV files

The corpus package imports nothing else from course_lib (``course_lib.data`` imports it, never the
other way round).

Public API::

    generate_tagged(n, seed)        -> list[TaggedPair]   # n pairs with unique German sides
    generate_pairs(n, seed)         -> list[tuple[str, str]]
    make_tagged_splits(seed, ...)   -> {"train"|"valid"|"test": list[TaggedPair]}
    make_splits(seed, ...)          -> {"train"|"valid"|"test": list[tuple[str, str]]}
    default_tagged_splits(seed)     -> the default-size splits, generated once and cached
    examples_with(tag, n, split)    -> list[TaggedPair]   # e.g. "subordinate_clause", "perfect"
    tags_by_german(seed)            -> {german sentence: tags}   # for error analysis
    phenomenon_counts(tagged)       -> {tag: number of pairs}
    write_splits(directory, ...)    -> {split: path of train.tsv / valid.tsv / test.tsv}

Determinism: the generator draws only from its own ``random.Random(seed)`` subclass and only
through ``Random.random()`` (whose Mersenne Twister stream is fixed across Python versions);
all lists are in a fixed order and no set or dict is iterated to make a choice, so the output
is byte-identical across runs and Python >= 3.10. "Balanced" picks (the less used of two
candidates) keep every word and inflected form frequent in training (each >= 20 times).
Regenerate the committed files with ``python -m course_lib.data --write data/toy_de_en``;
the data card is ``data/README.md``.

Checked in ``tests/test_corpus.py``: the committed files equal a fresh regeneration byte for
byte; the acceptance numbers (sizes, held-out splits, word types, lengths, word frequencies,
phenomenon counts); German grammar spot checks (ein + gender, adjective endings, case after
prepositions, contractions, participle and verb positions) and English ones (a/an, irregular
plurals, she/they, do-support); and that two seeds never translate one German sentence in two
ways.
"""

from course_lib.corpus.choices import (
    CorpusRandom,
)
from course_lib.corpus.clauses import (
    FRONTED_TENSE_WEIGHTS,
    PRESENT_OR_MODAL,
    QUESTION_TENSE_WEIGHTS,
    TENSE_WEIGHTS,
    Adjunct,
    Clause,
    random_clause,
)
from course_lib.corpus.lexicon import (
    ADJECTIVES,
    CITIES,
    NOUNS,
    PRONOUNS,
    TIME_PHRASES,
    Adjective,
    Noun,
    Pronoun,
)
from course_lib.corpus.noun_phrases import (
    NounPhrase,
    english_np,
    german_np,
)
from course_lib.corpus.realise import (
    english_clause,
    german_clause,
)
from course_lib.corpus.sentences import (
    TaggedPair,
    default_tagged_splits,
    examples_with,
    format_tsv,
    generate_pairs,
    generate_tagged,
    make_splits,
    make_tagged_splits,
    phenomenon_counts,
    random_pair,
    tags_by_german,
    write_splits,
)
from course_lib.corpus.settings import (
    DEFAULT_SEED,
    MAX_TOKENS,
    N_TEST,
    N_TRAIN,
    N_VALID,
    PHENOMENA,
    SPLIT_NAMES,
)
from course_lib.corpus.verbs import (
    VERBS,
    Verb,
    english_indefinite_article,
)

__all__ = [
    "ADJECTIVES",
    "CITIES",
    "DEFAULT_SEED",
    "FRONTED_TENSE_WEIGHTS",
    "MAX_TOKENS",
    "NOUNS",
    "N_TEST",
    "N_TRAIN",
    "N_VALID",
    "PHENOMENA",
    "PRESENT_OR_MODAL",
    "PRONOUNS",
    "QUESTION_TENSE_WEIGHTS",
    "SPLIT_NAMES",
    "TENSE_WEIGHTS",
    "TIME_PHRASES",
    "VERBS",
    "Adjective",
    "Adjunct",
    "Clause",
    "CorpusRandom",
    "Noun",
    "NounPhrase",
    "Pronoun",
    "TaggedPair",
    "Verb",
    "default_tagged_splits",
    "english_clause",
    "english_indefinite_article",
    "english_np",
    "examples_with",
    "format_tsv",
    "generate_pairs",
    "generate_tagged",
    "german_clause",
    "german_np",
    "make_splits",
    "make_tagged_splits",
    "phenomenon_counts",
    "random_clause",
    "random_pair",
    "tags_by_german",
    "write_splits",
]
