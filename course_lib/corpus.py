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

from __future__ import annotations

import os
import random
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import accumulate, islice
from pathlib import Path
from typing import NamedTuple

DEFAULT_SEED = 2017
N_TRAIN, N_VALID, N_TEST = 24_000, 1_000, 1_000
MAX_TOKENS = 30  # longest sentence (words + punctuation) on either side
SPLIT_NAMES = ("train", "valid", "test")

# What each tag means; the order here is the order of the data card's table.
PHENOMENA: dict[str, str] = {
    "accusative": "an accusative object noun phrase (den/einen/die/das ...)",
    "dative": "a dative noun phrase (dem/der/einem/einer/den ...-n)",
    "plural": "a plural noun phrase",
    "weak_noun": "a weak masculine noun in accusative/dative (den Jungen, dem Studenten)",
    "mass_noun": "a mass noun without an article (Milch, kaltes Wasser)",
    "irregular_plural_en": "an irregular English plural (men, children, mice, sheep ...)",
    "adjective_after_definite": "adjective with weak ending after der/die/das (der kleine Hund)",
    "adjective_after_indefinite": "adjective with mixed ending after ein/kein (ein kleiner Hund)",
    "adjective_strong": "adjective with strong ending, no article (kaltes Wasser, zwei kleine Hunde)",
    "predicative_adjective": "an undeclined adjective after sein (der Hund ist klein)",
    "predicate_noun": "a nominative noun phrase after sein (Das ist ein kleiner Hund.)",
    "number": "a number word with a plural noun (drei Hunde)",
    "a_an": "English 'an' before a vowel sound (an apple, an old man)",
    "pronoun_subject": "a personal pronoun as subject (ich, du, er, sie, es, wir, ihr)",
    "pronoun_object": "a personal pronoun as object (mich, dir, uns, euch ...)",
    "dative_preposition": "mit, bei, nach, von, zu or aus with the dative",
    "accusative_preposition": "für, ohne, durch or gegen with the accusative",
    "two_way_dative": "in/auf/unter/neben/hinter/vor/an + dative: where something is",
    "two_way_accusative": "in/auf + accusative: where something goes (ins Haus, auf den Tisch)",
    "contraction": "preposition + article contracted (im, ins, am, zum, zur, beim, vom)",
    "city": "a city name (nach Berlin, aus Wien)",
    "dative_verb": "a verb whose only object is dative (helfen, folgen)",
    "ditransitive": "a verb with dative and accusative objects (gibt dem Kind einen Apfel)",
    "prepositional_object": "a verb with a prepositional object (wartet auf den Bus)",
    "separable_verb": "a separable verb in any form (anrufen, ruft ... an, angerufen)",
    "separable_split": "a separable verb whose particle stands at the end of a main clause",
    "copula": "a sentence with sein as the main verb",
    "modal": "a modal verb with the infinitive at the end (kann ... sehen)",
    "perfect": "perfect tense with the participle at the end (hat ... gesehen)",
    "perfect_sein": "perfect tense with sein as the auxiliary (ist ... gegangen)",
    "irregular_participle_en": "an irregular English participle (seen, eaten, written, gone ...)",
    "simple_past_en": "German perfect after a fronted phrase, English simple past (saw)",
    "negation_nicht": "negation with nicht",
    "negation_kein": "negation with kein",
    "fronted_time": "a fronted time phrase and verb-second inversion (Heute sieht der Mann ...)",
    "fronted_place": "a fronted place phrase and verb-second inversion (Im Garten spielt ...)",
    "v2_inversion": "the finite verb before the subject after a fronted phrase or clause",
    "question": "a yes/no question with the verb first (Sieht der Mann den Hund?)",
    "subordinate_clause": "a subordinate clause with the verb at the end (..., weil ... sieht.)",
    "subordinate_first": "a subordinate clause before the main clause (Wenn ..., lacht ...)",
    "dass_clause": "a reported clause with dass (Ich weiß, dass ...)",
    "ob_clause": "an indirect question with ob (Sie fragt, ob ...)",
}


# ---------------------------------------------------------------------------------------
# Word lists (written for this course). Columns are separated by "|".
# ---------------------------------------------------------------------------------------

