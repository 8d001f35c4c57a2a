"""The feedback policy of every exercise checker (see ``course_lib/exercises/__init__.py``).

* Value exercises (the answer is a number, shape, token, list or set): the right answer passes, ``None``
  is "not attempted", every wrong answer fails, names what is wrong and gives its own hint, and the
  message never contains the expected value in any of its usual spellings.
* Function exercises: a function that raises ``NotImplementedError`` is "not attempted" and one that
  crashes fails with the exception named (both through the shared ``call_student``).
* Every ``check_*`` of ``nb00`` ... ``nb15`` is declared with ``@exercise`` and is in one of the two tables, so a
  new checker cannot skip this.
The per-notebook files ``test_exercises_nbNN.py`` test the right answers and the recognised mistakes of
the function exercises.
"""

from __future__ import annotations

import importlib
import inspect
import math

import pytest

from course_lib.exercises import NOT_ATTEMPTED, PASSED, Exercise, call_student

MODULES = [importlib.import_module(f"course_lib.exercises.nb{n:02d}") for n in range(16)]


def _checker(name: str):
    module, function = name.split(".")
    return getattr(importlib.import_module(f"course_lib.exercises.{module}"), function)


PICTURE = [[1, 1, 1, 0]] * 5

# checker -> (right answer, [(wrong answer, words of the hint that wrong answer must get), ...])
VALUE_CHECKERS = {
    "nb13.check_attention_calls": (6, [
        (4, "one call per layer"),
        (2, "encoder only"),
        (24, "heads run side by side"),
        (7, "count the attention blocks"),
    ]),
    "nb00.check_head_shape": ((32, 8, 20, 16), [
        ((32, 20, 8, 16), "transpose(1, 2)"),
        ((32, 8, 20, 128), "d_head = d_model // n_heads"),
        ((32, 20, 128), "before the split"),
        ((1, 2, 3, 4), "d_head = d_model // n_heads"),
    ]),
    "nb01.check_unk_count": (4, [
        (3, "case-sensitive"),
        (1, "a token seen once is <unk> too"),
        (5, "seen exactly twice"),
        (6, "<bos> and <eos>"),
        (0, "occurs at least twice"),
    ]),
    "nb01.check_buggy_ids": ([3, 4, 5, 3, 3], [
        ([1, 4, 5, 2, 0], "*correct* vocabulary"),
        ([0, 4, 5, 0, 0], "which assignment is left at the end"),
        ([2, 4, 5, 2, 2], "overwrites an earlier one"),
    ]),
    "nb02.check_norms": ((256.0, 16.0, math.sqrt(128)), [
        ((16.0, 16.0, 11.31), "course's init (b)"),
        ((256.0, 256.0, 11.31), "N(0, 1) init (a)"),
        ((256.0, 16.0, 16.0), "sin² + cos² = 1"),
    ]),
    "nb03.check_wavelength": (2 * math.pi * 10, [
        (10.0, "positions per radian"),
        (0.1, "frequency"),
        (2 * math.pi * 100, "double-counting"),
        (30.0, "2π / ω_i"),
    ]),
    "nb04.check_dot_product_variance": (64.0, [
        (8.0, "standard deviation"),
        (1.0, "*after* dividing"),
        (4096.0, "not multiplied"),
        (32.0, "variances of independent terms add up"),
    ]),
    "nb04.check_most_attended_key": ("Ball", [
        ("Katze", "grows with the key's length"),
        ("Hund", "compute q · k for every key"),
        ("Haus", "compute q · k for every key"),
    ]),
    "nb05.check_parameter_count": (4 * 512 * 512 + 4 * 512, [
        (4 * 512 * 512, "biases"),
        (3 * 512 * 512 + 3 * 512, "output projection"),
        (8 * (4 * 512 * 512 + 4 * 512), "heads share"),
        (4 * 512 * 64 + 4 * 64, "one head's slice"),
        (7, "each with a bias"),
    ]),
    "nb06.check_picture": (PICTURE, [
        ([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 0]], "future to hide"),
        ([[1, 1, 1, 0]] * 3 + [[0, 0, 0, 0]] * 2, "keys (columns) only"),
        ([[1, 1, 1, 1]] * 5, "<pad> key"),
    ]),
    "nb07.check_ffn_parameter_count": (2 * 512 * 2048 + 2048 + 512, [
        (2 * 512 * 2048, "bias vector"),
        (2 * 512 * 2048 + 2 * 2048, "OUTPUT feature"),
        (2 * 512 * 2048 + 2 * 512, "hidden unit"),
        (512 * 2048 + 2048, "first linear layer only"),
        (12345, "Count W_1"),
    ]),
    "nb08.check_encoder_layer_parameters": (12_596_224, [
        (4 * 1024 * 1024 + 2 * 1024 * 4096, "weight matrices only"),
        (4 * (1024 * 1024 + 1024) + 2 * 1024 * 4096 + 4096 + 1024, "forgot the two LayerNorms"),
        (12345, "Add up attention"),
    ]),
    "nb08.check_shapes": (((16, 1, 1, 23), (16, 8, 23, 23), (16, 23, 128)), [
        (((16, 23), (16, 8, 23, 23), (16, 23, 128)), "broadcasts over the heads"),
        (((16, 1, 1, 23), (16, 23, 23), (16, 23, 128)), "every head has its own map"),
        (((16, 1, 1, 23), (16, 8, 23, 23), (16, 23, 512)), "n_layers and d_ff do not appear"),
    ]),
    "nb09.check_cross_attention_shape": ((32, 4, 14, 12), [
        ((32, 4, 12, 14), "queries come from the DECODER"),
        ((32, 4, 13, 11), "Count the special tokens"),
        ((32, 4, 14, 14), "decoder's SELF-attention"),
        ((32, 14, 12), "keep a head dimension"),
    ]),
    "nb10.check_recipe_fix": ({"B", "D"}, [
        ({"A", "D"}, "A does not help"),
        ({"B"}, "1 of the two real fixes is missing"),
        ({"C", "E"}, "2 of the two real fixes are missing"),
    ]),
    "nb11.check_normalised_score": (-3.2 / ((5 + 9) / 6) ** 0.6, [
        (-3.2 * ((5 + 9) / 6) ** 0.6, "multiplied by the penalty"),
        (-3.2 / ((5 + 9) / 6), "exponent alpha"),
        (-3.2 / 9, "plain average per token"),
        (-1.0, "Divide log p by"),
    ]),
}

