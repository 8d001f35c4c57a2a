"""Exercise checks of notebook 15: right answers pass, unattempted ones are named, known mistakes get their hint."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_lib.exercises import nb15
from course_lib.gpt import language_model_loss, next_token_probs


def unattempted(*args):
    raise NotImplementedError


def test_next_token_probs_right_and_unattempted():
    assert nb15.check_next_token_probs(next_token_probs, quiet=True)
    assert nb15.check_next_token_probs(unattempted, quiet=True).status == "not attempted"


def _dropping_ties(logits, temperature=1.0, top_k=None):
    x = logits / temperature
    if top_k:
        values, index = x.topk(top_k, dim=-1)
        x = torch.full_like(x, float("-inf")).scatter(-1, index, values)
    return x.softmax(-1)


def _not_renormalised(logits, temperature=1.0, top_k=None):
    probs = (logits / temperature).softmax(-1)
    if top_k:
        probs = probs * (logits >= logits.topk(top_k, dim=-1).values[:, -1:])
    return probs


def test_next_token_probs_mistakes_are_named():
    for student, words in [
        (lambda x, t=1.0, k=None: next_token_probs(x * t * t, t, k), "divide them by it"),
        (lambda x, t=1.0, k=None: next_token_probs(x, 1.0, k) / t, "after the softmax"),
        (_not_renormalised, "do not renormalise"),
        (_dropping_ties, "ties"),
        (lambda x, t=1.0, k=None: next_token_probs(x, t, min(k + 1, x.size(-1)) if k else None), "one logit too many"),
    ]:
        result = nb15.check_next_token_probs(student, quiet=True)
        assert not result and words in result.message, result.message


def test_language_model_loss_right_and_mistakes():
    assert nb15.check_language_model_loss(language_model_loss, quiet=True)
    assert nb15.check_language_model_loss(unattempted, quiet=True).status == "not attempted"
    for student, words in [
        (lambda lo, ids, pad: F.cross_entropy(lo.flatten(0, 1), ids.flatten(), ignore_index=pad), "no shift"),
        (lambda lo, ids, pad: F.cross_entropy(lo[:, 1:].flatten(0, 1), ids[:, :-1].flatten(), ignore_index=pad),
         "wrong way"),
        (lambda lo, ids, pad: F.cross_entropy(lo[:, :-1].flatten(0, 1), ids[:, 1:].flatten()), "padding is scored"),
        (lambda lo, ids, pad: language_model_loss(lo, ids, pad, reduction="sum"), "sum"),
        (nb15._per_sentence_mean, "per sentence"),
        (lambda lo, ids, pad: [1.0], "one-number tensor"),
    ]:
        result = nb15.check_language_model_loss(student, quiet=True)
        assert not result and words in result.message, result.message
