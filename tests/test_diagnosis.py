"""Each bug of the articles this course grew from, injected into one part: the diagnosis must name that part."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from course_lib.layers import DecoderLayer, DecoderOnlyLayer
from course_lib.student.bug_finder import compare_with_course, find_my_bug
from course_lib.student.contracts import PART_NAMES
from course_lib.student.package import load_my_parts

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.fixture(scope="module")
def good_parts():
    parts = load_my_parts(NOTEBOOKS)
    assert sorted(parts) == sorted(PART_NAMES), "the committed notebooks save every part"
    return parts


# --- the injected bugs -------------------------------------------------------------------------

def doubled_index_table(max_len, d_model):
    """The articles' loop over 0, 2, 4, ... that then uses 2*i again (and 2*(i+1) for the cosine)."""
    table = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for i in range(0, d_model, 2):
            table[pos, i] = math.sin(pos / 10000 ** ((2 * i) / d_model))
            table[pos, i + 1] = math.cos(pos / 10000 ** ((2 * (i + 1)) / d_model))
    return table


class ArticlesNorm(nn.Module):
    """Unbiased std, eps outside the square root."""

    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        return self.gamma * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps) + self.beta


class LengthScaledEmbedding(nn.Module):
    """Scaled by sqrt(x.size(-1)) of the id tensor: the square root of the sequence length."""

    def __init__(self, vocab_size, d_model, pad_id=0):
        super().__init__()
        self.lut = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        nn.init.normal_(self.lut.weight, std=d_model**-0.5)

    def forward(self, ids):
        return self.lut(ids) * math.sqrt(ids.size(-1))


def no_causal_mask(size):
    return torch.ones(size, size, dtype=torch.bool)


def inverted_padding_mask(ids, pad_id=0):
    return (ids == pad_id)[:, None, None, :]


def inverted_polarity_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))  # True treated as "blocked"
    weights = scores.softmax(-1)
    return weights @ v, weights


def unscaled_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)  # the 1/sqrt(d_k) left out
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ v, weights


class DecoderWithoutCausalMask(nn.Module):
    """A decoder layer that never passes tgt_mask to its self-attention."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.inner = DecoderLayer(d_model, n_heads, d_ff, 0.0, norm_first)

    def forward(self, x, memory, tgt_mask, src_mask):
        return self.inner(x, memory, None, src_mask)


class GPTBlockWithoutCausalMask(nn.Module):
    """The articles' mistake in a GPT's block (notebook 15): the mask never reaches self-attention."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.inner = DecoderOnlyLayer(d_model, n_heads, d_ff, 0.0, norm_first)

    def forward(self, x, mask):
        return self.inner(x, None)


class TorchGPTBlock(nn.Module):
    """A GPT block on nn.MultiheadAttention (stage 1 leaves it to training), the mask converted to PyTorch's
    True = blocked; ``residual=False`` plants a mistake no contract sees: no residual connection anywhere."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False, residual=True):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(2))
        self.norm_first, self.residual = norm_first, residual

    def forward(self, x, mask):
        b, n, _ = x.shape
        blocked = ~mask.expand(b, 1, n, n)[:, 0].repeat_interleave(self.attn.num_heads, dim=0)  # (b * heads, n, n)
        keep = 1.0 if self.residual else 0.0
        n1, n2 = self.norms
        if self.norm_first:
            h = n1(x)
            x = keep * x + self.attn(h, h, h, attn_mask=blocked, need_weights=False)[0]
            return keep * x + self.ff(n2(x))
        x = n1(keep * x + self.attn(x, x, x, attn_mask=blocked, need_weights=False)[0])
        return n2(keep * x + self.ff(x))


def torch_gpt_block_without_residuals(d_model, n_heads, d_ff, norm_first=False):
    return TorchGPTBlock(d_model, n_heads, d_ff, norm_first, residual=False)


class DecoderIgnoringSource(nn.Module):
    """Built on nn.MultiheadAttention (stage 1 leaves such layers to training), and its "cross"-attention reads
    the decoder's own states instead of the memory: keeps every contract."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(3))

    def forward(self, x, memory, tgt_mask, src_mask):
        blocked = ~tgt_mask.expand(x.size(0), 1, x.size(1), x.size(1))[:, 0]  # PyTorch: True = blocked
        blocked = blocked.repeat_interleave(self.self_attn.num_heads, dim=0)  # (batch * heads, tgt_len, tgt_len)
        n1, n2, n3 = self.norms
        x = n1(x + self.self_attn(x, x, x, attn_mask=blocked, need_weights=False)[0])
        x = n2(x + self.cross_attn(x, x, x, attn_mask=blocked, need_weights=False)[0])  # the bug: x, not memory
        return n3(x + self.ff(x))