# gender | German singular | German plural ("-" = no plural used) | English singular | English plural | kinds
# | weak oblique singular (only for weak masculine nouns: den Jungen, dem Studenten)
_NOUN_TABLE = """
m | Mann        | Männer      | man           | men            | person
f | Frau        | Frauen      | woman         | women          | person
n | Kind        | Kinder      | child         | children       | person
m | Junge       | Jungen      | boy           | boys           | person | Jungen
m | Herr        | Herren      | gentleman     | gentlemen      | person | Herrn
n | Mädchen     | Mädchen     | girl          | girls          | person
m | Lehrer      | Lehrer      | teacher       | teachers       | person
f | Lehrerin    | Lehrerinnen | teacher       | teachers       | person
m | Arzt        | Ärzte       | doctor        | doctors        | person
m | Student     | Studenten   | student       | students       | person | Studenten
m | Freund      | Freunde     | friend        | friends        | person
m | Bruder      | Brüder      | brother       | brothers       | person
f | Schwester   | Schwestern  | sister        | sisters        | person
m | Vater       | Väter       | father        | fathers        | person
f | Mutter      | Mütter      | mother        | mothers        | person
f | Verkäuferin | Verkäuferinnen | saleswoman | saleswomen     | person
n | Baby        | Babys       | baby          | babies         | baby
m | Hund        | Hunde       | dog           | dogs           | animal
f | Katze       | Katzen      | cat           | cats           | animal
n | Pferd       | Pferde      | horse         | horses         | animal
m | Vogel       | Vögel       | bird          | birds          | animal bird
f | Maus        | Mäuse       | mouse         | mice           | animal
n | Schaf       | Schafe      | sheep         | sheep          | animal
f | Gans        | Gänse       | goose         | geese          | animal bird
m | Wolf        | Wölfe       | wolf          | wolves         | animal
m | Fisch       | Fische      | fish          | fish           | fish food piece dish
m | Apfel       | Äpfel       | apple         | apples         | food piece throwable
n | Ei          | Eier        | egg           | eggs           | food piece dish
f | Wurst       | Würste      | sausage       | sausages       | food piece dish
f | Tomate      | Tomaten     | tomato        | tomatoes       | food piece
f | Kartoffel   | Kartoffeln  | potato        | potatoes       | food piece dish
f | Milch       | -           | milk          | -              | drink mass hot_drink
n | Wasser      | -           | water         | -              | drink mass
m | Kaffee      | -           | coffee        | -              | drink mass hot_drink
m | Tee         | -           | tea           | -              | drink mass hot_drink
n | Brot        | -           | bread         | -              | food mass
f | Suppe       | -           | soup          | -              | food mass dish hot_drink
n | Buch        | Bücher      | book          | books          | thing readable openable
m | Brief       | Briefe      | letter        | letters        | thing readable
m | Ball        | Bälle       | ball          | balls          | thing throwable
f | Tasche      | Taschen     | bag           | bags           | thing container openable
f | Blume       | Blumen      | flower        | flowers        | thing
n | Geschenk    | Geschenke   | present       | presents       | thing openable
n | Bild        | Bilder      | picture       | pictures       | thing
f | Zeitung     | Zeitungen   | newspaper     | newspapers     | thing readable
f | Uhr         | Uhren       | watch         | watches        | thing
f | Flasche     | Flaschen    | bottle        | bottles        | thing container openable
n | Fahrrad     | Fahrräder   | bicycle       | bicycles       | thing
n | Lied        | Lieder      | song          | songs          | song
m | Tisch       | Tische      | table         | tables         | furniture surface
m | Stuhl       | Stühle      | chair         | chairs         | furniture surface
n | Bett        | Betten      | bed           | beds           | furniture surface
f | Tür         | Türen       | door          | doors          | door openable
m | Baum        | Bäume       | tree          | trees          | tree
m | Bus         | Busse       | bus           | buses          | vehicle
m | Zug         | Züge        | train         | trains         | vehicle
n | Auto        | Autos       | car           | cars           | vehicle
m | Garten      | -           | garden        | -              | outdoor
m | Park        | -           | park          | -              | outdoor
m | Wald        | -           | forest        | -              | outdoor
f | Stadt       | -           | city          | -              | outdoor
n | Haus        | -           | house         | -              | building
f | Küche       | -           | kitchen       | -              | room
n | Zimmer      | -           | room          | -              | room
n | Museum      | -           | museum        | -              | building
f | Schule      | -           | school        | -              | building
n | Büro        | -           | office        | -              | building
f | Bäckerei    | -           | bakery        | -              | building shop
m | Supermarkt  | -           | supermarket   | -              | building shop
m | Markt       | -           | market        | -              | market
m | Bahnhof     | -           | station       | -              | station
m | See         | -           | lake          | -              | water
m | Fluss       | -           | river         | -              | water
n | Spiel       | -           | game          | -              | event party show
m | Film        | -           | movie         | -              | event show
n | Konzert     | -           | concert       | -              | event party show
f | Party       | -           | party         | -              | event party
f | Prüfung     | -           | test          | -              | event
"""

