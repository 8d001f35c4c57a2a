"""Hidden tests for notebook 14 (from the toy corpus to real data)."""

from __future__ import annotations

from course_lib.exercises import nb14

from . import Rules, hidden_test


def _recipe_peak(d_model: int, layers: int) -> float:
    """The recipe's rule, written out here: the toy peak (64 * 200)^-0.5, times width^-1 and depth^-0.5."""
    toy_peak = (64 * 200) ** -0.5
    return toy_peak * (max(d_model, 64) / 64) ** -1.0 * (max(layers, 2) / 2) ** -0.5


@hidden_test(nb14.check_peak_lr, cases=5)
def peak_lr(grader, student_fn):
    for case, d_model, layers in [
        ("d_model 96, 5 layers", 96, 5),
        ("d_model 384, 4 layers", 384, 4),
        ("d_model 1024, 8 layers", 1024, 8),
        ("narrower than the toy but deeper: d_model 48, 3 layers", 48, 3),
        ("wider than the toy, one layer: d_model 200, 1 layer", 200, 1),
    ]:
        got = grader.call(student_fn, case, d_model, layers)
        if hasattr(got, "item"):
            got = got.item()
        expected = _recipe_peak(d_model, layers)
        grader.expect(case, got, expected, atol=0.0, rtol=1e-6)


@hidden_test(nb14.check_unknown_rate, cases=5, rules=Rules(allow=("Vocab.*",),
                                                                stated="own code (course_lib's unknown_rate is imported above)"))
def unknown_rate(grader, student_fn):
    from course_lib.tokenization import Vocab

    vocab = Vocab.build([["ein", "mann", "fährt", "rad", "."], ["zwei", "hunde", "spielen", "im", "schnee", "."]])
    for case, token_lists in [
        ("one sentence, two unknown tokens of six", [["ein", "kind", "fährt", "ski", "im", "."]]),
        ("an unknown word repeated in three sentences",
         [["ein", "pferd", "."], ["zwei", "pferd", "spielen"], ["pferd", "pferd", "rad", "im", "schnee", "."]]),
        ("every token unknown", [["a", "man", "rides"], ["two", "dogs"]]),
        ("an empty sentence among others", [[], ["ein", "mann", "."], ["katze"]]),
        ("only empty sentences", [[], []]),
    ]:
        tokens = [t for sentence in token_lists for t in sentence]
        expected = sum(t not in vocab for t in tokens) / len(tokens) if tokens else 0.0
        got = grader.call(student_fn, case, [list(s) for s in token_lists], vocab)
        grader.expect(case, got, float(expected), atol=1e-9, rtol=0.0)
