"""Tests for ``course_lib.bpe``: a hand-computed example, tie-breaking, determinism and round trips."""

import random
from collections import Counter

import pytest

from course_lib.bpe import (
    END_OF_WORD,
    BPETokenizer,
    best_pair,
    count_pairs,
    learn_bpe,
    merge_pair,
    word_to_symbols,
)

# The classic example of Sennrich et al. (2016). The merges below were worked out by hand:
# (e, s), (s, t) and (t, </w>) all occur 9 times; the alphabetically smallest pair (e, s) wins, and so on.
TOY_COUNTS = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
TOY_MERGES = [
    ("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w"), ("e", "w"), ("ew", "est</w>"),
    ("n", "ewest</w>"), ("low", "</w>"), ("d", "est</w>"), ("i", "dest</w>"), ("w", "idest</w>"),
    ("e", "r"), ("er", "</w>"), ("low", "er</w>"),
]


def test_word_to_symbols_adds_the_end_of_word_marker():
    assert word_to_symbols("Hund") == ("H", "u", "n", "d", END_OF_WORD)
    assert word_to_symbols("ü") == ("ü", "</w>")
    for bad in ("", "zwei Wörter", None):
        with pytest.raises(ValueError, match="non-empty string without whitespace"):
            word_to_symbols(bad)


def test_count_pairs_weights_words_by_their_count():
    pairs = count_pairs({("l", "o", "w", "</w>"): 5, ("l", "o", "w", "e", "r", "</w>"): 2})
    assert pairs[("l", "o")] == 7 and pairs[("w", "</w>")] == 5 and pairs[("e", "r")] == 2
    assert sum(pairs.values()) == 3 * 5 + 5 * 2


def test_best_pair_breaks_ties_alphabetically():
    assert best_pair({("s", "t"): 9, ("e", "s"): 9, ("t", "</w>"): 9, ("l", "o"): 7}) == ("e", "s")
    assert best_pair({("a", "b"): 1, ("z", "z"): 2}) == ("z", "z")


def test_merge_pair_scans_left_to_right_without_overlap():
    assert merge_pair(("a", "a", "a", "</w>"), ("a", "a")) == ("aa", "a", "</w>")
    assert merge_pair(("a", "a", "a", "a"), ("a", "a")) == ("aa", "aa")
    assert merge_pair(("l", "o", "w"), ("x", "y")) == ("l", "o", "w")
    assert merge_pair(("e", "s", "t", "e", "s"), ("e", "s")) == ("es", "t", "es")
    assert merge_pair((), ("a", "b")) == ()


def test_learn_bpe_matches_the_hand_computed_merges():
    assert learn_bpe(TOY_COUNTS, 100) == TOY_MERGES  # stops by itself: every word is one symbol
    assert learn_bpe(TOY_COUNTS, 5) == TOY_MERGES[:5]
    assert learn_bpe(TOY_COUNTS, 0) == []


def test_min_count_stops_early():
    merges = learn_bpe({"ab": 1, "cd": 1}, 10)
    assert merges == []  # every pair occurs once: nothing worth merging
    assert learn_bpe({"ab": 1, "cd": 1}, 10, min_count=1) == [("a", "b"), ("ab", "</w>"), ("c", "d"), ("cd", "</w>")]
    with pytest.raises(ValueError, match="num_merges"):
        learn_bpe(TOY_COUNTS, -1)
    with pytest.raises(ValueError, match="min_count"):
        learn_bpe(TOY_COUNTS, 3, min_count=0)


def test_learning_is_deterministic_and_independent_of_input_order():
    words = "der Hund die Katze das Haus die Haustür der Schlüssel die Tür Kinder Zimmer Fenster".split()
    counts = Counter(random.Random(0).choices(words, k=500))
    shuffled = dict(sorted(counts.items(), key=lambda kv: random.Random(1).random()))
    assert learn_bpe(counts, 40) == learn_bpe(shuffled, 40) == learn_bpe(dict(counts), 40)


def test_encode_word_replays_the_training_segmentation():
    tokenizer = BPETokenizer(TOY_MERGES[:9])
    assert tokenizer.encode_word("newest") == ["newest</w>"]
    assert tokenizer.encode_word("low") == ["low</w>"]
    assert tokenizer.encode_word("lower") == ["low", "e", "r", "</w>"]
    assert tokenizer.encode_word("widest") == ["w", "i", "d", "est</w>"]
    assert tokenizer.encode_word("lowest") == ["low", "est</w>"]  # unseen word, known pieces
    assert BPETokenizer([]).encode_word("ab") == ["a", "b", "</w>"]


def test_unseen_compound_is_split_into_known_pieces():
    counts = {"haus": 20, "tür": 20, "schlüssel": 20, "haustür": 5, "hund": 10, "türschlüssel": 3}
    tokenizer = BPETokenizer(learn_bpe(counts, 60))
    assert tokenizer.encode_word("haustür") == ["haustür</w>"]
    assert tokenizer.encode_word("haustürschlüssel") == ["haus", "türschlüssel</w>"]  # never seen whole


def test_tokenize_and_decode_round_trip():
    tokenizer = BPETokenizer(learn_bpe(TOY_COUNTS, 8))
    for text in ["low lower newest widest", "lowest newer", "a", "Straße über Äpfel ."]:
        pieces = tokenizer.tokenize(text)
        assert tokenizer.decode(pieces) == text
    assert tokenizer.tokenize(["low", "low"]) == tokenizer.tokenize("low  low")
    assert tokenizer.decode([]) == ""
    assert len(tokenizer) == 8 and repr(tokenizer) == "BPETokenizer(merges=8)"


def test_merges_are_validated():
    with pytest.raises(ValueError, match="pair of non-empty strings"):
        BPETokenizer([("a", "")])
    with pytest.raises(ValueError, match="pair of non-empty strings"):
        BPETokenizer([("a", "b", "c")])