# German | English
_CITY_TABLE = """
Berlin  | Berlin
München | Munich
Köln    | Cologne
Wien    | Vienna
Paris   | Paris
London  | London
"""

# German | English | noun kinds it describes | attributive stem if it differs (teuer -> teure)
_ADJECTIVE_TABLE = """
klein       | small       | person baby animal fish thing furniture tree vehicle building room piece
groß        | big         | person animal fish thing furniture tree vehicle building room piece
alt         | old         | person animal thing furniture tree vehicle building room door
jung        | young       | person animal
neu         | new         | thing furniture vehicle building room door
schön       | beautiful   | person baby animal thing building room outdoor event tree song
rot         | red         | thing vehicle door
blau        | blue        | thing vehicle door
grün        | green       | thing vehicle door tree
schwarz     | black       | thing vehicle animal door
braun       | brown       | thing animal furniture
teuer       | expensive   | thing vehicle furniture | teur
frisch      | fresh       | food drink fish
kalt        | cold        | drink dish room
warm        | warm        | hot_drink dish room
heiß        | hot         | hot_drink
müde        | tired       | person baby animal | müd
hungrig     | hungry      | person baby animal fish
glücklich   | happy       | person baby
traurig     | sad         | person
freundlich  | friendly    | person animal
lustig      | funny       | person event song
klug        | clever      | person animal
krank       | sick        | person baby animal
schnell     | fast        | animal vehicle
langsam     | slow        | animal vehicle
laut        | loud        | person baby animal vehicle party song
leer        | empty       | container building room vehicle
lang        | long        | readable event song
"""

_NUMBERS = (("zwei", "two"), ("drei", "three"), ("vier", "four"), ("fünf", "five"), ("sechs", "six"),
            ("zehn", "ten"))

# German time phrase | English | tenses it goes with ("present": present/modal/copula)
_TIME_TABLE = """
heute          | today                      | present past
jetzt          | now                        | present
jeden Tag      | every day                  | present
morgens        | in the morning             | present
abends         | in the evening             | present
manchmal       | sometimes                  | present
im Sommer      | in summer                  | present
im Winter      | in winter                  | present
am Montag      | on Monday                  | present past
am Dienstag    | on Tuesday                 | present past
am Mittwoch    | on Wednesday               | present past
am Donnerstag  | on Thursday                | present past
am Freitag     | on Friday                  | present past
am Samstag     | on Saturday                | present past
am Sonntag     | on Sunday                  | present past
am Wochenende  | on the weekend             | present past
gestern        | yesterday                  | past
letzte Woche   | last week                  | past
letztes Jahr   | last year                  | past
"""


@dataclass(frozen=True)
class Noun:
    """One noun: German forms, English forms and the kinds of thing it names.

    ``kinds`` are semantic classes ("person", "food", "building" ...) that verbs,
    prepositions and adjectives select, so the sentences make sense.
    """

    gender: str  # "m", "f" or "n"
    de_sg: str
    de_pl: str | None  # None: used in the singular only (places, events, mass nouns)
    en_sg: str
    en_pl: str | None
    kinds: frozenset[str]
    de_weak: str | None = None  # accusative/dative singular of weak masculine nouns
    is_city: bool = False

    @property
    def is_mass(self) -> bool:
        return "mass" in self.kinds

    @property
    def de_dat_pl(self) -> str:
        """Dative plural: add -n unless the plural already ends in -n or -s (den Kindern, den Autos)."""
        assert self.de_pl is not None
        return self.de_pl if self.de_pl.endswith(("n", "s")) else self.de_pl + "n"


@dataclass(frozen=True)
class Adjective:
    de: str  # predicative form (klein)
    en: str
    kinds: frozenset[str]
    stem: str  # attributive stem, usually the same (teuer -> teur-e, müde -> müd-e)


