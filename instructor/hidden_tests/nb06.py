"""Hidden tests for notebook 06 (masking). References are written here, independently of course_lib.masks."""

from __future__ import annotations

import torch

from course_lib.exercises import nb06

from . import Rules, generator, hidden_test


def _padding(ids, pad_id):
    return (ids != pad_id)[:, None, None, :]  # (batch, 1, 1, k_len)


def _decoder(tgt, pad_id):
    n = tgt.size(1)
    causal = torch.ones(n, n, dtype=torch.bool).tril()  # (tgt_len, tgt_len): keys at or before the query
    return _padding(tgt, pad_id) & causal  # (batch, 1, tgt_len, tgt_len)


def _padded_batch(seed, batch, length, pad_id, vocab=20):
    g = generator(seed)
    ids = torch.randint(4, vocab, (batch, length), generator=g)
    ids[ids == pad_id] = pad_id + 1  # no accidental padding inside a sentence
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    lengths[0] = length  # at least one sentence without padding
    ids[torch.arange(length)[None, :] >= lengths[:, None]] = pad_id
    return ids


@hidden_test(nb06.check_decoder_mask, cases=4, rules=Rules(stated="use only torch (not course_lib.masks)"))
def decoder_mask(grader, student_fn):
    cases = [
        ("batch=4, tgt_len=7, pad_id=0", _padded_batch(61, 4, 7, 0), 0),
        ("batch=2, tgt_len=9, pad_id=5", _padded_batch(62, 2, 9, 5), 5),
        ("a sentence of two tokens and one of padding only after <bos>", torch.tensor([[1, 7], [1, 0]]), 0),
        ("batch=6, tgt_len=3", _padded_batch(63, 6, 3, 0), 0),
    ]
    for case, tgt, pad_id in cases:
        got = grader.call(student_fn, case, tgt.clone(), pad_id)
        grader.expect(case, got, _decoder(tgt, pad_id))


@hidden_test(nb06.check_picture)
def picture(grader, answer):
    if answer is None:
        grader.check_value(None, None)
    try:
        matrix = torch.as_tensor(answer)
    except (TypeError, ValueError):
        raise grader.wrong("answer with 5 rows of four 0/1 entries.") from None
    if matrix.dtype != torch.bool:
        matrix = matrix != 0
    # the cross-attention mask: the source padding mask of "ein Hund <eos> <pad>", seen by 5 English queries
    grader.check_value(matrix, (torch.tensor([[7, 8, 2, 0]]) != 0)[:, None, None, :][0, 0].expand(5, 4))


@hidden_test(nb06.check_fixed_masks, cases=6)
def fixed_masks(grader, student_fn):
    cases = [
        ("src 3x5, tgt 3x6, pad_id=0", _padded_batch(64, 3, 5, 0), _padded_batch(65, 3, 6, 0), 0),
        ("pad_id=2", _padded_batch(66, 2, 4, 2), _padded_batch(67, 2, 7, 2), 2),
        ("one sentence, no padding", torch.tensor([[4, 5, 6, 7, 8]]), torch.tensor([[1, 9, 10]]), 0),
    ]
    for case, src, tgt, pad_id in cases:
        got = grader.call(student_fn, case, src.clone(), tgt.clone(), pad_id)
        got = grader.unpack(case, got, 2, "return a tuple (src_mask, tgt_mask)")
        grader.expect(case + ", src_mask", got[0], _padding(src, pad_id))
        grader.expect(case + ", tgt_mask", got[1], _decoder(tgt, pad_id))


def _pytorch_padding(src, pad_id=0):
    return src == pad_id  # (batch, src_len): PyTorch's key_padding_mask, True = blocked


def _pytorch_additive(allowed):
    return torch.where(allowed, 0.0, float("-inf"))  # (q_len, k_len): 0.0 = may attend, -inf = blocked


@hidden_test(nb06.check_to_pytorch, cases=6, rules=Rules(stated="use only torch (not course_lib.compat)"))
def to_pytorch(grader, student_fn):
    n = 6
    g = generator(68)
    random_rows = torch.rand(n, n, generator=g) > 0.5
    random_rows[torch.arange(n), torch.randint(0, n, (n,), generator=g)] = True  # every query may read a key
    cases = [
        ("batch=3, src_len=5, tgt_mask=causal (tgt_len=7)", _padded_batch(69, 3, 5, 0),
         torch.ones(7, 7, dtype=torch.bool).tril()),
        ("one padded sentence, tgt_mask: query i may read keys i-2 .. i",
         torch.tensor([[6, 7, 2, 0, 0, 0]]), torch.ones(5, 5, dtype=torch.bool).tril() & torch.ones(5, 5, dtype=torch.bool).triu(-2)),
        ("batch=4, src_len=3, a random (6, 6) tgt_mask", _padded_batch(70, 4, 3, 0), random_rows),
    ]
    for case, src, tgt_mask in cases:
        src_mask = _padding(src, 0)  # (batch, 1, 1, src_len), True = may attend
        got = grader.call(student_fn, case, src_mask.clone(), tgt_mask.clone())
        got = grader.unpack(case, got, 2, "return a tuple (src_key_padding_mask, tgt_mask)")
        grader.expect(case + ", src_key_padding_mask", got[0], _pytorch_padding(src))
        grader.expect(case + ", tgt_mask", got[1], _pytorch_additive(tgt_mask))
