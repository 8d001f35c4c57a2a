"""The notebook 13 checkers pass right answers, fail wrong ones with a hint (never the answer), report unattempted ones."""

import pytest
import torch
from torch import nn

from course_lib.exercises import nb13


class Repaired(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        var = x.var(-1, keepdim=True, unbiased=False)
        return self.gamma * (x - x.mean(-1, keepdim=True)) / torch.sqrt(var + self.eps) + self.beta


class HalfRepaired(Repaired):
    """eps moved inside the root, but still the unbiased variance."""

    def forward(self, x):
        var = x.var(-1, keepdim=True, unbiased=True)
        return self.gamma * (x - x.mean(-1, keepdim=True)) / torch.sqrt(var + self.eps) + self.beta


class Articles(Repaired):
    def forward(self, x):
        return self.gamma * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps) + self.beta


class Untouched(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        raise NotImplementedError


def test_13_1():
    assert nb13.check_fixed_layer_norm(Repaired, quiet=True)
    assert nb13.check_fixed_layer_norm(Untouched, quiet=True).status == "not attempted"
    articles = nb13.check_fixed_layer_norm(Articles, quiet=True)
    assert articles.status == "failed" and "unbiased standard deviation" in articles.message
    half = nb13.check_fixed_layer_norm(HalfRepaired, quiet=True)
    assert half.status == "failed" and "unbiased" in half.message


@pytest.mark.parametrize(("answer", "needle"), [(4, "one call per layer"), (2, "encoder only"),
                                                (24, "heads run side by side"), (7, "count the attention blocks"),
                                                ("6", "whole number")])
def test_13_2_wrong_answers_get_a_hint_not_the_answer(answer, needle):
    result = nb13.check_attention_calls(answer, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message
    assert " 6" not in result.message.replace(f"{answer} is", "")


def test_13_2_right_and_not_attempted():
    assert nb13.check_attention_calls(6, quiet=True)
    assert nb13.check_attention_calls(None, quiet=True).status == "not attempted"
