"""Tests of the toy German→English corpus (course_lib.corpus) and of the committed data files.

The acceptance numbers of the data card are asserted here, and spot checks of German and English
grammar that fail if the generator makes a mistake.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from course_lib import corpus
from course_lib.data import default_tokenizers, read_tsv
from course_lib.tokenization import detokenize

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "toy_de_en"

# Word classes read from the generator's own tables, for the spot checks.
GENDER = {noun.de_sg: noun.gender for noun in corpus.NOUNS}
PLURALS = {noun.de_pl for noun in corpus.NOUNS if noun.de_pl} | {noun.de_dat_pl for noun in corpus.NOUNS if noun.de_pl}
ADJECTIVE_STEMS = {a.stem for a in corpus.ADJECTIVES}
PARTICIPLES = {verb.participle for verb in corpus.VERBS}
FINITE_FORMS = (
    {form for verb in corpus.VERBS for form in verb.de_forms}
    | {verb.prefix + form for verb in corpus.VERBS if verb.prefix for form in verb.de_forms}
    | {form for verb, _ in corpus.verbs._MATRIX_VERBS for form in verb.de_forms}
    | set(corpus.verbs._SEIN) | set(corpus.verbs._HABEN) | {form for forms in corpus.verbs._MODALS.values() for form in forms}
)


def words(sentence: str) -> list[str]:
    """The words of a generated sentence (punctuation dropped)."""
    return sentence[:-1].replace(",", "").split()


@pytest.fixture(scope="module")
def tagged():
    return corpus.default_tagged_splits()


@pytest.fixture(scope="module")
def train(tagged):
    return tagged["train"]


@pytest.fixture(scope="module")
def tokens(tagged):
    """spaCy tokens of every split: {split: (german token lists, english token lists)}."""
    de_tok, en_tok = default_tokenizers()
    return {name: (de_tok.tokenize_many(t.german for t in items), en_tok.tokenize_many(t.english for t in items))
            for name, items in tagged.items()}


# --- the committed files -------------------------------------------------------------------

def test_committed_files_are_regenerated_byte_for_byte(tagged):
    for name, items in tagged.items():
        committed = DATA_DIR / f"{name}.tsv"
        assert committed.is_file(), f"{committed} is missing: run python -m course_lib.data --write data/toy_de_en"
        regenerated = corpus.format_tsv(t.pair for t in items).encode("utf-8")
        assert regenerated == committed.read_bytes(), f"{committed} differs from the generator's output"


def test_write_splits(tmp_path):
    written = corpus.write_splits(tmp_path, seed=3, n_train=40, n_valid=5, n_test=5)
    assert sorted(written) == ["test", "train", "valid"]
    expected = corpus.make_splits(seed=3, n_train=40, n_valid=5, n_test=5)
    for name, path in written.items():
        assert path == tmp_path / f"{name}.tsv"
        assert read_tsv(path) == expected[name]


def test_committed_files_are_utf8_tsv_with_unix_newlines():
    for name in corpus.SPLIT_NAMES:
        raw = (DATA_DIR / f"{name}.tsv").read_bytes()
        assert b"\r" not in raw and raw.endswith(b"\n")
        assert all(line.count(b"\t") == 1 for line in raw.splitlines())
        raw.decode("utf-8")


def test_tagged_splits_match_committed_files(tagged):
    for name, items in tagged.items():
        assert [t.pair for t in items] == read_tsv(DATA_DIR / f"{name}.tsv")


# --- acceptance numbers --------------------------------------------------------------------

def test_split_sizes(tagged):
    assert {name: len(items) for name, items in tagged.items()} == {
        "train": corpus.N_TRAIN, "valid": corpus.N_VALID, "test": corpus.N_TEST}
    assert corpus.N_TRAIN >= 20_000 and corpus.N_VALID >= 1_000 and corpus.N_TEST >= 1_000


def test_german_sentences_unique_and_held_out(tagged):
    all_german = [t.german for items in tagged.values() for t in items]
    assert len(set(all_german)) == len(all_german)
    train_german = {t.german for t in tagged["train"]}
    assert not train_german & {t.german for t in tagged["valid"]}
    assert not train_german & {t.german for t in tagged["test"]}


def test_vocabulary_size_and_mean_lengths(tokens):
    assert len({tok for sent in tokens["train"][0] for tok in sent}) >= 350
    for name, (de, en) in tokens.items():
        for side in (de, en):
            mean = sum(map(len, side)) / len(side)
            assert 8 <= mean <= 14, (name, mean)
            assert max(map(len, side)) <= corpus.MAX_TOKENS


def test_every_word_is_frequent_in_train(tokens):
    for side in tokens["train"]:
        counts = Counter(tok for sent in side for tok in sent)
        rare = sorted((n, tok) for tok, n in counts.items() if n < 20)
        assert not rare, f"words seen fewer than 20 times in train: {rare[:10]}"


def test_tokens_detokenize_to_the_original_sentence(tagged, tokens):
    """A model trained on spaCy tokens can reproduce every sentence exactly (e.g. no "cannot")."""
    for name, items in tagged.items():
        de, en = tokens[name]
        for item, de_tokens, en_tokens in zip(items, de, en, strict=True):
            assert detokenize(de_tokens) == item.german
            assert detokenize(en_tokens) == item.english


def test_valid_and_test_use_only_training_words(tokens):
    for index in (0, 1):
        known = {tok for sent in tokens["train"][index] for tok in sent}
        for name in ("valid", "test"):
            unseen = {tok for sent in tokens[name][index] for tok in sent} - known
            assert not unseen, (name, sorted(unseen)[:10])


def test_every_phenomenon_is_well_represented(tagged):
    for name, minimum in (("train", 300), ("valid", 10), ("test", 10)):
        counts = corpus.phenomenon_counts(tagged[name])
        assert list(counts) == list(corpus.PHENOMENA)
        thin = {tag: n for tag, n in counts.items() if n < minimum}
        assert not thin, (name, thin)


# --- determinism ---------------------------------------------------------------------------

def test_generation_is_seeded_and_leaves_the_global_rng_alone():
    state = random.getstate()
    first = corpus.generate_pairs(300, seed=11)
    assert random.getstate() == state
    assert corpus.generate_pairs(300, seed=11) == first
    assert corpus.generate_pairs(300, seed=12) != first


def test_translation_is_a_function_of_the_german_sentence():
    """Sentences that two seeds both produce must get the same English (no ambiguous constructions)."""
    english = {t.german: t.english for t in corpus.generate_tagged(10_000, seed=1)}
    shared = [t for t in corpus.generate_tagged(10_000, seed=2) if t.german in english]
    assert len(shared) > 50
    assert all(english[t.german] == t.english for t in shared)


def test_bad_arguments():
    with pytest.raises(ValueError):
        corpus.generate_pairs(0)
    with pytest.raises(ValueError):
        corpus.make_splits(n_train=-1)
    with pytest.raises(ValueError, match="unknown tag"):
        corpus.examples_with("no_such_tag")
    with pytest.raises(ValueError, match="split"):
        corpus.examples_with("perfect", split="dev")


def test_examples_with_tag():
    examples = corpus.examples_with("subordinate_clause", n=3, split="test", without=("question",))
    assert len(examples) == 3
    assert all("subordinate_clause" in t.tags and "question" not in t.tags for t in examples)
    assert corpus.tags_by_german()[examples[0].german] == examples[0].tags
    for tag in ("perfect", "separable_split", "negation_kein", "fronted_time"):
        assert len(corpus.examples_with(tag, n=5)) == 5


# --- German grammar spot checks ------------------------------------------------------------

def test_orthography(train):
    for t in train:
        for sentence in t.pair:
            assert sentence[0].isupper() and sentence[-1] in ".?" and "  " not in sentence, sentence
        for conjunction in (" weil ", " wenn ", " obwohl ", " dass ", " ob "):
            if conjunction in t.german:
                assert f",{conjunction}" in t.german, t.german


def test_ein_agrees_with_gender(train):
    for t in train:
        w = words(t.german)
        for i, token in enumerate(w[:-1]):
            lowered = token.lower()
            noun = w[i + 1] if w[i + 1] in GENDER else w[i + 2] if i + 2 < len(w) and w[i + 2] in GENDER else None
            if noun is None:
                continue
            if lowered in ("ein", "kein"):
                assert GENDER[noun] != "f", t.german  # never "ein Katze"
            if lowered in ("eine", "keine") and noun not in PLURALS:
                assert GENDER[noun] == "f", t.german


def test_adjective_endings_after_ein(train):
    for t in train:
        w = words(t.german)
        for i in range(len(w) - 2):
            if w[i].lower() in ("ein", "kein") and w[i + 2] in GENDER and w[i + 1][0].islower():
                expected = {"m": "er", "n": "es"}[GENDER[w[i + 2]]]
                assert w[i + 1].endswith(expected), t.german  # ein kleiner Hund, ein kleines Kind
            if w[i] in ("dem", "einem", "keinem") and w[i + 2] in GENDER and w[i + 1][0].islower():
                assert w[i + 1].endswith("en"), t.german  # dem kleinen Hund


def test_accusative_and_dative_prepositions_govern_their_case(train):
    accusative, dative = {"für", "ohne", "durch", "gegen"}, {"mit", "bei", "nach", "von", "aus"}
    for t in train:
        w = words(t.german)
        for i in range(len(w) - 1):
            article, rest = w[i + 1], w[i + 2:i + 4]
            masculine_singular = any(GENDER.get(x) == "m" and x not in PLURALS for x in rest[:2])
            if w[i] in accusative and masculine_singular and article in ("der", "den", "dem", "einen", "einem"):
                assert article in ("den", "einen"), t.german  # für den Vater
            if w[i] in dative:
                plural = any(x in PLURALS for x in rest)  # "mit den Kindern" is dative plural
                assert article not in ("den", "einen", "das", "die") or plural, t.german


def test_contractions_are_always_used(train):
    for t in train:
        for uncontracted in (" zu dem ", " zu der ", " bei dem ", " von dem ", " in dem ", " in das ", " an dem "):
            assert uncontracted not in f" {t.german.lower()} ", t.german


def test_perfect_main_clauses_end_with_the_participle(train):
    checked = 0
    for t in train:
        if "perfect" in t.tags and "subordinate_clause" not in t.tags:
            assert words(t.german)[-1] in PARTICIPLES, t.german
            checked += 1
    assert checked > 1000


def test_subordinate_clauses_end_with_the_finite_verb(train):
    checked = 0
    for t in train:
        if "subordinate_clause" in t.tags and "subordinate_first" not in t.tags:
            assert words(t.german)[-1] in FINITE_FORMS, t.german
            checked += 1
        if "subordinate_first" in t.tags:
            before, after = t.german.split(", ", 1)
            assert before.split()[-1] in FINITE_FORMS, t.german  # ..., weil der Hund bellt,
            assert after.split()[0] in FINITE_FORMS, t.german  # ... lacht das Kind (verb second)
    assert checked > 1000


def test_verb_second_after_a_fronted_time_phrase(train):
    phrases = sorted((p for p, _, _ in corpus.TIME_PHRASES), key=len, reverse=True)
    for t in train:
        if "fronted_time" in t.tags:
            phrase = next(p for p in phrases if t.german.lower().startswith(p.lower() + " "))
            assert t.german[len(phrase) + 1:].split()[0] in FINITE_FORMS, t.german


def test_questions_start_with_the_finite_verb(train):
    for t in train:
        if "question" in t.tags:
            assert t.german.split()[0].lower() in FINITE_FORMS and t.german.endswith("?"), t.german
            assert t.english.split()[0] in {"Do", "Does", "Has", "Have", "Can", "Is", "Are", "Am"}, t.english


# --- English spot checks -------------------------------------------------------------------

def test_a_and_an(train):
    for t in train:
        w = t.english[:-1].split()
        for i, token in enumerate(w[:-1]):
            if token.lower() in ("a", "an"):
                assert (token.lower() == "an") == (w[i + 1][0].lower() in "aeiou"), t.english


def test_irregular_english_plurals(train):
    pairs = {"Männer": "men", "Frauen": "women", "Kinder": "children", "Mäuse": "mice", "Gänse": "geese",
             "Wölfe": "wolves"}
    for t in train:
        w = words(t.german)
        for german, english in pairs.items():
            if german in w or german + "n" in w:
                assert re.search(rf"\b{english}\b", t.english), t.pair


def test_english_agreement_with_sie(train):
    for t in train:
        first_two = " ".join(t.german.split()[:2])
        if first_two in ("Sie ist", "Sie hat", "Sie kann", "Sie muss", "Sie will"):
            assert t.english.startswith("She "), t.pair
        if first_two in ("Sie sind", "Sie haben", "Sie können", "Sie müssen", "Sie wollen"):
            assert t.english.startswith("They "), t.pair


def test_negation_is_rendered_with_not(train):
    for t in train:
        if "negation_nicht" in t.tags or "negation_kein" in t.tags:
            assert re.search(r"\bnot\b", t.english), t.pair
        else:
            assert not re.search(r"\bnot\b", t.english), t.pair


def test_english_participles_follow_has_or_have(train):
    participles = {verb.en[3] for verb in corpus.VERBS}
    for t in train:
        if "perfect" not in t.tags or "simple_past_en" in t.tags:
            continue
        w = t.english[:-1].replace(",", "").split()
        if "question" in t.tags:  # "Have you read six long books?"
            assert w[0] in ("Has", "Have") and participles & set(w), t.pair
        else:
            assert any(x in ("has", "have") and (y in participles or y == "not")
                       for x, y in pairwise(w)), t.pair


def test_short_examples_for_the_attention_pictures_exist():
    """Notebook 11 draws attention maps for short, plain test sentences of these three kinds."""
    plain = ("question", "negation_nicht", "negation_kein", "modal", "fronted_time", "fronted_place",
             "pronoun_object", "ditransitive", "prepositional_object", "subordinate_first", "copula")
    for tag, also_without in (("subordinate_clause", ("perfect", "separable_verb")),
                              ("perfect", ("subordinate_clause", "separable_verb", "perfect_sein")),
                              ("separable_split", ("subordinate_clause", "perfect"))):
        short = [t for t in corpus.examples_with(tag, n=1000, split="test", without=plain + also_without)
                 if len(words(t.german)) <= 9]
        assert len(short) >= 5, tag


def test_corpus_package_does_not_import_data_and_keeps_its_public_names():
    """The corpus package is a leaf: course_lib.data imports it, never the other way round (no import cycle);
    every public name of the former single module is still importable from course_lib.corpus."""
    import ast
    from pathlib import Path

    package = Path(corpus.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("course_lib"):
                assert node.module.startswith("course_lib.corpus"), f"{path.name} imports {node.module}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("course_lib") and not a.name.startswith("course_lib.corpus")
                               for a in node.names), f"{path.name} imports another course_lib module"
        assert len(path.read_text(encoding="utf-8").splitlines()) < 400, f"{path.name} is too long to read at once"
    for name in ("generate_tagged", "generate_pairs", "make_tagged_splits", "make_splits", "default_tagged_splits",
                 "examples_with", "tags_by_german", "phenomenon_counts", "write_splits", "format_tsv", "TaggedPair",
                 "PHENOMENA", "NOUNS", "VERBS", "ADJECTIVES", "TIME_PHRASES", "DEFAULT_SEED", "N_TRAIN", "N_VALID",
                 "N_TEST", "SPLIT_NAMES", "MAX_TOKENS", "CorpusRandom", "random_clause", "german_clause",
                 "english_clause", "german_np", "english_np"):
        assert name in corpus.__all__ and getattr(corpus, name) is not None
