"""Tests for ``course_lib.embeddings``.

- The sinusoidal table equals the closed form, computed here independently with ``math.sin``/``math.cos``,
  and has the relative-position property PE(p+k) = R(k) PE(p) for every frequency pair.
- ``TokenEmbedding`` equals one-hot @ weight * sqrt(d_model), keeps a zero ``<pad>`` row through training,
  and is initialised with std d_model^-0.5.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from course_lib.embeddings import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    sinusoidal_table,
)


def _closed_form(max_len, d_model):
    table = [[0.0] * d_model for _ in range(max_len)]
    for pos in range(max_len):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            table[pos][2 * i] = math.sin(angle)
            table[pos][2 * i + 1] = math.cos(angle)
    return torch.tensor(table, dtype=torch.float64)


@pytest.mark.parametrize("max_len,d_model", [(50, 16), (128, 64), (7, 2)])
def test_table_equals_closed_form(max_len, d_model):
    table = sinusoidal_table(max_len, d_model)
    assert table.shape == (max_len, d_model) and table.dtype == torch.float32
    torch.testing.assert_close(table.double(), _closed_form(max_len, d_model), atol=1e-6, rtol=0)


def test_table_first_rows_and_last_column():
    table = sinusoidal_table(10, 8)
    assert torch.equal(table[0, 0::2], torch.zeros(4)) and torch.equal(table[0, 1::2], torch.ones(4))
    # the slowest pair (i = d/2 - 1) has frequency 1 / 10000^((d-2)/d)
    omega = 1 / 10000 ** (6 / 8)
    assert abs(float(table[9, 6]) - math.sin(9 * omega)) < 1e-6


def test_relative_position_is_a_rotation():
    d_model, max_len = 32, 100
    table = sinusoidal_table(max_len, d_model).double()
    for i in range(d_model // 2):
        omega = 1 / 10000 ** (2 * i / d_model)
        for k in (1, 3, 10, 37):
            angle = k * omega
            # (sin, cos)(a + b) = [[cos b, sin b], [-sin b, cos b]] @ (sin, cos)(a)
            rotation = torch.tensor(
                [[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]], dtype=torch.float64
            )
            for p in (0, 5, 20, 62):
                pair_p = table[p, 2 * i: 2 * i + 2]
                pair_pk = table[p + k, 2 * i: 2 * i + 2]
                torch.testing.assert_close(rotation @ pair_p, pair_pk, atol=1e-6, rtol=0)


def test_table_rejects_odd_d_model():
    with pytest.raises(ValueError, match="d_model must be even"):
        sinusoidal_table(10, 7)


def test_positional_encoding_module_adds_table():
    torch.manual_seed(0)
    pos = SinusoidalPositionalEncoding(d_model=16, max_len=40)
    assert pos.pe.shape == (40, 16)
    assert "pe" not in pos.state_dict()  # a fixed buffer, rebuilt rather than saved
    assert not any(True for _ in pos.parameters())
    x = torch.randn(3, 11, 16)
    torch.testing.assert_close(pos(x), x + _closed_form(11, 16).float(), atol=1e-6, rtol=0)


def test_learned_positions_shape_and_addition():
    torch.manual_seed(1)
    pos = LearnedPositionalEmbedding(max_len=20, d_model=8)
    assert pos.pe.shape == (20, 8) and pos.pe.requires_grad
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(pos(x), x + pos.pe[:5])


def test_token_embedding_equals_one_hot_matmul_scaled():
    torch.manual_seed(2)
    vocab_size, d_model = 11, 16
    emb = TokenEmbedding(vocab_size, d_model)
    ids = torch.tensor([[4, 0, 10, 3], [1, 2, 5, 5]])
    one_hot = F.one_hot(ids, vocab_size).float()  # (batch, seq, vocab)
    expected = one_hot @ emb.weight * math.sqrt(d_model)
    torch.testing.assert_close(emb(ids), expected, atol=1e-6, rtol=0)
    # scaled by sqrt(d_model), never by sqrt(sequence length): a token's vector does not depend on the length
    torch.testing.assert_close(emb(ids[:, :1]), emb(ids)[:, :1])


def test_token_embedding_pad_row_zero_and_stays_zero():
    torch.manual_seed(3)
    emb = TokenEmbedding(12, 8, pad_id=0)
    assert torch.equal(emb.weight[0], torch.zeros(8))
    opt = torch.optim.Adam(emb.parameters(), lr=0.1)
    ids = torch.tensor([[5, 0, 0, 7], [0, 3, 2, 0]])
    target = torch.randn(2, 4, 8)  # a loss linear in the vectors: the pad row would get gradient target[ids == 0]
    for _ in range(3):
        opt.zero_grad()
        (emb(ids) * target).sum().backward()
        assert torch.equal(emb.weight.grad[0], torch.zeros(8))
        assert emb.weight.grad[5].abs().sum() > 0
        opt.step()
    assert torch.equal(emb.weight[0], torch.zeros(8))
    assert torch.equal(emb(torch.tensor([[0]])), torch.zeros(1, 1, 8))


def test_token_embedding_other_pad_id():
    torch.manual_seed(4)
    emb = TokenEmbedding(6, 4, pad_id=5)
    assert torch.equal(emb.weight[5], torch.zeros(4)) and emb.weight[0].abs().sum() > 0


@pytest.mark.parametrize("d_model", [16, 64, 256])
def test_token_embedding_init_std(d_model):
    torch.manual_seed(5)
    emb = TokenEmbedding(2000, d_model)
    rows = emb.weight.detach()[1:]  # the pad row is zero by design
    expected = d_model**-0.5
    assert abs(float(rows.std()) - expected) < 0.03 * expected
    assert abs(float(rows.mean())) < 0.03 * expected
    # after scaling by sqrt(d_model) a vector has unit-scale entries, like the positional encoding
    with torch.no_grad():
        scaled = emb(torch.arange(1, 2000).view(1, -1))
    assert abs(float(scaled.std()) - 1.0) < 0.03