BUGS = [
    ("positional_encoding", doubled_index_table, "counted twice"),
    ("layer_norm", ArticlesNorm, "unbiased standard deviation"),
    ("token_embedding", LengthScaledEmbedding, "sqrt(sequence length"),
    ("causal_mask", no_causal_mask, "leaks the future"),
    ("decoder_layer", DecoderWithoutCausalMask, "leaks the future"),
    ("decoder_only_layer", GPTBlockWithoutCausalMask, "leaks the future"),
    ("padding_mask", inverted_padding_mask, "inverted polarity"),
    ("attention", inverted_polarity_attention, "attends to masked positions"),
    ("attention", unscaled_attention, "not divided by sqrt(d_k)"),
]


def test_the_committed_parts_pass_stage_one(good_parts):
    diagnosis = find_my_bug(good_parts, train_steps=0)
    assert diagnosis.faulty == [], str(diagnosis)
    assert len(diagnosis.findings) == len(PART_NAMES)


@pytest.mark.parametrize(("part", "buggy", "evidence"), BUGS, ids=[f"{p}-{b.__name__}" for p, b, _ in BUGS])
def test_each_injected_bug_is_named(good_parts, part, buggy, evidence):
    parts = dict(good_parts)
    parts[part] = buggy
    diagnosis = find_my_bug(parts, train_steps=0)
    assert diagnosis.faulty == [part], str(diagnosis)
    finding = next(f for f in diagnosis.findings if f.part == part)
    assert evidence in finding.evidence, finding.evidence


def test_a_bug_that_keeps_every_contract_is_found_by_training(good_parts):
    parts = {"decoder_layer": DecoderIgnoringSource}
    assert compare_with_course("decoder_layer", DecoderIgnoringSource).ok  # stage 1 cannot compare it
    diagnosis = find_my_bug(parts, train_steps=120)
    assert "decoder_layer" in diagnosis.faulty, str(diagnosis)
    finding = next(f for f in diagnosis.findings if f.part == "decoder_layer")
    assert finding.stage == 2 and "wrong German sentence" in finding.evidence


def test_a_gpt_block_that_keeps_every_contract_is_judged_by_training_a_gpt():
    """Stage 2 for notebook 15's part: a block stage 1 cannot compare is trained in a small GPT, not the translator;
    one without residual connections is named (its validation loss ends far above course_lib's), a right one not."""
    for block in (torch_gpt_block_without_residuals, TorchGPTBlock):
        assert compare_with_course("decoder_only_layer", block).ok  # stage 1 cannot compare it
        assert not compare_with_course("decoder_only_layer", block).decided
    diagnosis = find_my_bug({"decoder_only_layer": torch_gpt_block_without_residuals}, train_steps=150)
    assert diagnosis.faulty == ["decoder_only_layer"], str(diagnosis)
    finding = diagnosis.findings[0]
    assert finding.stage == 2 and "training steps of a small GPT" in finding.evidence, finding.evidence
    right = find_my_bug({"decoder_only_layer": TorchGPTBlock}, train_steps=150)
    assert right.faulty == [] and right.findings[0].stage == 2, str(right)
    assert [f.part for f in right.findings] == ["decoder_only_layer"]  # the translator was not trained for it


def test_unknown_part_names_are_rejected():
    with pytest.raises(ValueError, match="unknown part names"):
        find_my_bug({"attenshun": unscaled_attention})
