"""Checkers of notebook 04: right answers pass, wrong ones fail with a specific message, no answer is 'not attempted'."""

import math

import pytest
import torch

from course_lib.exercises import nb04

# ----------------------------------------------------------------------------- 04.1 variance


def test_variance_right_and_missing(capsys):
    assert nb04.check_dot_product_variance(64)
    assert "✅ Exercise 04.1 passed" in capsys.readouterr().out
    assert nb04.check_dot_product_variance(64.2, quiet=True)
    assert nb04.check_dot_product_variance(torch.tensor(64.0), quiet=True)
    assert nb04.check_dot_product_variance(None, quiet=True).status == "not attempted"


@pytest.mark.parametrize(
    "answer, hint",
    [(8, "standard deviation"), (1, "after"), (4096, "add up"), (32, "variances of independent terms add up")],
)
def test_variance_explains_the_mistake(answer, hint):
    result = nb04.check_dot_product_variance(answer, quiet=True)
    assert result.status == "failed" and "64.0" not in result.message and hint in result.message


def test_variance_rejects_text():
    result = nb04.check_dot_product_variance("64", quiet=True)
    assert result.status == "failed" and "expected a number, got str" in result.message


# ----------------------------------------------------------------------------- 04.2 which key


def test_most_attended_key_right_and_missing():
    assert nb04.check_most_attended_key("Ball", quiet=True)
    assert nb04.check_most_attended_key(" Ball ", quiet=True)
    assert nb04.check_most_attended_key(None, quiet=True).status == "not attempted"


def test_most_attended_key_is_the_largest_softmax_weight():
    q = torch.tensor(nb04.WHICH_KEY_QUERY)
    tokens = list(nb04.WHICH_KEY_KEYS)
    keys = torch.tensor([nb04.WHICH_KEY_KEYS[t] for t in tokens])
    weights = (keys @ q / math.sqrt(2)).softmax(dim=-1)
    assert tokens[int(weights.argmax())] == "Ball"


@pytest.mark.parametrize(
    "answer, hint",
    [("Katze", "direction"), ("Hund", "Hund scores 2"), ("Maus", "Choose one of"), ("ball", "Choose one of")],
)
def test_most_attended_key_explains_the_mistake(answer, hint):
    result = nb04.check_most_attended_key(answer, quiet=True)
    assert result.status == "failed" and hint in result.message
    assert "Ball" not in result.message.replace("Choose one of ['Ball'", "")  # listing the options is no giveaway


def test_most_attended_key_wants_a_string():
    result = nb04.check_most_attended_key(1, quiet=True)
    assert result.status == "failed" and "as a string" in result.message


# ----------------------------------------------------------------------------- 04.3 attention by hand


def _attention(q, k, v, mask=None, scale=True, dim=-1, stable=True, use_mask=True):
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(q.size(-1))
    if mask is not None and use_mask:
        scores = scores.masked_fill(~mask, float("-inf"))
    if stable:
        scores = scores - scores.amax(dim=dim, keepdim=True)
    e = scores.exp()
    return (e / e.sum(dim=dim, keepdim=True)) @ v


def test_attention_by_hand_passes_the_solution(capsys):
    assert nb04.check_attention_by_hand(_attention)
    assert "✅ Exercise 04.3 passed: all 6 cases" in capsys.readouterr().out


@pytest.mark.parametrize(
    "kwargs, case, hint",
    [
        ({"stable": False}, "large scores", "overflows"),
        ({"scale": False}, "one query, 3 keys", "divide the scores by sqrt(d_k)"),
        ({"dim": -2}, "one query, 3 keys", "normalised over the queries"),
        ({"use_mask": False}, "padding mask", "mask was ignored"),
    ],
)
def test_attention_by_hand_names_the_mistake(kwargs, case, hint):
    result = nb04.check_attention_by_hand(lambda q, k, v, mask=None: _attention(q, k, v, mask, **kwargs), quiet=True)
    assert result.status == "failed" and case in result.message and hint in result.message


def test_attention_by_hand_tuple_crash_and_unattempted():
    returned_tuple = nb04.check_attention_by_hand(lambda q, k, v, mask=None: (_attention(q, k, v, mask), None), quiet=True)
    assert returned_tuple.status == "failed" and "Return only the output" in returned_tuple.message
    crashed = nb04.check_attention_by_hand(lambda q, k, v: _attention(q, k, v), quiet=True)  # no mask argument
    assert crashed.status == "failed" and "padding mask" in crashed.message and "raised TypeError" in crashed.message

    def unattempted(q, k, v, mask=None):
        raise NotImplementedError

    assert nb04.check_attention_by_hand(unattempted, quiet=True).status == "not attempted"
