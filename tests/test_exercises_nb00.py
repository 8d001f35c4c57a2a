"""Exercise checks of notebook 00: the heads shape (a value) and longest_sentence (a function)."""

import pytest

from course_lib.exercises import nb00


def right_longest(pairs, tokenizer):
    return max((german for german, _ in pairs), key=lambda sentence: len(tokenizer(sentence)))


def test_00_2_right_answer_passes():
    assert nb00.check_longest_sentence(right_longest, quiet=True)


def _last_of_ties(pairs, tokenizer):
    best = None
    for german, _ in pairs:
        if best is None or len(tokenizer(german)) >= len(tokenizer(best)):
            best = german
    return best


@pytest.mark.parametrize(
    ("student", "case", "needle"),
    [
        # comparing characters: the failing case is about punctuation, and the hint says "characters", not "tie"
        (lambda pairs, tok: max((g for g, _ in pairs), key=len), "punctuation counts as tokens",
         "most characters: count tokens instead"),
        (_last_of_ties, "a tie of 3 tokens", "return the first of them"),
        (lambda pairs, tok: max((e for _, e in pairs), key=lambda s: len(tok(s))), "one pair", "English sentence"),
        (lambda pairs, tok: tok(right_longest(pairs, tok)), "one pair", "not its list of tokens"),
        (lambda pairs, tok: pairs[-1][0], "a tie of 3 tokens", "Count the tokens of every German sentence"),
    ],
)
def test_00_2_each_mistake_gets_its_own_hint(student, case, needle):
    result = nb00.check_longest_sentence(student, quiet=True)
    assert result.status == "failed" and f"on case '{case}" in result.message and needle in result.message, \
        result.message
    if "characters" in needle:
        assert "tie" not in result.message


def test_00_2_the_tie_case_really_needs_tokens_and_the_first_of_a_tie():
    from course_lib.tokenization import Tokenizer

    tokenizer = Tokenizer("de")
    assert len(tokenizer("Ja, ja, gut.")) == 6 and len(tokenizer("Donaudampfschifffahrt")) == 1
    assert len(tokenizer("Die Katze.")) == len(tokenizer("Der Hund.")) == 3
    assert len("Die Katze.") > len("Der Hund.")  # comparing characters would pass the tie case: caught earlier


def test_00_1_hints_name_the_mistake():
    assert "transpose" in nb00.check_head_shape((32, 20, 8, 16), quiet=True).message
    result = nb00.check_head_shape([32, 8, 20, 16], quiet=True)
    assert result.status == "failed" and "tuple" in result.message
