"""Exercise checks for notebook 08 (the encoder).

08.1 the number of parameters of one encoder layer of the paper's big model (the notebook charts the base
     model, so the answer cannot be read off a figure).
08.2 the post-norm encoder layer's forward pass, written from its parts (checked in eval mode and,
     with the same random seed, in training mode, so dropout must sit where the paper puts it).
08.3 predict three shapes: the padding mask, one layer's attention weights and the encoder output.

The checkers compare with ``course_lib.layers.EncoderLayer`` and recognise the usual mistakes
(biases or LayerNorms left out, pre-norm instead of post-norm, a missing residual or dropout).
"""

from __future__ import annotations

import torch

from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise, known_mistake
from course_lib.layers import EncoderLayer
from course_lib.masks import padding_mask

ATOL = 1e-5

# ----------------------------------------------------------------------------------------------
# 08.1 parameters of one encoder layer of the paper's big model (d_model 1024, 16 heads, d_ff 4096)
# ----------------------------------------------------------------------------------------------

D_MODEL, D_FF = 1024, 4096
_ATTENTION = 4 * (D_MODEL * D_MODEL + D_MODEL)  # W_q, W_k, W_v, W_o and their biases
_FFN = D_MODEL * D_FF + D_FF + D_FF * D_MODEL + D_MODEL  # W_1, b_1, W_2, b_2
_NORMS = 2 * 2 * D_MODEL  # two LayerNorms, each a weight and a bias
ENCODER_LAYER_PARAMETERS = _ATTENTION + _FFN + _NORMS  # 12,596,224

_KNOWN_MISTAKES = {
    4 * D_MODEL * D_MODEL + 2 * D_MODEL * D_FF: "you counted the weight matrices only: add the biases "
    "(4 x d_model for attention, d_ff + d_model for the FFN) and the two LayerNorms (2 x 2 x d_model)",
    _ATTENTION + _FFN: "you forgot the two LayerNorms: each has a weight and a bias of size d_model",
    _ATTENTION + _FFN + 2 * D_MODEL: "there are TWO LayerNorms per layer (after attention and after the FFN), "
    "each with a weight and a bias",
    4 * D_MODEL * D_MODEL + 2 * D_MODEL * D_FF + _NORMS: "you left out the biases of the six linear maps",
    _ATTENTION: "that is the attention block alone: add the feed-forward block and the LayerNorms",
    _FFN: "that is the feed-forward block alone: add the attention block and the LayerNorms",
    _ATTENTION + _NORMS: "you left out the feed-forward block (d_model -> d_ff -> d_model), the biggest part",
    _FFN + _NORMS: "you left out the attention block (four d_model x d_model projections with biases)",
    4 * (512 * 512 + 512) + (2 * 512 * 2048 + 2048 + 512) + 2 * 2 * 512: "that is a layer of the BASE model "
    "(d_model 512, d_ff 2048); this exercise asks for the big model, d_model 1024 and d_ff 4096",
}


@exercise("08.1", points=1, kind=VALUE)
def check_encoder_layer_parameters(ex, answer, quiet: bool = False):
    """Parameters of one encoder layer with d_model=1024, n_heads=16, d_ff=4096 (biases and LayerNorms included)."""
    if answer is None:
        return ex.not_attempted("set your answer instead of `None`", quiet)
    if isinstance(answer, bool) or not isinstance(answer, int | float) or answer != int(answer):
        return ex.report(FAILED, f"expected a whole number of parameters, got {answer!r}", quiet)
    answer = int(answer)
    if answer in _KNOWN_MISTAKES:
        return ex.report(FAILED, f"{answer:,} is not it: {_KNOWN_MISTAKES[answer]}.", quiet)
    hint = ("Add up attention 4 (d^2 + d), feed-forward 2 d d_ff + d_ff + d, and two LayerNorms 2 x 2d, "
            "with d = 1024 and d_ff = 4096 (the number of heads does not change the count).")
    return ex.check_answer(answer, ENCODER_LAYER_PARAMETERS, hint=hint, quiet=quiet)


# ----------------------------------------------------------------------------------------------
# 08.2 the post-norm layer forward
# ----------------------------------------------------------------------------------------------


def _pre_norm(layer, x, mask):
    h = x + layer.dropout1(layer.self_attn(*(layer.norm1(x),) * 3, mask=mask))
    return h + layer.dropout2(layer.feed_forward(layer.norm2(h)))


def _no_residual(layer, x, mask):
    h = layer.norm1(layer.dropout1(layer.self_attn(x, x, x, mask=mask)))
    return layer.norm2(layer.dropout2(layer.feed_forward(h)))


def _norm_inside(layer, x, mask):
    h = x + layer.norm1(layer.dropout1(layer.self_attn(x, x, x, mask=mask)))
    return h + layer.norm2(layer.dropout2(layer.feed_forward(h)))


def _no_mask(layer, x, mask):
    return layer(x, None)


