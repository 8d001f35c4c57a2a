"""The word lists of the corpus: nouns, cities, adjectives, numbers, time phrases and pronouns
(written for this course), parsed into :class:`Noun`, :class:`Adjective` and :class:`Pronoun`.
"""

from __future__ import annotations

from dataclasses import dataclass

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
