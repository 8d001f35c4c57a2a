"""Exercise checks for notebook 01 (tokenization): encoding with ``<unk>``, counting ``<unk>``s,
the empty-string special-token bug, and one BPE merge step."""

from __future__ import annotations

from course_lib.exercises import FAILED, PASSED, VALUE, exercise

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")


# ----------------------------------------------------------------------------------------------
# 01.1: encode with <unk> fallback
# ----------------------------------------------------------------------------------------------

def _reference_encode(tokens, stoi):
    return [stoi["<bos>"]] + [stoi.get(tok, stoi["<unk>"]) for tok in tokens] + [stoi["<eos>"]]


def _small_stoi(words):
    itos = list(SPECIAL_TOKENS) + list(words)
    return {tok: i for i, tok in enumerate(itos)}


@exercise("01.1", points=2)
def check_encode(ex, student_fn, quiet: bool = False):
    """``encode(tokens, stoi)`` -> ``[<bos>] + ids + [<eos>]`` with unknown tokens mapped to ``<unk>``."""
    stoi = _small_stoi(["der", "Hund", ".", "die", "Katze", "sieht", "den", "Ball"])
    cases = [
        ("all tokens known", (["der", "Hund", "sieht", "die", "Katze", "."], stoi)),
        ("one unknown word", (["der", "Drache", "sieht", "den", "Ball", "."], stoi)),
        ("case matters: 'Der' is not 'der'", (["Der", "Hund", "."], stoi)),
        ("every word unknown", (["ein", "Vogel", "singt", "!"], stoi)),
        ("an empty sentence", ([], stoi)),
        ("another vocabulary (ids depend on stoi)", (["b", "a", "z"], _small_stoi(["a", "b"]))),
    ]
    for description, (tokens, table) in cases:
        got, verdict = ex.call_student(student_fn, (list(tokens), dict(table)),
                                    case=description,
                                    who=f"your function (tokens {tokens})", quiet=quiet)
        if verdict is not None:
            return verdict
        expected = _reference_encode(tokens, table)
        if isinstance(got, tuple) or not isinstance(got, list):
            return ex.report(FAILED, f"on case '{description}': return a list of ints, got {type(got).__name__}", quiet)
        if got != expected:
            hint = ""
            if got == expected[1:-1]:
                hint = " Did you forget the <bos> and <eos> around the sentence?"
            elif len(got) == len(expected) and (got[0], got[-1]) != (expected[0], expected[-1]):
                hint = " The first id must be stoi['<bos>'] and the last stoi['<eos>']."
            elif len(got) == len(expected):
                hint = " Unknown tokens must become stoi['<unk>'] (use stoi.get(token, unk_id))."
            return ex.report(FAILED, f"on case '{description}' (tokens {tokens}): expected {expected}, "
                                          f"got {got}.{hint}", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with the reference.", quiet)


# ----------------------------------------------------------------------------------------------
# 01.2: predict the number of <unk>s
# ----------------------------------------------------------------------------------------------

UNK_TRAIN = [
    ["der", "Hund", "sieht", "die", "Katze", "."],
    ["die", "Katze", "sieht", "den", "Hund", "."],
    ["der", "Vogel", "singt", "."],
    ["Der", "Hund", "schläft", "."],
]
UNK_MIN_FREQ = 2
UNK_SENTENCE = ["Der", "Vogel", "sieht", "den", "Hund", "nicht", "."]


def expected_unk_count() -> int:
    """The number of ``<unk>`` ids when ``UNK_SENTENCE`` is encoded with a vocab built from ``UNK_TRAIN``."""
    from collections import Counter

    counts = Counter(tok for sentence in UNK_TRAIN for tok in sentence)
    return sum(counts[tok] < UNK_MIN_FREQ for tok in UNK_SENTENCE)


@exercise("01.2", points=1, kind=VALUE)
def check_unk_count(ex, answer, quiet: bool = False):
    """How many ``<unk>`` does the sentence get (vocabulary with min_freq=2)?"""
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, int)):
        return ex.report(FAILED, f"expected a whole number, got {type(answer).__name__} {answer!r}", quiet)
    expected = expected_unk_count()
    hint = ("Count each token of the sentence in the four training sentences: it is kept only if it occurs at "
            "least twice, and 'Der' and 'der' are different tokens.")
    if isinstance(answer, int) and not isinstance(answer, bool) and answer != expected:
        from collections import Counter

        counts = Counter(tok for sentence in UNK_TRAIN for tok in sentence)
        lowered = Counter(tok.lower() for sentence in UNK_TRAIN for tok in sentence)
        if answer == sum(lowered[tok.lower()] < UNK_MIN_FREQ for tok in UNK_SENTENCE):
            hint = ("Tokens are case-sensitive: 'Der' at the start of the sentence is not 'der', so it has its own "
                    "count.")
        elif answer == sum(counts[tok] < 1 for tok in UNK_SENTENCE):
            hint = ("You counted only the tokens never seen in training; with min_freq=2 a token seen once is "
                    "<unk> too.")
        elif answer == sum(counts[tok] <= UNK_MIN_FREQ for tok in UNK_SENTENCE):
            hint = "A token seen exactly twice reaches min_freq=2 and is kept; only counts below 2 become <unk>."
        elif answer == expected + 2:
            hint = "Count only the sentence's own tokens: <bos> and <eos> are in every vocabulary, never <unk>."
    return ex.check_answer(answer, expected, hint=hint, quiet=quiet)


