"""Corpus sizes, the default seed and the tags every pair can carry (``PHENOMENA``)."""

from __future__ import annotations

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
