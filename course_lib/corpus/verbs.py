"""Verbs and function words: the verb list with its frames, reporting verbs, conjunctions,
auxiliaries, modals, prepositional adjuncts, articles and adjective endings.
"""

from __future__ import annotations

from dataclasses import dataclass


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
