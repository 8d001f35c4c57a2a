"""The subword option (course_lib.subword, Hugging Face ``tokenizers``) agrees with the course's BPE."""

import pytest

pytest.importorskip("tokenizers")

from test_bpe import TOY_COUNTS, TOY_MERGES

from course_lib.bpe import BPETokenizer, learn_bpe
from course_lib.subword import SubwordTokenizer, pieces_to_words

WORDS = ["low", "lower", "newest", "widest", "lowest", "newer", "wider", "slow", "Löwe", "x"]


def test_same_merges_cut_every_word_like_the_course_bpe():
    """The Rust tokenizer replays the course's merges exactly, on training words and unseen ones."""
    fast, course = SubwordTokenizer(TOY_MERGES), BPETokenizer(TOY_MERGES)
    for word in WORDS:
        assert fast.encode_word(word) == course.encode_word(word), word
    assert fast.tokenize(["lowest", "newer"]) == ["low", "est</w>", "n", "ew", "er</w>"]


def test_the_library_trainer_learns_like_the_course_bpe():
    """Same data, same min_count: the first merge, the number of merges and every training word's cut agree.

    Later merges can differ in order: among equally frequent pairs the course picks the alphabetically
    smallest, ``tokenizers`` the one of the oldest symbols.
    """
    sentences = [[word] for word, count in TOY_COUNTS.items() for _ in range(count)]
    fast = SubwordTokenizer.train(sentences, num_merges=100, min_count=2)
    course = learn_bpe(TOY_COUNTS, 100, min_count=2)
    assert fast.merges[0] == course[0] == ("e", "s")
    assert len(fast) == len(course) == len(TOY_MERGES)
    for word in TOY_COUNTS:  # every training word ends as one symbol in both
        assert fast.encode_word(word) == BPETokenizer(course).encode_word(word) == [word + "</w>"]
    assert len(SubwordTokenizer.train(sentences, num_merges=3, min_count=2)) == 3


def test_pieces_glue_back_into_words():
    fast = SubwordTokenizer(TOY_MERGES)
    words = ["newer", "slow", "."]
    assert pieces_to_words(fast.tokenize(words)) == words
    assert pieces_to_words(["n", "ew"]) == ["new"]  # a word cut off before its last piece
    assert pieces_to_words(["<unk>", "do", "g</w>", "a", "<unk>", "b</w>"]) == ["<unk>", "dog", "a", "<unk>", "b"]
