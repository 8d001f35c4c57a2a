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