# 11.3 needs a trained model: its policy is tested in test_exercises_nb11.py (the message never names the token).
MODEL_CHECKERS = {"nb11.check_most_attended"}

FUNCTION_CHECKERS = {  # checker -> how many student functions it takes
    "nb00.check_longest_sentence": 1, "nb01.check_encode": 1, "nb01.check_merge_pair": 1,
    "nb02.check_one_hot_embed": 1, "nb02.check_scaled_embedding": 1, "nb03.check_encode_positions": 1,
    "nb03.check_fixed_table": 1, "nb04.check_attention_by_hand": 1, "nb05.check_split_merge": 2,
    "nb05.check_fixed_multi_head_attention": 1, "nb06.check_decoder_mask": 1, "nb06.check_fixed_masks": 1,
    "nb06.check_to_pytorch": 1,
    "nb07.check_fold_layer_norm": 1, "nb07.check_fixed_norm": 1, "nb07.check_pre_norm_sublayer": 1,
    "nb08.check_post_norm_layer": 1, "nb09.check_shift_right": 1, "nb09.check_greedy_step": 1,
    "nb10.check_warmup_lr": 1, "nb10.check_smoothed_targets": 1, "nb10.check_batch_padding_fraction": 1,
    "nb11.check_beam_step": 1, "nb12.check_rms_norm": 1, "nb12.check_parameter_count": 1,
    "nb12.check_rotate_pair": 1, "nb13.check_fixed_layer_norm": 1, "nb14.check_peak_lr": 1,
    "nb14.check_unknown_rate": 1, "nb15.check_next_token_probs": 1, "nb15.check_language_model_loss": 1,
}