@dataclass(frozen=True)
class Pronoun:
    de_nom: str
    de_acc: str | None  # None: not used as an object (er/sie/es would be ambiguous in English)
    de_dat: str | None
    en_nom: str
    en_obj: str | None
    person: int  # index into the six German verb forms: ich du er wir ihr sie(pl)
    group: str  # "1", "2" or "3": an object pronoun never shares the subject's group (no "I see us")


def _rows(table: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("|")] for line in table.strip().splitlines()]


def _parse_nouns() -> tuple[Noun, ...]:
    nouns = []
    for row in _rows(_NOUN_TABLE):
        gender, sg, pl, en_sg, en_pl, kinds = row[:6]
        weak = row[6] if len(row) > 6 else None
        nouns.append(Noun(gender, sg, None if pl == "-" else pl, en_sg, None if en_pl == "-" else en_pl,
                          frozenset(kinds.split()), weak))
    return tuple(nouns)


NOUNS: tuple[Noun, ...] = _parse_nouns()
CITIES: tuple[Noun, ...] = tuple(Noun("n", de, None, en, None, frozenset({"city"}), is_city=True)
                                 for de, en in _rows(_CITY_TABLE))
ADJECTIVES: tuple[Adjective, ...] = tuple(
    Adjective(row[0], row[1], frozenset(row[2].split()), row[3] if len(row) > 3 else row[0])
    for row in _rows(_ADJECTIVE_TABLE))
TIME_PHRASES: tuple[tuple[str, str, tuple[str, ...]], ...] = tuple(
    (row[0], row[1], tuple(row[2].split())) for row in _rows(_TIME_TABLE))

PRONOUNS: dict[str, Pronoun] = {
    "ich": Pronoun("ich", "mich", "mir", "I", "me", 0, "1"),
    "du": Pronoun("du", "dich", "dir", "you", "you", 1, "2"),
    "er": Pronoun("er", None, None, "he", None, 2, "3"),
    "sie_sg": Pronoun("sie", None, None, "she", None, 2, "3"),
    "es": Pronoun("es", None, None, "it", None, 2, "3"),
    "wir": Pronoun("wir", "uns", "uns", "we", "us", 3, "1"),
    "ihr": Pronoun("ihr", "euch", "euch", "you", "you", 4, "2"),
    "sie_pl": Pronoun("sie", None, None, "they", None, 5, "3"),
    # the demonstrative of "Das ist ein Hund." / "Das sind zwei Hunde."
    "das_sg": Pronoun("das", None, None, "that", None, 2, "3"),
    "das_pl": Pronoun("das", None, None, "those", None, 5, "3"),
}
_OBJECT_PRONOUNS = ("ich", "du", "wir", "ihr")


@dataclass(frozen=True)
class Verb:
    """One verb with its German and English forms and the frame it is used in.

    Args (fields):
        de_inf: infinitive including a separable prefix ("anrufen").
        de_forms: present forms ich, du, er, wir, ihr, sie(pl) of the verb without its prefix.
        prefix: separable prefix ("an") or "".
        participle: past participle ("angerufen").
        aux: "haben" or "sein" for the perfect.
        en: English base, 3rd person singular, simple past, past participle.
        en_particle: word after the English verb ("look *for*", "pick *up*", "watch *TV*").
        particle_moves: English particle goes after a pronoun object ("picks me up").
        subj/acc/dat: noun kinds allowed as subject / accusative / dative object.
        pobj: (German preposition, English preposition, kinds) of a prepositional object.
        adjuncts: names of the prepositional phrases (see ``_ADJUNCTS``) the verb takes.
        adjunct_required: the verb always takes one of its adjuncts (wohnen in ...).
    """

    de_inf: str
    de_forms: tuple[str, str, str, str, str, str]
    prefix: str
    participle: str
    aux: str
    en: tuple[str, str, str, str]
    en_particle: str = ""
    particle_moves: bool = False
    subj: frozenset[str] = frozenset()
    acc: frozenset[str] = frozenset()
    dat: frozenset[str] = frozenset()
    pobj: tuple[str, str, frozenset[str]] | None = None
    adjuncts: tuple[str, ...] = ()
    adjunct_required: bool = False

    @property
    def is_separable(self) -> bool:
        return bool(self.prefix)


