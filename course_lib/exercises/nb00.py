"""Exercise checks for notebook 00 (welcome).

00.1 the shape of the heads tensor (a value: the checker never prints it).
00.2 ``longest_sentence(pairs, tokenizer)``: the German sentence with the most tokens; the checker
     recognises comparing characters instead of tokens, keeping the last of a tie, and returning the
     English side or the token list.
"""

from __future__ import annotations

from course_lib.exercises import FAILED, PASSED, VALUE, exercise

HEAD_SHAPE_QUESTION = {"batch": 32, "seq": 20, "d_model": 128, "n_heads": 8}


def _expected_head_shape() -> tuple[int, int, int, int]:
    q = HEAD_SHAPE_QUESTION
    return q["batch"], q["n_heads"], q["seq"], q["d_model"] // q["n_heads"]


def _head_shape_hint(answer: tuple) -> str:
    b, h, s, d = HEAD_SHAPE_QUESTION["batch"], HEAD_SHAPE_QUESTION["n_heads"], HEAD_SHAPE_QUESTION["seq"], \
        HEAD_SHAPE_QUESTION["d_model"]
    known = {
        (b, s, h, d // h): "That is the shape right after the view; the heads then move in front of the sequence "
                           "(transpose(1, 2)) so that each head is a batch of its own.",
        (b, h, s, d): "Each head gets a slice of the features, d_head = d_model // n_heads, not all d_model of them.",
        (b, s, d): "That is the shape before the split into heads.",
        (b, h, d // h, s): "The sequence comes before d_head: each head holds one d_head-vector per position.",
        (h, b, s, d // h): "The batch stays the first dimension; the heads come second.",
    }
    return known.get(tuple(answer), "Heads are (batch, n_heads, seq, d_head) with d_head = d_model // n_heads.")


@exercise("00.1", points=1, kind=VALUE)
def check_head_shape(ex, answer, quiet: bool = False):
    """Shape of the heads tensor for batch 32, seq 20, d_model 128, n_heads 8."""
    if answer is not None and not isinstance(answer, tuple):
        return ex.report(FAILED, f"expected a tuple such as (1, 2, 3, 4), got {type(answer).__name__}", quiet)
    hint = _head_shape_hint(answer) if answer is not None else ""
    return ex.check_answer(answer, _expected_head_shape(), hint=hint, quiet=quiet)


def _reference_longest(pairs, tokenizer):
    return max((german for german, _ in pairs), key=lambda sentence: len(tokenizer(sentence)))


def _longest_mistake(got, pairs, tokenizer) -> str:
    """A hint naming the recognised mistake behind ``got``, or a general one."""
    germans = [german for german, _ in pairs]
    if isinstance(got, (list, tuple)) and all(isinstance(t, str) for t in got) and got and got[0] not in germans:
        return " Return the German sentence itself (a string), not its list of tokens."
    if isinstance(got, tuple) and len(got) == 2 and got[0] in germans:
        return " Return only the German sentence, not the (german, english) pair."
    if not isinstance(got, str):
        return f" Return the German sentence as a string, got {type(got).__name__}."
    if got in [english for _, english in pairs]:
        return " That is an English sentence; compare the German side of each pair (the first element)."
    if got == max(germans, key=len):
        return (" Your function picked the sentence with the most characters: count tokens instead, "
                "len(tokenizer(sentence)); a comma or full stop is a token of its own, a long word is only one.")
    longest = max(len(tokenizer(g)) for g in germans)
    if got in germans and len(tokenizer(got)) == longest:
        return " Several sentences have the most tokens; return the first of them (max keeps the first, `>=` the last)."
    return " Count the tokens of every German sentence with tokenizer(sentence) and keep one with the most."


@exercise("00.2", points=2)
def check_longest_sentence(ex, student_fn, quiet: bool = False):
    """``longest_sentence(pairs, tokenizer)`` returns the German sentence with the most tokens."""
    from course_lib.data import load_toy_corpus
    from course_lib.tokenization import Tokenizer

    tokenizer = Tokenizer("de")
    cases = [
        ("one pair", [("Hallo.", "Hello.")]),
        ("punctuation counts as tokens: 'Ja, ja, gut.' has 6 tokens",
         [("Donaudampfschifffahrt", "Danube steamboat shipping"), ("Ja, ja, gut.", "Yes, yes, good.")]),
        ("a tie of 3 tokens each: keep the first", [("Die Katze.", "The cat."), ("Der Hund.", "The dog."),
                                                    ("Ja.", "Yes.")]),
        ("the first 500 training pairs", load_toy_corpus("train")[:500]),
    ]
    for description, pairs in cases:
        got, verdict = ex.call_student(student_fn, (list(pairs), tokenizer), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        if got != _reference_longest(pairs, tokenizer):
            return ex.report(FAILED, f"on case '{description}': your function returned {got!r}, which is not "
                                          f"the first German sentence with the most tokens."
                                          f"{_longest_mistake(got, pairs, tokenizer)}", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with the reference.", quiet)
