"""Hidden tests for notebook 01 (tokenization)."""

from __future__ import annotations

from course_lib.exercises import nb01

from . import hidden_test


def _stoi(words, specials=("<pad>", "<bos>", "<eos>", "<unk>")):
    return {token: i for i, token in enumerate([*specials, *words])}


@hidden_test(nb01.check_encode, cases=5)
def encode(grader, student_fn):
    table = _stoi(["Vogel", "singt", "ein", "Lied", "!", ","])
    shuffled = _stoi(["x", "y"], specials=("<unk>", "<eos>", "<pad>", "<bos>"))  # special ids in another order
    cases = [
        ("a sentence with a comma", ["ein", "Vogel", ",", "ein", "Lied", "!"], table),
        ("unknown words in a row", ["zwei", "drei", "Lied"], table),
        ("one known token", ["singt"], table),
        ("special tokens with other ids", ["y", "z", "x"], shuffled),
        ("an empty sentence, other ids", [], shuffled),
    ]
    for case, tokens, stoi in cases:
        unk = stoi["<unk>"]
        expected = [stoi["<bos>"], *[stoi.get(t, unk) for t in tokens], stoi["<eos>"]]
        got = grader.call(student_fn, case, list(tokens), dict(stoi))
        if isinstance(got, tuple):
            got = list(got)
        grader.expect(case, got, expected)


@hidden_test(nb01.check_unk_count)
def unk_count(grader, answer):
    if isinstance(answer, bool):
        raise grader.wrong("answer with a whole number.")
    grader.check_value(answer, 4)


@hidden_test(nb01.check_buggy_ids)
def buggy_ids(grader, answer):
    if answer is not None:
        answer = list(answer) if isinstance(answer, (list, tuple)) else answer
    grader.check_value(answer, [3, 4, 5, 3, 3])


def _merge(symbols, pair):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


@hidden_test(nb01.check_merge_pair, cases=6)
def merge_pair(grader, student_fn):
    cases = [
        ("a German compound", ("H", "a", "u", "s", "t", "ü", "r", "</w>"), ("t", "ü")),
        ("five in a row", ("b", "b", "b", "b", "b"), ("b", "b")),
        ("pairs separated by other symbols", ("e", "n", "x", "e", "n", "e", "n</w>"), ("e", "n")),
        ("the pair reversed is not the pair", ("n", "e", "n", "e"), ("e", "n")),
        ("multi-letter symbols", ("sch", "ön", "es", "</w>"), ("es", "</w>")),
        ("an empty word", (), ("a", "b")),
    ]
    for case, symbols, pair in cases:
        got = grader.call(student_fn, case, tuple(symbols), tuple(pair))
        if isinstance(got, list):
            got = tuple(got)
        grader.expect(case, got, _merge(symbols, pair))