_LAYER_MISTAKES = [
    ("that is the PRE-norm layer (LayerNorm before each sub-block). Post-norm adds the residual first "
     "and normalises the sum: x = norm1(x + dropout1(self_attn(x, x, x, mask)))", _pre_norm),
    ("the residual connections are missing: add the sub-block's output to its input, x + ..., "
     "before the LayerNorm", _no_residual),
    ("the LayerNorm must be applied to the SUM x + sub_block(x), not to the sub-block's output alone", _norm_inside),
    ("the padding mask is not used: pass src_mask to self_attn(x, x, x, mask=src_mask)", _no_mask),
]


def _layer_cases():
    g = torch.Generator().manual_seed(8)
    ids = torch.tensor([[5, 6, 7, 8, 9, 10], [5, 6, 7, 0, 0, 0]])
    short = torch.tensor([[4, 9, 9]])
    return [
        ("eval mode, padded batch (2, 6, 16)", 16, 4, 32, torch.randn(2, 6, 16, generator=g), padding_mask(ids), False),
        ("eval mode, one sentence without padding (1, 3, 8)", 8, 2, 16, torch.randn(1, 3, 8, generator=g),
         padding_mask(short), False),
        ("training mode with dropout 0.3 (same random seed for yours and ours)", 16, 4, 32,
         torch.randn(2, 6, 16, generator=g), padding_mask(ids), True),
    ]


def _make_layer(d_model, n_heads, d_ff, seed):
    torch.manual_seed(seed)
    layer = EncoderLayer(d_model, n_heads, d_ff, dropout=0.3, norm_first=False)
    with torch.no_grad():  # non-trivial LayerNorm parameters, so a misplaced norm shows
        for norm in (layer.norm1, layer.norm2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    return layer


def _run(fn, layer, x, mask, training, seed):
    layer.train(training)
    torch.manual_seed(seed)
    return fn(layer, x.clone(), mask)


@exercise("08.2", points=3)
def check_post_norm_layer(ex, student_fn, quiet: bool = False):
    """``post_norm_layer(parts, x, src_mask)`` equals ``EncoderLayer(norm_first=False)`` with the same parts."""
    cases = _layer_cases()
    for number, (description, d_model, n_heads, d_ff, x, mask, training) in enumerate(cases):
        layer = _make_layer(d_model, n_heads, d_ff, seed=number)
        got, verdict = ex.call_student(_run, (student_fn, layer, x, mask, training, 100 + number),
                                    case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        expected = _run(lambda parts, x, m: parts(x, m), layer, x, mask, training, seed=100 + number)
        difference = describe_difference(got, expected, atol=ATOL)
        if not difference:
            continue
        args = (layer, x, mask, training, 100 + number)
        message = known_mistake(_LAYER_MISTAKES, lambda wrong, got=got, args=args:
                                describe_difference(got, _run(wrong, *args), atol=ATOL) is None)
        if message is None:
            message = difference
            if training:
                message = (f"{difference}; eval mode was right, so look at dropout: dropout1 on the attention output "
                           "and dropout2 on the feed-forward output, each BEFORE the residual addition, in that order")
        return ex.report(FAILED, f"on case '{description}': {message}.", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases (eval and training mode) agree with course_lib's EncoderLayer.",
                  quiet)


# ----------------------------------------------------------------------------------------------
# 08.3 predict the shapes
# ----------------------------------------------------------------------------------------------

SHAPES_QUESTION = {"batch": 16, "src_len": 23, "d_model": 128, "n_heads": 8, "n_layers": 6, "d_ff": 512}
_EXPECTED_SHAPES = (
    ("the padding mask", (16, 1, 1, 23), "the mask holds one True/False per key, and two dimensions of size 1 "
                                         "so that it broadcasts over the heads and over the queries"),
    ("one layer's attention weights", (16, 8, 23, 23), "every head has its own map, with one row per query and one "
                                                       "column per key; in self-attention both are source positions"),
    ("the encoder output (memory)", (16, 23, 128), "every encoder layer returns a tensor of the shape it received: "
                                                   "n_layers and d_ff do not appear in it"),
)


@exercise("08.3", points=1, kind=VALUE)
def check_shapes(ex, answer, quiet: bool = False):
    """(padding mask shape, attention weights shape, memory shape) for the sizes in ``SHAPES_QUESTION``."""
    if answer is None:
        return ex.not_attempted("replace `None` by a tuple of three shapes", quiet)
    if not isinstance(answer, tuple | list) or len(answer) != 3:
        return ex.report(FAILED, "expected three shapes: (mask_shape, weights_shape, memory_shape)", quiet)
    for (what, expected, why), got in zip(_EXPECTED_SHAPES, answer, strict=True):
        if got is None:
            return ex.not_attempted(f"fill in the shape of {what} (still `None`)", quiet)
        try:
            got = tuple(int(n) for n in got)
        except (TypeError, ValueError):
            return ex.report(FAILED, f"the shape of {what} should be a tuple of ints, got {got!r}", quiet)
        if got != expected:
            return ex.report(FAILED, f"the shape of {what}: {got} is not right. Hint: {why}.", quiet)
    return ex.report(PASSED, "all three shapes are right.", quiet)