# ----------------------------------------------------------------------------------------------
# 01.3: spot the bug: special tokens written as empty strings
# ----------------------------------------------------------------------------------------------

def expected_buggy_ids() -> list[int]:
    """What the buggy vocabulary of exercise 01.3 gives for ``[BOS, "der", "Hund", EOS, PAD]``."""
    pad = bos = eos = unk = ""  # the bug: four specials, one string
    itos = [pad, bos, eos, unk, "der", "Hund"]
    stoi = {tok: i for i, tok in enumerate(itos)}
    return [stoi[tok] for tok in [bos, "der", "Hund", eos, pad]]


@exercise("01.3", points=1, kind=VALUE)
def check_buggy_ids(ex, answer, quiet: bool = False):
    """Predict the ids the buggy vocabulary gives to ``[BOS, "der", "Hund", EOS, PAD]``."""
    expected = expected_buggy_ids()
    if answer is None:
        return ex.not_attempted("set your answer instead of `None`", quiet)
    if not isinstance(answer, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in answer):
        return ex.report(FAILED, f"expected a list of 5 ints such as [1, 4, 5, 2, 0], got {answer!r}", quiet)
    if answer == [1, 4, 5, 2, 0]:
        return ex.report(FAILED, "[1, 4, 5, 2, 0] is what a *correct* vocabulary gives. With the bug, all "
                                      "four specials are the same string '' and the dict keeps only one entry for it: "
                                      "which id does the last assignment leave?", quiet)
    hint = "A dict has one entry per key; building it left to right, a later id for the same key overwrites an earlier one."
    if answer == [0, 4, 5, 0, 0]:
        hint = ("All four specials are the same key ''; the dict comprehension assigns it 0, 1, 2 and then 3: "
                "which assignment is left at the end?")
    result = ex.check_answer(answer, expected, hint=hint, quiet=True)
    if result:
        message = ("correct: <bos>, <eos> and <pad> all became id 3, the same as <unk>. The model could not tell "
                   "where a sentence starts or ends, and decoding could never stop at <eos>.")
        return ex.report(PASSED, message, quiet)
    return ex.report(result.status, result.message, quiet)


# ----------------------------------------------------------------------------------------------
# 01.4: one BPE merge step
# ----------------------------------------------------------------------------------------------

@exercise("01.4", points=2)
def check_merge_pair(ex, student_fn, quiet: bool = False):
    """``merge_pair_mine(word_symbols, pair)`` replaces every occurrence of ``pair``, left to right, no overlaps.

    The notebook names the student's function ``merge_pair_mine``: its BPE cells use ``merge_pair`` (borrowed from
    course_lib.bpe), and an exercise stub with the same name would replace it."""
    from course_lib.bpe import merge_pair

    cases = [
        ("the pair occurs once", (("l", "o", "w", "</w>"), ("l", "o"))),
        ("the pair occurs twice", (("e", "s", "t", "e", "s", "</w>"), ("e", "s"))),
        ("the pair does not occur", (("H", "u", "n", "d", "</w>"), ("n", "u"))),
        ("merged symbols can be merged again", (("n", "ew", "est</w>"), ("ew", "est</w>"))),
        ("overlapping occurrences: a a a", (("a", "a", "a", "</w>"), ("a", "a"))),
        ("overlapping occurrences: a a a a", (("a", "a", "a", "a"), ("a", "a"))),
        ("half of the pair at the end", (("a", "b", "a"), ("a", "b"))),
        ("a single symbol", (("x</w>",), ("x", "</w>"))),
    ]
    for description, (symbols, pair) in cases:
        got, verdict = ex.call_student(student_fn, (tuple(symbols), tuple(pair)), case=description,
                                    who=f"merge_pair_mine({symbols}, {pair})", quiet=quiet)
        if verdict is not None:
            return verdict
        expected = merge_pair(symbols, pair)
        if isinstance(got, list):
            got = tuple(got)
        if got != expected:
            return ex.report(FAILED, f"on case '{description}': merge_pair_mine({symbols}, {pair}) should be "
                                          f"{expected}, got {got!r}", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with course_lib.bpe.merge_pair.", quiet)


__all__ = [
    "PASSED",
    "check_buggy_ids",
    "check_encode",
    "check_merge_pair",
    "check_unk_count",
    "expected_buggy_ids",
    "expected_unk_count",
]
