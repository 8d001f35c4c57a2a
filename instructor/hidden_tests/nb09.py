"""Hidden tests for notebook 09 (decoder)."""

from __future__ import annotations

import torch

from course_lib.exercises import nb09

from . import Rules, generator, hidden_test

BOS_ID, EOS_ID = 1, 2


@hidden_test(nb09.check_shift_right, cases=8)
def shift_right(grader, student_fn):
    g = generator(90_001)
    cases = [
        ("a 12-token sentence", torch.randint(4, 500, (12,), generator=g)),
        ("two tokens [7, 7]", torch.tensor([7, 7])),
        ("a sentence that contains the ids of <bos> and <eos> as words [1, 2, 9]", torch.tensor([9, 1, 2])),
        ("an empty sentence", torch.tensor([], dtype=torch.long)),
    ]
    for case, ids in cases:
        got = grader.call(student_fn, case, ids.clone())
        got = grader.unpack(case, got, 2, "return a tuple (decoder_input, labels)")
        grader.expect(case + ", decoder input", got[0], torch.cat([torch.tensor([BOS_ID]), ids]))
        grader.expect(case + ", labels", got[1], torch.cat([ids, torch.tensor([EOS_ID])]))


@hidden_test(nb09.check_cross_attention_shape)
def cross_attention_shape(grader, answer):
    if isinstance(answer, (list, torch.Size)):
        answer = tuple(answer)
    grader.check_value(answer, (32, 4, 14, 12))


@hidden_test(nb09.check_greedy_step, cases=3, rules=Rules(
    allow=("Transformer.decode", "Transformer.encode", "Transformer.forward", "TransformerConfig.*"),
    stated="use model.decode (course_lib's greedy_decode / beam_search are off limits)"))
def greedy_step(grader, student_fn):
    from course_lib.model import Transformer, TransformerConfig

    g = generator(90_003)
    config = TransformerConfig(src_vocab_size=23, tgt_vocab_size=37, d_model=24, n_heads=3, n_encoder_layers=2,
                               n_decoder_layers=1, d_ff=48, max_len=32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(90_003)
        model = Transformer(config).eval()
    src = torch.randint(4, 23, (4, 9), generator=g)
    src[:, -1] = EOS_ID
    src[1, 5:] = 0
    src[1, 4] = EOS_ID
    prefixes = [
        ("prefixes of length 1", torch.full((4, 1), BOS_ID)),
        ("prefixes of length 6", torch.cat([torch.full((4, 1), BOS_ID), torch.randint(4, 37, (4, 5), generator=g)], 1)),
        ("one row of length 4", torch.tensor([[BOS_ID, 5, 9, 30]])),
    ]
    with torch.no_grad():
        for case, tokens in prefixes:
            rows = slice(0, tokens.size(0))
            memory = model.encode(src[rows])  # (batch, src_len, d_model)
            logits = model.decode(tokens, memory, src[rows])  # (batch, t, vocab)
            expected = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)  # (batch, t + 1)
            got = grader.call(student_fn, case, model, memory, src[rows].clone(), tokens.clone())
            grader.expect(case, got, expected)