def _spellings(value) -> list[str]:
    """Ways a message could show ``value``: repr, str, rounded, with thousands separators, entries joined."""
    if isinstance(value, (set, frozenset)):
        return ["".join(sorted(value)), " and ".join(sorted(value))]
    if isinstance(value, str):
        return [repr(value), f"'{value}'", f'"{value}"']
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [str(value), f"{value:,}"]
    if isinstance(value, float):
        return sorted({f"{value:.{d}f}" for d in (2, 3, 4)} | {f"{value:.4g}", repr(value)})
    if isinstance(value, (tuple, list)):
        out = [repr(value), repr(tuple(value)), repr(list(value)), ", ".join(repr(v) for v in value)]
        if all(isinstance(v, (tuple, list)) for v in value):
            for item in value:
                out += [repr(tuple(item))]
        return out
    return [repr(value)]


def test_every_checker_is_covered_by_the_policy_tables():
    found = {f"{m.__name__.rsplit('.', 1)[1]}.{name}" for m in MODULES
             for name, declared in inspect.getmembers(m, lambda obj: isinstance(obj, Exercise))
             if declared.__module__ == m.__name__}
    covered = set(VALUE_CHECKERS) | set(FUNCTION_CHECKERS) | MODEL_CHECKERS
    undeclared = [f"{m.__name__}.{name}" for m in MODULES for name, fn in inspect.getmembers(m, inspect.isfunction)
                  if name.startswith("check_") and fn.__module__ == m.__name__]
    assert not undeclared, f"declare these with @exercise(...): {undeclared}"
    assert found == covered, f"not in a table: {sorted(found - covered)}; gone: {sorted(covered - found)}"


@pytest.mark.parametrize("name", sorted(VALUE_CHECKERS))
def test_value_checker_passes_the_right_answer_and_waits_for_none(name, capsys):
    check = _checker(name)
    right, _ = VALUE_CHECKERS[name]
    result = check(right, quiet=True)
    assert result.status == PASSED, result.message
    pending = check(None)
    assert pending.status == NOT_ATTEMPTED and "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize(("name", "index"), [(name, i) for name, (_, wrongs) in sorted(VALUE_CHECKERS.items())
                                             for i in range(len(wrongs))])
def test_value_checker_fails_with_a_hint_and_never_shows_the_answer(name, index, capsys):
    check = _checker(name)
    right, wrongs = VALUE_CHECKERS[name]
    wrong, hint = wrongs[index]
    result = check(wrong)
    printed = capsys.readouterr().out
    assert result.status == "failed", result.message
    assert hint in result.message, result.message
    assert printed.strip() == str(result)
    for spelling in _spellings(right):
        assert spelling not in printed, f"the message shows the answer ({spelling!r}): {printed}"


@pytest.mark.parametrize("name", sorted(FUNCTION_CHECKERS))
def test_function_checker_reports_not_attempted_and_crashes(name, capsys):
    check = _checker(name)
    n = FUNCTION_CHECKERS[name]

    def unattempted(*args, **kwargs):
        raise NotImplementedError

    def crash(*args, **kwargs):
        raise ValueError("boom in the student's code")

    pending = check(*[unattempted] * n)
    assert pending.status == NOT_ATTEMPTED and "not attempted yet" in capsys.readouterr().out
    crashed = check(*[crash] * n, quiet=True)
    assert crashed.status == "failed" and "raised ValueError: boom in the student's code" in crashed.message


def test_call_student_returns_the_value_or_the_verdict():
    assert call_student("99.1", lambda a, b: a + b, (2, 3), quiet=True) == (5, None)

    def unattempted():
        raise NotImplementedError

    value, verdict = call_student("99.1", unattempted, quiet=True, todo="write it")
    assert value is None and verdict.status == NOT_ATTEMPTED and verdict.message == "write it and run the cell again."
    value, verdict = call_student("99.1", lambda: 1 / 0, case="zero", who="your function", quiet=True)
    assert value is None and verdict.status == "failed"
    assert verdict.message == "on case 'zero' your function raised ZeroDivisionError: division by zero"
