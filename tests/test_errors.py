"""Bad input gives a clear exception that names the argument and says what was expected.

One test per mistake a student is likely to make; each asserts on the message with ``match=``.
"""

import pytest
import torch

from course_lib.attention import MultiHeadAttention, scaled_dot_product_attention
from course_lib.embeddings import SinusoidalPositionalEncoding, TokenEmbedding
from course_lib.model import Transformer, TransformerConfig


def _model(**overrides):
    torch.manual_seed(0)
    args = dict(src_vocab_size=20, tgt_vocab_size=15, d_model=16, n_heads=4, n_encoder_layers=1,
                n_decoder_layers=1, d_ff=32, max_len=12)
    args.update(overrides)
    return Transformer(TransformerConfig(**args)).eval()


def _src_tgt(batch=2, src_len=6, tgt_len=5):
    return torch.randint(4, 20, (batch, src_len)), torch.randint(4, 15, (batch, tgt_len))


def test_mha_d_model_not_divisible_by_n_heads():
    with pytest.raises(ValueError, match=r"d_model must be divisible by n_heads, got d_model=10, n_heads=4"):
        MultiHeadAttention(10, 4)


def test_config_d_model_not_divisible_by_n_heads():
    with pytest.raises(ValueError, match=r"d_model must be divisible by n_heads, got d_model=30, n_heads=4"):
        TransformerConfig(d_model=30, n_heads=4)


def test_config_non_positive_sizes_and_bad_options():
    with pytest.raises(ValueError, match="src_vocab_size must be positive"):
        TransformerConfig(src_vocab_size=0)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        TransformerConfig(dropout=1.0)
    with pytest.raises(ValueError, match="positional must be 'sinusoidal', 'learned' or 'rotary'"):
        TransformerConfig(positional="alibi")


def test_sdpa_wrong_rank():
    torch.manual_seed(0)
    q = torch.randn(8)  # a single vector: no sequence dimension
    with pytest.raises(ValueError, match=r"q must have shape \(\.\.\., seq, d\), got \(8,\)"):
        scaled_dot_product_attention(q, torch.randn(3, 8), torch.randn(3, 8))


def test_mha_wrong_rank():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(5, 8)  # forgot the batch dimension
    with pytest.raises(ValueError, match=r"query must have shape \(batch, seq, d_model\), got \(5, 8\)"):
        mha(x, x, x)


def test_sdpa_mismatched_last_dimension_of_q_and_k():
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="q and k must have the same last dimension d_k"):
        scaled_dot_product_attention(torch.randn(2, 4, 8), torch.randn(2, 5, 6), torch.randn(2, 5, 6))


def test_mha_wrong_feature_size():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"key must have last dimension d_model=8, got \(2, 5, 6\)"):
        mha(torch.randn(2, 4, 8), torch.randn(2, 5, 6), torch.randn(2, 5, 8))


def test_sdpa_key_value_length_mismatch():
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="k and v must have the same length k_len"):
        scaled_dot_product_attention(torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 6, 8))


def test_mha_key_value_length_mismatch():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="key and value must have the same length, got 5 and 6"):
        mha(torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 6, 8))


def test_mha_batch_size_mismatch():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="same batch size"):
        mha(torch.randn(2, 4, 8), torch.randn(3, 5, 8), torch.randn(3, 5, 8))


def test_float_mask_rejected():
    torch.manual_seed(0)
    q = torch.randn(1, 3, 4)
    with pytest.raises(TypeError, match=r"mask must be a bool tensor \(True = may attend\), got torch.float32"):
        scaled_dot_product_attention(q, q, q, mask=torch.ones(3, 3))


def test_int_mask_rejected_by_mha():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(TypeError, match=r"mask must be a bool tensor \(True = may attend\), got torch.int64"):
        mha(x, x, x, mask=torch.ones(2, 1, 1, 3, dtype=torch.long))


def test_unbroadcastable_mask():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    mask = torch.ones(2, 1, 1, 4, dtype=torch.bool)  # 4 keys, but there are 3
    with pytest.raises(ValueError, match=r"mask of shape \(2, 1, 1, 4\) does not broadcast to the attention scores"):
        mha(x, x, x, mask=mask)


def test_mask_that_would_enlarge_the_scores_is_rejected():
    torch.manual_seed(0)
    q = torch.randn(3, 4)  # (q_len, d)
    mask = torch.ones(2, 3, 3, dtype=torch.bool)  # broadcasting would add a batch dimension
    with pytest.raises(ValueError, match="does not broadcast to the attention scores"):
        scaled_dot_product_attention(q, q, q, mask=mask)


