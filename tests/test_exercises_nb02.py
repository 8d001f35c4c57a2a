"""Checkers of notebook 02: each passes a right answer, fails a wrong one with a specific message, and
reports an unattempted exercise as not attempted."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from course_lib.exercises import nb02


def _unattempted(*args):
    raise NotImplementedError


# 02.1 one-hot lookup -------------------------------------------------------------------------


def _broadcast_one_hot(ids, weight):
    return (ids[..., None] == torch.arange(weight.size(0))).to(weight.dtype) @ weight


def test_one_hot_right_answers_pass(capsys):
    assert nb02.check_one_hot_embed(_broadcast_one_hot)
    assert "✅ Exercise 02.1 passed" in capsys.readouterr().out
    assert nb02.check_one_hot_embed(lambda ids, w: F.one_hot(ids, w.size(0)).float() @ w, quiet=True)


def test_one_hot_wrong_answers_fail_with_specifics():
    off_by_one = nb02.check_one_hot_embed(lambda ids, w: _broadcast_one_hot((ids + 1) % w.size(0), w), quiet=True)
    assert not off_by_one and "one sentence, vocab 6, d_model 3" in off_by_one.message
    assert "values differ" in off_by_one.message
    transposed = nb02.check_one_hot_embed(lambda ids, w: _broadcast_one_hot(ids, w).transpose(1, 2), quiet=True)
    assert not transposed and "values differ" in transposed.message  # same (1, 3, 3) shape, wrong numbers
    boolean = nb02.check_one_hot_embed(lambda ids, w: ids[..., None] == torch.arange(w.size(0)), quiet=True)
    assert not boolean and "dtype torch.bool" in boolean.message
    crash = nb02.check_one_hot_embed(lambda ids, w: ids.float() @ w, quiet=True)
    assert not crash and "raised RuntimeError" in crash.message and "weight shape (6, 3)" in crash.message


def test_one_hot_not_attempted():
    assert nb02.check_one_hot_embed(_unattempted, quiet=True).status == "not attempted"


# 02.2 sqrt(seq_len) bug ----------------------------------------------------------------------


class _Fixed(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, x):
        return self.embedding(x) * math.sqrt(self.embedding.embedding_dim)


class _Buggy(_Fixed):
    def forward(self, x):
        return self.embedding(x) * math.sqrt(x.size(-1))


class _Unscaled(_Fixed):
    def forward(self, x):
        return self.embedding(x)


class _Unattempted(_Fixed):
    def forward(self, x):
        raise NotImplementedError


class _NoEmbeddingAttribute(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.table = nn.Embedding(vocab_size, d_model)

    def forward(self, x):
        return self.table(x)


def test_scaled_embedding_fixed_version_passes(capsys):
    assert nb02.check_scaled_embedding(_Fixed)
    assert "whatever the sentence length" in capsys.readouterr().out


def test_scaled_embedding_bug_is_named():
    result = nb02.check_scaled_embedding(_Buggy, quiet=True)
    assert not result and "seq_len 5, d_model 16" in result.message  # the first case (seq_len = d_model) hides it
    assert "sqrt(seq_len) = 2.236" in result.message and "sqrt(d_model) = 4.000" in result.message


def test_scaled_embedding_missing_scale_and_structure():
    unscaled = nb02.check_scaled_embedding(_Unscaled, quiet=True)
    assert not unscaled and "not scaled at all" in unscaled.message
    renamed = nb02.check_scaled_embedding(_NoEmbeddingAttribute, quiet=True)
    assert not renamed and "self.embedding" in renamed.message


def test_scaled_embedding_not_attempted():
    result = nb02.check_scaled_embedding(_Unattempted, quiet=True)
    assert result.status == "not attempted" and "delete the `raise NotImplementedError` line" in result.message


# 02.3 norms ----------------------------------------------------------------------------------


def test_norms_right_answer_and_tolerance(capsys):
    assert nb02.expected_norms() == (256.0, 16.0, math.sqrt(128))
    assert nb02.check_norms((256.0, 16.0, 11.31))
    assert "correct: 256, 16 and 11.31" in capsys.readouterr().out
    assert nb02.check_norms([255, 16.1, 11.4], quiet=True)  # within 2 %


def test_norms_wrong_answers_point_at_the_part():
    swapped = nb02.check_norms((16.0, 256.0, 11.31), quiet=True)
    assert not swapped and "(a) N(0, 1) init: 16.00 is not right" in swapped.message and "course's init (b)" in swapped.message
    assert "256" not in swapped.message
    pe_wrong = nb02.check_norms((256.0, 16.0, 16.0), quiet=True)
    assert not pe_wrong and "(c) positional encoding" in pe_wrong.message and "sin² + cos² = 1" in pe_wrong.message
    assert not nb02.check_norms((256.0, 16.0), quiet=True)
    assert not nb02.check_norms("256, 16, 11.3", quiet=True)


def test_norms_not_attempted():
    assert nb02.check_norms(None, quiet=True).status == "not attempted"
