"""Exercise checks for notebook 00 (welcome)."""

from __future__ import annotations

from course_lib.exercises import FAILED, PASSED, check_answer, not_attempted, report


def check_head_shape(answer, quiet: bool = False):
    """00.1: shape of the heads tensor for batch 32, seq 20, d_model 128, n_heads 8."""
    hint = "Heads are (batch, n_heads, seq, d_head) with d_head = d_model // n_heads."
    if answer is not None and not isinstance(answer, tuple):
        return report("00.1", FAILED, f"expected a tuple such as (1, 2, 3, 4), got {type(answer).__name__}", quiet)
    return check_answer("00.1", answer, (32, 8, 20, 16), hint=hint, quiet=quiet)


def _reference_longest(pairs, tokenizer):
    return max((german for german, _ in pairs), key=lambda sentence: len(tokenizer(sentence)))


def check_longest_sentence(student_fn, quiet: bool = False):
    """00.2: ``longest_sentence(pairs, tokenizer)`` returns the German sentence with the most tokens."""
    from course_lib.data import load_toy_corpus
    from course_lib.tokenization import Tokenizer

    tokenizer = Tokenizer("de")
    cases = [
        ("one pair", [("Hallo.", "Hello.")]),
        ("punctuation counts as tokens", [("Ja, gut.", "Yes, good."), ("Ja gut", "Yes good")]),
        ("a tie keeps the first", [("Der Hund.", "The dog."), ("Die Katze.", "The cat."), ("Ja.", "Yes.")]),
        ("the first 500 training pairs", load_toy_corpus("train")[:500]),
    ]
    for description, pairs in cases:
        try:
            got = student_fn(pairs, tokenizer)
        except NotImplementedError:
            return not_attempted("00.2", quiet=quiet)
        except Exception as exc:  # report any crash of the student's code
            return report("00.2", FAILED, f"on case '{description}' your function raised {type(exc).__name__}: {exc}", quiet)
        expected = _reference_longest(pairs, tokenizer)
        if got != expected:
            return report("00.2", FAILED, f"on case '{description}': expected {expected!r}, got {got!r}", quiet)
    return report("00.2", PASSED, f"all {len(cases)} cases agree with the reference.", quiet)