def test_token_id_not_below_vocab_size():
    model = _model()
    src, tgt = _src_tgt()
    src[1, 2] = 20  # == src_vocab_size
    with pytest.raises(ValueError, match=r"src must be token ids in \[0, 20\) \(the vocab size\), got values in"):
        model(src, tgt)


def test_negative_token_id():
    model = _model()
    src, tgt = _src_tgt()
    tgt[0, 0] = -1
    with pytest.raises(ValueError, match=r"tgt must be token ids in \[0, 15\).*\[-1, "):
        model(src, tgt)


def test_float_token_ids():
    model = _model()
    src, tgt = _src_tgt()
    with pytest.raises(TypeError, match=r"src must be an int64 or int32 tensor of token ids, got torch.float32"):
        model(src.float(), tgt)


def test_small_integer_dtype_ids_rejected_clearly():
    torch.manual_seed(0)
    emb = TokenEmbedding(10, 4)
    with pytest.raises(TypeError, match=r"ids must be an int64 or int32 tensor of token ids, got torch.uint8"):
        emb(torch.tensor([[1, 2]], dtype=torch.uint8))
    assert emb(torch.tensor([[1, 2]], dtype=torch.int32)).shape == (1, 2, 4)


def test_ids_wrong_rank():
    torch.manual_seed(0)
    emb = TokenEmbedding(10, 4)
    with pytest.raises(ValueError, match=r"ids must have shape \(batch, seq\), got \(3,\)"):
        emb(torch.tensor([1, 2, 3]))


def test_src_longer_than_max_len():
    model = _model()
    src, tgt = _src_tgt(src_len=13)
    with pytest.raises(ValueError, match="src has length 13, longer than max_len=12"):
        model(src, tgt)


def test_tgt_longer_than_max_len():
    model = _model()
    src, tgt = _src_tgt(tgt_len=20)
    with pytest.raises(ValueError, match="tgt has length 20, longer than max_len=12"):
        model(src, tgt)


def test_positional_encoding_longer_than_max_len():
    pos = SinusoidalPositionalEncoding(8, max_len=4)
    with pytest.raises(ValueError, match="sequence length 5 is longer than max_len=4"):
        pos(torch.zeros(1, 5, 8))


def test_empty_batch():
    model = _model()
    _, tgt = _src_tgt()
    with pytest.raises(ValueError, match=r"src is empty \(batch or seq of size 0\): \(0, 6\)"):
        model(torch.zeros(0, 6, dtype=torch.long), tgt[:0])


def test_empty_sequence():
    model = _model()
    src, tgt = _src_tgt()
    with pytest.raises(ValueError, match=r"tgt is empty \(batch or seq of size 0\): \(2, 0\)"):
        model(src, tgt[:, :0])
    with pytest.raises(ValueError, match="q and k must hold at least one position"):
        scaled_dot_product_attention(torch.randn(2, 0, 4), torch.randn(2, 3, 4), torch.randn(2, 3, 4))
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"query is empty \(batch or seq of size 0\)"):
        mha(torch.randn(2, 0, 8), torch.randn(2, 3, 8), torch.randn(2, 3, 8))


def test_src_tgt_batch_mismatch():
    model = _model()
    src, tgt = _src_tgt()
    with pytest.raises(ValueError, match="tgt and src must have the same batch size, got 1 and 2"):
        model(src, tgt[:1])


def test_decode_with_memory_of_another_source():
    model = _model()
    src, tgt = _src_tgt()
    memory = model.encode(src)
    with pytest.raises(ValueError, match=r"memory must have shape .* matching src"):
        model.decode(tgt, memory[:, :3], src)


def test_three_dimensional_mask_is_rejected_as_ambiguous():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match=r"3-D, which is ambiguous.*mask\[:, None\]"):
        mha(x, x, x, mask=torch.ones(2, 3, 3, dtype=torch.bool))


def test_decode_rejects_float_source_ids():
    model = Transformer(TransformerConfig(src_vocab_size=10, tgt_vocab_size=10, d_model=8, n_heads=2, d_ff=16))
    src = torch.randint(4, 10, (1, 3))
    memory = model.encode(src)
    with pytest.raises(TypeError, match="src must be an int64 or int32 tensor"):
        model.decode(torch.ones(1, 2, dtype=torch.long), memory, src.float())
