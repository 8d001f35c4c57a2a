"""Hidden tests for notebook 00 (welcome)."""

from __future__ import annotations

from course_lib.exercises import nb00

from . import Rules, hidden_test


@hidden_test(nb00.check_head_shape)
def head_shape(grader, answer):
    if answer is not None and not isinstance(answer, tuple):
        raise grader.wrong(f"answer with a tuple of four ints, got {type(answer).__name__}.")
    grader.check_value(answer, (32, 8, 20, 16))


@hidden_test(nb00.check_longest_sentence, cases=5, rules=Rules(allow=("Tokenizer.*",)))
def longest_sentence(grader, student_fn):
    from course_lib.data import load_toy_corpus
    from course_lib.tokenization import Tokenizer

    tokenizer = Tokenizer("de")

    def reference(pairs):
        best, best_len = None, -1
        for german, _ in pairs:
            n = len(tokenizer(german))
            if n > best_len:  # strictly longer: a tie keeps the first
                best, best_len = german, n
        return best

    valid = load_toy_corpus("valid")
    cases = [
        ("the longest sentence comes last", [("Ja.", "Yes."), ("Nein, danke.", "No, thanks."),
                                             ("Der kleine Hund schläft heute nicht.", "The little dog does not sleep today.")]),
        ("three equally long sentences: keep the first", [("Ich sehe dich.", "I see you."), ("Du siehst mich.", "You see me."),
                                                          ("Er sieht sie.", "He sees her."), ("Ja.", "Yes.")]),
        ("hyphens and commas are tokens", [("Eins zwei drei vier", "a"), ("Ja, ja, ja, ja, ja.", "b")]),
        ("300 validation pairs", valid[:300]),
        ("validation pairs in reverse order", valid[300:700][::-1]),
    ]
    for case, pairs in cases:
        got = grader.call(student_fn, case, list(pairs), tokenizer)
        grader.expect(case, got, reference(pairs))
