"""The notebook 08 checkers pass right answers, fail wrong ones with a specific message, and report unattempted ones."""

import pytest

from course_lib.exercises import nb08

# ---------------------------------------------------------------- 08.1 parameter count


def test_08_1_right_answer_passes():
    assert nb08.check_encoder_layer_parameters(12_596_224, quiet=True)
    assert nb08.check_encoder_layer_parameters(12596224.0, quiet=True)
    base = nb08.check_encoder_layer_parameters(3_152_384, quiet=True)  # the base model's layer, shown in the notebook
    assert not base and "BASE model" in base.message


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (4 * 1024 * 1024 + 2 * 1024 * 4096, "weight matrices only"),
        (12_596_224 - 4096, "forgot the two LayerNorms"),
        (12_596_224 - 2048, "TWO LayerNorms"),
        (4_198_400, "attention block alone"),
        (12_596_224 + 1, "Add up attention"),
        ("12596224", "whole number"),
        (3.5, "whole number"),
    ],
)
def test_08_1_wrong_answers_fail_with_specific_messages(answer, needle):
    result = nb08.check_encoder_layer_parameters(answer, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_08_1_not_attempted():
    assert nb08.check_encoder_layer_parameters(None, quiet=True).status == "not attempted"


# ---------------------------------------------------------------- 08.2 post-norm layer


def right_post_norm(parts, x, src_mask):
    x = parts.norm1(x + parts.dropout1(parts.self_attn(x, x, x, mask=src_mask)))
    return parts.norm2(x + parts.dropout2(parts.feed_forward(x)))


def pre_norm(parts, x, src_mask):
    h = parts.norm1(x)
    x = x + parts.dropout1(parts.self_attn(h, h, h, mask=src_mask))
    return x + parts.dropout2(parts.feed_forward(parts.norm2(x)))


def no_residual(parts, x, src_mask):
    x = parts.norm1(parts.dropout1(parts.self_attn(x, x, x, mask=src_mask)))
    return parts.norm2(parts.dropout2(parts.feed_forward(x)))


def no_dropout(parts, x, src_mask):
    x = parts.norm1(x + parts.self_attn(x, x, x, mask=src_mask))
    return parts.norm2(x + parts.feed_forward(x))


def no_mask(parts, x, src_mask):
    x = parts.norm1(x + parts.dropout1(parts.self_attn(x, x, x)))
    return parts.norm2(x + parts.dropout2(parts.feed_forward(x)))


def unattempted(parts, x, src_mask):
    raise NotImplementedError


def test_08_2_right_answer_passes():
    result = nb08.check_post_norm_layer(right_post_norm, quiet=True)
    assert result, result.message


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (pre_norm, "PRE-norm"),
        (no_residual, "residual connections are missing"),
        (no_dropout, "look at dropout"),
        (no_mask, "padding mask is not used"),
        (lambda parts, x, m: x, "values differ"),
        (lambda parts, x, m: x[:, 0], "expected shape"),
    ],
)
def test_08_2_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb08.check_post_norm_layer(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_08_2_crash_and_not_attempted():
    assert nb08.check_post_norm_layer(unattempted, quiet=True).status == "not attempted"
    crashed = nb08.check_post_norm_layer(lambda parts, x, m: parts.attention(x), quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message


# ---------------------------------------------------------------- 08.3 shapes


def test_08_3_right_answer_passes():
    assert nb08.check_shapes(((16, 1, 1, 23), (16, 8, 23, 23), (16, 23, 128)), quiet=True)
    assert nb08.check_shapes([[16, 1, 1, 23], [16, 8, 23, 23], [16, 23, 128]], quiet=True)


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (((16, 23), (16, 8, 23, 23), (16, 23, 128)), "the padding mask: (16, 23) is not right. Hint: the mask holds"),
        (((16, 1, 1, 23), (16, 23, 23), (16, 23, 128)), "attention weights: (16, 23, 23) is not right. Hint: every head"),
        (((16, 1, 1, 23), (16, 8, 23, 23), (16, 23, 512)), "n_layers and d_ff do not appear"),
        (((16, 1, 1, 23), (16, 8, 23, 23)), "expected three shapes"),
        (((16, 1, 1, 23), (16, 8, 23, 23), "big"), "tuple of ints"),
    ],
)
def test_08_3_wrong_answers_fail_with_specific_messages(answer, needle):
    result = nb08.check_shapes(answer, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_08_3_not_attempted():
    assert nb08.check_shapes(None, quiet=True).status == "not attempted"
    assert nb08.check_shapes(((16, 1, 1, 23), None, None), quiet=True).status == "not attempted"
