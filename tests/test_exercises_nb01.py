"""Checkers of notebook 01: each passes a right answer, fails a wrong one with a specific message, and
reports an unattempted exercise as not attempted."""

from course_lib.bpe import merge_pair as reference_merge_pair
from course_lib.exercises import nb01


def _unattempted(*args):
    raise NotImplementedError


# 01.1 encode ---------------------------------------------------------------------------------


def _right_encode(tokens, stoi):
    return [stoi["<bos>"]] + [stoi.get(t, stoi["<unk>"]) for t in tokens] + [stoi["<eos>"]]


def test_encode_right_answer_passes(capsys):
    result = nb01.check_encode(_right_encode)
    assert result and "✅ Exercise 01.1 passed" in capsys.readouterr().out


def test_encode_without_bos_eos_fails_with_a_hint():
    result = nb01.check_encode(lambda tokens, stoi: [stoi.get(t, stoi["<unk>"]) for t in tokens], quiet=True)
    assert not result and result.status == "failed"
    assert "all tokens known" in result.message and "forget the <bos> and <eos>" in result.message


def test_encode_without_unk_fallback_names_the_failing_case():
    def no_fallback(tokens, stoi):
        return [stoi["<bos>"]] + [stoi[t] for t in tokens] + [stoi["<eos>"]]

    result = nb01.check_encode(no_fallback, quiet=True)
    assert not result and "one unknown word" in result.message and "raised KeyError" in result.message


def test_encode_with_wrong_unk_id_gets_the_unk_hint():
    result = nb01.check_encode(lambda tokens, stoi: [1] + [stoi.get(t, 0) for t in tokens] + [2], quiet=True)
    assert not result and "expected [1, 4, 3, 9, 10, 11, 6, 2], got [1, 4, 0, 9, 10, 11, 6, 2]" in result.message
    assert "stoi['<unk>']" in result.message


def test_encode_with_constant_special_ids_fails_on_another_vocabulary():
    def constants(tokens, stoi):
        return [1] + [stoi.get(t, 3) for t in tokens] + [2]

    assert nb01.check_encode(constants, quiet=True)  # the course's ids are 0-3 in every case
    result = nb01.check_encode(lambda tokens, stoi: tuple(_right_encode(tokens, stoi)), quiet=True)
    assert not result and "return a list of ints" in result.message


def test_encode_not_attempted():
    assert nb01.check_encode(_unattempted, quiet=True).status == "not attempted"


# 01.2 <unk> count ----------------------------------------------------------------------------


def test_unk_count_right_wrong_and_missing():
    assert nb01.expected_unk_count() == 4
    assert nb01.check_unk_count(4, quiet=True)
    wrong = nb01.check_unk_count(3, quiet=True)
    assert not wrong and "3 is not right" in wrong.message and "'Der'" in wrong.message and "4" not in wrong.message
    assert nb01.check_unk_count(None, quiet=True).status == "not attempted"
    typed = nb01.check_unk_count("4", quiet=True)
    assert not typed and "whole number" in typed.message


# 01.3 empty-string specials ------------------------------------------------------------------


def test_buggy_ids_right_wrong_and_missing(capsys):
    assert nb01.expected_buggy_ids() == [3, 4, 5, 3, 3]
    right = nb01.check_buggy_ids([3, 4, 5, 3, 3])
    assert right and "<bos>, <eos> and <pad> all became id 3" in capsys.readouterr().out
    correct_vocab = nb01.check_buggy_ids([1, 4, 5, 2, 0], quiet=True)
    assert not correct_vocab and "what a *correct* vocabulary gives" in correct_vocab.message
    first_wins = nb01.check_buggy_ids([0, 4, 5, 0, 0], quiet=True)
    assert not first_wins and "which assignment is left at the end" in first_wins.message
    assert "3, 4, 5, 3, 3" not in first_wins.message and "first, fourth and fifth entries are wrong" in first_wins.message
    assert not nb01.check_buggy_ids("3 4 5 3 3", quiet=True)
    assert nb01.check_buggy_ids(None, quiet=True).status == "not attempted"


# 01.4 merge_pair -----------------------------------------------------------------------------


def _overlapping_merge(word_symbols, pair):  # merges every position where the pair starts, even overlapping ones
    out, i = [], 0
    while i < len(word_symbols):
        if tuple(word_symbols[i:i + 2]) == tuple(pair):
            out.append(pair[0] + pair[1])
        elif i == 0 or tuple(word_symbols[i - 1:i + 1]) != tuple(pair):
            out.append(word_symbols[i])
        i += 1
    return tuple(out)


def test_merge_pair_right_answer_passes():
    assert nb01.check_merge_pair(reference_merge_pair, quiet=True)
    assert nb01.check_merge_pair(lambda s, p: list(reference_merge_pair(s, p)), quiet=True)  # a list is fine too


def test_merge_pair_only_first_occurrence_fails():
    def first_only(symbols, pair):
        for i in range(len(symbols) - 1):
            if (symbols[i], symbols[i + 1]) == pair:
                return (*symbols[:i], pair[0] + pair[1], *symbols[i + 2:])
        return tuple(symbols)

    result = nb01.check_merge_pair(first_only, quiet=True)
    assert not result and "the pair occurs twice" in result.message and "('es', 't', 'es', '</w>')" in result.message


def test_merge_pair_overlapping_merges_fail():
    result = nb01.check_merge_pair(_overlapping_merge, quiet=True)
    assert not result and "overlapping occurrences" in result.message


def test_merge_pair_crash_and_not_attempted():
    crash = nb01.check_merge_pair(lambda symbols, pair: symbols[len(symbols) + 5], quiet=True)
    assert not crash and "raised IndexError" in crash.message
    assert nb01.check_merge_pair(_unattempted, quiet=True).status == "not attempted"