def _present_forms(inf: str, ich: str | None, du: str | None, er: str | None) -> tuple[str, ...]:
    """German present tense ich, du, er, wir, ihr, sie(pl) from the infinitive and irregular forms."""
    stem = inf[:-2] if inf.endswith("en") else inf[:-1]
    needs_e = stem.endswith(("t", "d"))  # du arbeitest, er findet, ihr wartet
    s_sound = stem.endswith(("s", "ß", "z", "x"))  # du reist, du tanzt
    reg_du = stem + ("est" if needs_e else "t" if s_sound else "st")
    reg_er = stem + ("et" if needs_e else "t")
    return (ich or stem + "e", du or reg_du, er or reg_er, inf, reg_er, inf)


def _kinds(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _verb(de_inf: str, en: str, participle: str, *, prefix: str = "", ich: str | None = None, du: str | None = None,
          er: str | None = None, aux: str = "haben", subj: str = "person", acc: str = "", dat: str = "",
          pobj: tuple[str, str, str] | None = None, adjuncts: str = "", **options) -> Verb:
    """Build a :class:`Verb` from compact text arguments (kinds and adjuncts are space-separated)."""
    base = de_inf[len(prefix):]
    en_forms = tuple(en.split())
    assert len(en_forms) == 4, en
    return Verb(de_inf, _present_forms(base, ich, du, er), prefix, participle, aux, en_forms,
                subj=_kinds(subj), acc=_kinds(acc), dat=_kinds(dat),
                pobj=None if pobj is None else (pobj[0], pobj[1], _kinds(pobj[2])),
                adjuncts=tuple(adjuncts.split()), **options)


_SEEABLE = "person baby animal fish food thing furniture tree vehicle"
_ANIMATE = "person baby animal"

VERBS: tuple[Verb, ...] = (
    # transitive verbs (accusative object)
    _verb("sehen", "see sees saw seen", "gesehen", du="siehst", er="sieht", subj="person animal",
          acc=_SEEABLE + " show", adjuncts="in behind in_front"),
    _verb("essen", "eat eats ate eaten", "gegessen", du="isst", er="isst", subj=_ANIMATE, acc="food",
          adjuncts="in with"),
    _verb("trinken", "drink drinks drank drunk", "getrunken", subj=_ANIMATE, acc="drink", adjuncts="in with"),
    _verb("kaufen", "buy buys bought bought", "gekauft", acc="food drink thing furniture animal",
          adjuncts="for in_shop at_market"),
    _verb("lesen", "read reads read read", "gelesen", du="liest", er="liest", acc="readable",
          adjuncts="in on after"),
    _verb("schreiben", "write writes wrote written", "geschrieben", acc="readable song", adjuncts="for in"),
    _verb("finden", "find finds found found", "gefunden", subj="person animal", acc="thing food animal baby",
          adjuncts="in under behind next_to"),
    _verb("suchen", "look looks looked looked", "gesucht", en_particle="for", subj="person animal",
          acc="thing animal person baby", adjuncts="in"),
    _verb("nehmen", "take takes took taken", "genommen", du="nimmst", er="nimmt", acc="thing food drink",
          adjuncts="out_of_container"),
    _verb("mögen", "like likes liked liked", "gemocht", ich="mag", du="magst", er="mag", subj="person animal",
          acc=_SEEABLE + " drink event song city"),
    _verb("besuchen", "visit visits visited visited", "besucht", acc="person building city", adjuncts="with after"),
    _verb("treffen", "meet meets met met", "getroffen", du="triffst", er="trifft", acc="person",
          adjuncts="in in_front at_station after"),
    _verb("vergessen", "forget forgets forgot forgotten", "vergessen", du="vergisst", er="vergisst",
          acc="thing event", adjuncts="in"),
    _verb("werfen", "throw throws threw thrown", "geworfen", du="wirfst", er="wirft", acc="throwable",
          adjuncts="against into into_water"),
    _verb("legen", "put puts put put", "gelegt", acc="thing piece", adjuncts="onto into_container",
          adjunct_required=True),
    # intransitive verbs
    _verb("schlafen", "sleep sleeps slept slept", "geschlafen", du="schläfst", er="schläft", subj=_ANIMATE,
          adjuncts="in on under"),
    _verb("spielen", "play plays played played", "gespielt", subj=_ANIMATE, adjuncts="in with behind"),
    _verb("arbeiten", "work works worked worked", "gearbeitet", adjuncts="in in_city with for"),
    _verb("warten", "wait waits waited waited", "gewartet", subj="person animal",
          pobj=("auf", "for", "person vehicle")),
    _verb("singen", "sing sings sang sung", "gesungen", subj="person bird", adjuncts="in for with"),
    _verb("schwimmen", "swim swims swam swum", "geschwommen", aux="sein", subj="person animal fish",
          adjuncts="in_water through_water", adjunct_required=True),
    _verb("laufen", "run runs ran run", "gelaufen", du="läufst", er="läuft", aux="sein", subj="person animal",
          adjuncts="through into to"),
    _verb("gehen", "go goes went gone", "gegangen", aux="sein", subj="person animal",
          adjuncts="to into with without"),
    _verb("kommen", "come comes came come", "gekommen", aux="sein", subj="person animal",
          adjuncts="out_of from_city with"),
    _verb("fahren", "drive drives drove driven", "gefahren", du="fährst", er="fährt", aux="sein",
          adjuncts="to_city to through with", adjunct_required=True),
    _verb("fliegen", "fly flies flew flown", "geflogen", aux="sein", subj="person bird",
          adjuncts="to_city", adjunct_required=True),
    _verb("wohnen", "live lives lived lived", "gewohnt", subj="person animal",
          adjuncts="in in_city at_home_of", adjunct_required=True),
    # verbs with a dative object only
    _verb("helfen", "help helps helped helped", "geholfen", du="hilfst", er="hilft", dat="person baby animal"),
    _verb("folgen", "follow follows followed followed", "gefolgt", aux="sein", subj="person animal",
          dat="person animal", adjuncts="through"),
    # verbs with a dative and an accusative object
    _verb("geben", "give gives gave given", "gegeben", du="gibst", er="gibt", dat="person baby animal",
          acc="food drink thing"),
    _verb("zeigen", "show shows showed shown", "gezeigt", dat="person", acc="thing animal tree furniture"),
    _verb("bringen", "bring brings brought brought", "gebracht", subj="person animal", dat="person",
          acc="food drink thing"),
    # separable verbs
    _verb("anrufen", "call calls called called", "angerufen", prefix="an", acc="person"),
    _verb("einladen", "invite invites invited invited", "eingeladen", prefix="ein", du="lädst", er="lädt",
          acc="person", adjuncts="to_event"),
    _verb("abholen", "pick picks picked picked", "abgeholt", prefix="ab", en_particle="up", particle_moves=True,
          acc="person baby thing", adjuncts="from_place"),
    _verb("aufmachen", "open opens opened opened", "aufgemacht", prefix="auf", acc="openable"),
    _verb("ansehen", "look looks looked looked", "angesehen", prefix="an", du="siehst", er="sieht",
          en_particle="at", subj="person animal", acc=_SEEABLE),
    _verb("einkaufen", "shop shops shopped shopped", "eingekauft", prefix="ein", adjuncts="in_shop at_market with"),
    _verb("ankommen", "arrive arrives arrived arrived", "angekommen", prefix="an", aux="sein",
          subj="person vehicle", adjuncts="at_station in_city"),
    _verb("fernsehen", "watch watches watched watched", "ferngesehen", prefix="fern", du="siehst", er="sieht",
          en_particle="TV", adjuncts="in with"),
)

# Verbs that introduce a reported clause: German, English forms (base, 3sg), conjunction.
_MATRIX_VERBS = (
    (_verb("sagen", "say says said said", "gesagt"), "dass"),
    (_verb("glauben", "believe believes believed believed", "geglaubt"), "dass"),
    (_verb("wissen", "know knows knew known", "gewusst", ich="weiß", du="weißt", er="weiß"), "dass"),
    (_verb("hoffen", "hope hopes hoped hoped", "gehofft"), "dass"),
    (_verb("fragen", "ask asks asked asked", "gefragt"), "ob"),
)
_CONJUNCTIONS = {"weil": "because", "wenn": "when", "obwohl": "although", "dass": "that", "ob": "whether"}

_SEIN = ("bin", "bist", "ist", "sind", "seid", "sind")
_HABEN = ("habe", "hast", "hat", "haben", "habt", "haben")
# German present forms, English rendering (positive, negative and question patterns are built below).
_MODALS = {
    "können": ("kann", "kannst", "kann", "können", "könnt", "können"),
    "müssen": ("muss", "musst", "muss", "müssen", "müsst", "müssen"),
    "wollen": ("will", "willst", "will", "wollen", "wollt", "wollen"),
}

# Prepositional adjuncts: German preposition, case ("dat", "acc" or "city"), English, noun kinds.
_ADJUNCTS: dict[str, tuple[str, str, str, str]] = {
    "in": ("in", "dat", "in", "building room outdoor"),
    "in_water": ("in", "dat", "in", "water"),
    "in_shop": ("in", "dat", "in", "shop"),
    "at_market": ("auf", "dat", "at", "market"),
    "on": ("auf", "dat", "on", "surface"),
    "under": ("unter", "dat", "under", "surface tree"),
    "next_to": ("neben", "dat", "next to", "building surface tree"),
    "behind": ("hinter", "dat", "behind", "building tree"),
    "in_front": ("vor", "dat", "in front of", "building tree station door"),
    "at_station": ("an", "dat", "at", "station"),
    "into": ("in", "acc", "into", "building room outdoor"),
    "into_container": ("in", "acc", "into", "container"),
    "into_water": ("in", "acc", "into", "water"),
    "onto": ("auf", "acc", "on", "surface"),
    "to": ("zu", "dat", "to", "building station market person"),
    "to_event": ("zu", "dat", "to", "party"),
    "out_of": ("aus", "dat", "out of", "building room"),
    "out_of_container": ("aus", "dat", "out of", "container"),
    "with": ("mit", "dat", "with", "person animal"),
    "at_home_of": ("bei", "dat", "with", "person"),
    "from_place": ("von", "dat", "from", "station building"),
    "after": ("nach", "dat", "after", "event"),
    "for": ("für", "acc", "for", "person baby"),
    "without": ("ohne", "acc", "without", "person animal"),
    "through": ("durch", "acc", "through", "outdoor"),
    "through_water": ("durch", "acc", "through", "water"),
    "against": ("gegen", "acc", "against", "door tree"),
    "to_city": ("nach", "city", "to", "city"),
    "from_city": ("aus", "city", "from", "city"),
    "in_city": ("in", "city", "in", "city"),
}
_LOCATIVE_ADJUNCTS = frozenset({"in", "in_water", "in_shop", "at_market", "on", "under", "next_to", "behind",
                                "in_front", "at_station", "in_city"})
_TWO_WAY = frozenset({"in", "auf", "unter", "neben", "hinter", "vor", "an"})
_CONTRACTIONS = {("zu", "dem"): "zum", ("zu", "der"): "zur", ("bei", "dem"): "beim", ("von", "dem"): "vom",
                 ("in", "dem"): "im", ("in", "das"): "ins", ("an", "dem"): "am"}

_DEFINITE = {"nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
             "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
             "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "den"}}
_INDEFINITE = {"nom": {"m": "ein", "f": "eine", "n": "ein", "pl": "eine"},  # plural only after k-: keine
               "acc": {"m": "einen", "f": "eine", "n": "ein", "pl": "eine"},
               "dat": {"m": "einem", "f": "einer", "n": "einem", "pl": "einen"}}
_WEAK_ENDINGS = {"nom": {"m": "e", "f": "e", "n": "e", "pl": "en"},
                 "acc": {"m": "en", "f": "e", "n": "e", "pl": "en"},
                 "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"}}
_MIXED_ENDINGS = {"nom": {"m": "er", "f": "e", "n": "es", "pl": "en"},
                  "acc": {"m": "en", "f": "e", "n": "es", "pl": "en"},
                  "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"}}
_STRONG_ENDINGS = {"nom": {"m": "er", "f": "e", "n": "es", "pl": "e"},
                   "acc": {"m": "en", "f": "e", "n": "es", "pl": "e"},
                   "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"}}

_AN_EXCEPTIONS = frozenset({"one", "once", "university", "uniform", "useful", "user", "european"})
_AN_SILENT_H = frozenset({"hour", "honest", "honor"})


def english_indefinite_article(next_word: str) -> str:
    """'a' or 'an' for the word that follows ('an apple', 'an old man', 'a university')."""
    word = next_word.lower()
    if word in _AN_EXCEPTIONS:
        return "a"
    return "an" if word[:1] in "aeiou" or word in _AN_SILENT_H else "a"


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


if __name__ == "__main__":
    from course_lib.data import main

    raise SystemExit(main())
