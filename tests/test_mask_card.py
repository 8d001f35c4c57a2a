"""Every shape and polarity that notebooks/mask_card.md states, checked against course_lib and PyTorch."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib import masks
from course_lib.attention import scaled_dot_product_attention
from course_lib.compat import to_torch_attn_mask, to_torch_key_padding_mask

ROOT = Path(__file__).resolve().parent.parent
CARD = ROOT / "notebooks" / "mask_card.md"
PAD = 0
SRC = torch.tensor([[5, 6, 7, 2], [5, 2, PAD, PAD]])  # (batch 2, src_len 4), 2 = <eos>
TGT = torch.tensor([[1, 8, 9], [1, 8, PAD]])  # (batch 2, tgt_len 3), 1 = <bos>


def test_the_functions_the_card_names_exist():
    named = set(re.findall(r"`(?:\w+\.)*(\w+)[`(]", CARD.read_text(encoding="utf-8")))
    for name in {"padding_mask", "decoder_self_attention_mask", "causal_mask", "combine_masks"}:
        assert name in named and hasattr(masks, name), name
    for name in {"to_torch_key_padding_mask", "to_torch_attn_mask", "generate_square_subsequent_mask"}:
        assert name in named, name


def test_padding_mask_shape_and_polarity():
    mask = masks.padding_mask(SRC, PAD)
    assert mask.shape == (2, 1, 1, 4) and mask.dtype == torch.bool
    assert mask[1, 0, 0].tolist() == [True, True, False, False]  # True = a real token = may attend


def test_causal_and_decoder_masks():
    causal = masks.causal_mask(3)
    assert causal.shape == (3, 3) and torch.equal(causal, torch.ones(3, 3, dtype=torch.bool).tril())
    decoder = masks.decoder_self_attention_mask(TGT, PAD)
    assert decoder.shape == (2, 1, 3, 3)
    assert torch.equal(decoder, masks.combine_masks(masks.padding_mask(TGT, PAD), causal))  # AND, broadcast
    assert decoder[:, 0, :, 0].all(), "every decoder query may read <bos>"
    assert masks.padding_mask(SRC, PAD).any(dim=-1).all(), "every source row has a real token"


def test_a_fully_masked_row_gives_zeros_not_nan():
    q = torch.randn(1, 1, 2, 4)
    mask = torch.tensor([[True, True], [False, False]])
    out, weights = scaled_dot_product_attention(q, q, q, mask=mask)
    assert torch.equal(weights[0, 0, 1], torch.zeros(2)) and torch.equal(out[0, 0, 1], torch.zeros(4))
    fused = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert not fused.isnan().any() and torch.equal(fused[0, 0, 1], torch.zeros(4))


def test_sdpa_true_means_may_attend():
    q = torch.randn(1, 1, 1, 4)
    k = torch.randn(1, 1, 2, 4)
    v = torch.tensor([[[[1.0, 0, 0, 0], [0, 1.0, 0, 0]]]])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor([[True, False]]))
    assert torch.allclose(out, v[..., :1, :])  # only the allowed key is read


@pytest.fixture
def torch_mha():
    torch.manual_seed(0)
    return nn.MultiheadAttention(4, 1, batch_first=True).eval()


def test_pytorch_key_padding_mask_true_means_blocked(torch_mha):
    x = torch.randn(2, 4, 4)
    kpm = to_torch_key_padding_mask(SRC, PAD)
    assert kpm.shape == (2, 4) and kpm[1].tolist() == [False, False, True, True]
    _, weights = torch_mha(x, x, x, key_padding_mask=kpm)
    assert torch.equal(weights[1, :, 2:], torch.zeros(4, 2))  # the True keys get no weight


def test_pytorch_attn_mask_true_means_blocked(torch_mha):
    x = torch.randn(1, 3, 4)
    course = masks.causal_mask(3)
    _, weights = torch_mha(x, x, x, attn_mask=to_torch_attn_mask(course))
    assert torch.equal(weights[0] > 0, course)  # converted: blocked above the diagonal, as the course's mask
    _, unconverted = torch_mha(x, x, x, attn_mask=course)
    assert torch.equal(unconverted[0, :2] > 0, ~course[:2]), "unconverted: exactly the wrong keys are read"


def test_generate_square_subsequent_mask_is_an_additive_float_mask():
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.shape == (3, 3) and mask.is_floating_point()
    assert torch.isinf(mask.triu(1)[0, 1:]).all() and (mask.tril() == 0).all()


@pytest.mark.parametrize("stem", ["05_multi_head_attention", "06_masking", "08_encoder", "09_decoder"])
def test_the_card_is_linked_from_the_notebooks_that_use_masks(stem):
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "(mask_card.md)" in text, f"{stem} does not link the mask card"
