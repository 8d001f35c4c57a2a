"""Hidden tests for notebook 08 (encoder)."""

from __future__ import annotations

import torch

from course_lib.exercises import nb08

from . import Forbidden, Rules, generator, hidden_test


@hidden_test(nb08.check_encoder_layer_parameters)
def encoder_layer_parameters(grader, answer):
    if isinstance(answer, bool):
        raise grader.wrong("answer with a whole number.")
    grader.check_value(answer, 4 * (1024 * 1024 + 1024) + (2 * 1024 * 4096 + 4096 + 1024) + 2 * 2 * 1024)


@hidden_test(nb08.check_post_norm_layer, cases=3, rules=Rules(
    allow=("MultiHeadAttention.forward", "PositionwiseFeedForward.forward", "LayerNorm.forward"),
    forbid=(Forbidden("TransformerEncoder", "written from the parts, without nn.TransformerEncoderLayer"),),
    stated="from its parts (self_attn, feed_forward, norm1, norm2, dropout1, dropout2), not the layer's own forward"))
def post_norm_layer(grader, student_fn):
    from course_lib.layers import EncoderLayer
    from course_lib.masks import padding_mask

    g = generator(80_002)
    ids = torch.tensor([[4, 5, 6, 7, 8], [4, 5, 0, 0, 0], [4, 5, 6, 7, 0]])
    cases = [
        ("eval mode, padded batch (3, 5, 12), 3 heads", 12, 3, 20, torch.randn(3, 5, 12, generator=g), ids, False),
        ("eval mode, no mask", 8, 4, 8, torch.randn(2, 4, 8, generator=g), None, False),
        ("training mode, dropout 0.2", 12, 2, 24, torch.randn(3, 5, 12, generator=g), ids, True),
    ]
    for number, (case, d_model, n_heads, d_ff, x, mask_ids, training) in enumerate(cases):
        torch.manual_seed(80_100 + number)
        layer = EncoderLayer(d_model, n_heads, d_ff, dropout=0.2, norm_first=False)
        with torch.no_grad():
            for norm in (layer.norm1, layer.norm2):
                norm.weight.uniform_(0.3, 2.0)
                norm.bias.uniform_(-1.0, 1.0)
        layer.train(training)
        mask = None if mask_ids is None else padding_mask(mask_ids)
        torch.manual_seed(80_200 + number)
        got = grader.call(student_fn, case, layer, x.clone(), mask)
        torch.manual_seed(80_200 + number)
        grader.expect(case, got, layer(x, mask), atol=1e-5)


@hidden_test(nb08.check_shapes)
def shapes(grader, answer):
    if answer is None or not isinstance(answer, (tuple, list)) or any(a is None for a in answer):
        raise grader.not_attempted()
    answer = tuple(tuple(a) if isinstance(a, (list, tuple, torch.Size)) else a for a in answer)
    grader.check_value(answer, ((16, 1, 1, 23), (16, 8, 23, 23), (16, 23, 128)))
