"""The notebook 06 checkers pass right answers, fail wrong ones with a specific message, and report unattempted ones."""

import pytest
import torch

from course_lib.exercises import nb06

# ---------------------------------------------------------------- 06.1 the decoder mask


def right_decoder_mask(tgt, pad_id=0):
    size = tgt.size(1)
    return (tgt != pad_id)[:, None, None, :] & torch.ones(size, size, dtype=torch.bool).tril()


def unattempted(*args):
    raise NotImplementedError


def test_06_1_right_answer_passes():
    result = nb06.check_decoder_mask(right_decoder_mask, quiet=True)
    assert result, result.message


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (lambda tgt, pad_id: ~right_decoder_mask(tgt, pad_id), "exactly inverted"),
        (lambda tgt, pad_id: right_decoder_mask(tgt, pad_id)[:, 0], "Add the head dimension"),
        (lambda tgt, pad_id: right_decoder_mask(tgt, pad_id).int(), "Return a bool tensor"),
        (lambda tgt, pad_id: right_decoder_mask(tgt, pad_id).transpose(-2, -1), "transposed"),
        (lambda tgt, pad_id: (tgt != pad_id)[:, None, None, :].expand(-1, 1, tgt.size(1), -1), "padding mask alone"),
        (lambda tgt, pad_id: torch.ones(tgt.size(0), 1, tgt.size(1), tgt.size(1), dtype=torch.bool).tril(),
         "causal mask alone"),
        (lambda tgt, pad_id: right_decoder_mask(tgt, 0), "pad_id=3"),
    ],
)
def test_06_1_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb06.check_decoder_mask(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_06_1_crash_and_not_attempted():
    assert nb06.check_decoder_mask(unattempted, quiet=True).status == "not attempted"
    crashed = nb06.check_decoder_mask(lambda tgt, pad_id: tgt.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message


# ---------------------------------------------------------------- 06.2 predict the picture

RIGHT_PICTURE = [[1, 1, 1, 0]] * 5  # every English query may read the three German tokens, none the <pad>


def test_06_2_right_answers_pass_as_ints_bools_or_tensor():
    assert nb06.check_picture(RIGHT_PICTURE, quiet=True)
    assert nb06.check_picture([[bool(v) for v in row] for row in RIGHT_PICTURE], quiet=True)
    assert nb06.check_picture(torch.tensor(RIGHT_PICTURE), quiet=True)


def test_06_2_padded_query_rows_get_the_specific_explanation():
    blocked_pad_rows = [row[:] for row in RIGHT_PICTURE]
    blocked_pad_rows[3] = [0, 0, 0, 0]
    blocked_pad_rows[4] = [0, 0, 0, 0]
    result = nb06.check_picture(blocked_pad_rows, quiet=True)
    assert result.status == "failed" and "6 of 20 entries are wrong" in result.message
    assert "row 3 (English query '<pad>'), column 0" in result.message and "keys (columns) only" in result.message


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        ([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 0]], "is there a future to hide"),
        ([[1, 1, 1, 1]] * 5, "a <pad> key"),
        ([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 0, 0]], "5 rows (one per English query) of 4 entries"),
        ([[2, 0, 0, 0]] * 5, "use only 0"),
    ],
)
def test_06_2_wrong_answers_fail_with_specific_messages(answer, needle):
    result = nb06.check_picture(answer, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_06_2_not_attempted():
    assert nb06.check_picture(None, quiet=True).status == "not attempted"


# ---------------------------------------------------------------- 06.3 fix the polarity bug


def right_fixed_masks(src, tgt, pad_id=0):
    size = tgt.size(1)
    return (src != pad_id)[:, None, None, :], (tgt != pad_id)[:, None, None, :] & torch.ones(
        size, size, dtype=torch.bool).tril()


def article_masks(src, tgt, pad_id=0):
    size = tgt.size(1)
    subsequent = torch.triu(torch.ones(size, size, dtype=torch.bool), diagonal=1)
    return (src == pad_id)[:, None, None, :], (tgt != pad_id)[:, None, None, :] & subsequent


def test_06_3_right_answer_passes():
    result = nb06.check_fixed_masks(right_fixed_masks, quiet=True)
    assert result, result.message


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (article_masks, "src_mask"),
        (lambda s, t, p: (right_fixed_masks(s, t, p)[0], article_masks(s, t, p)[1]), "tgt_mask"),
        (lambda s, t, p: right_fixed_masks(s, t, p)[0], "return a tuple"),
    ],
)
def test_06_3_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb06.check_fixed_masks(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_06_3_not_attempted():
    assert nb06.check_fixed_masks(unattempted, quiet=True).status == "not attempted"


# ---------------------------------------------------------------- 06.4 convert for PyTorch


def right_to_pytorch(src_mask, tgt_mask):
    blocked = ~tgt_mask  # (tgt_len, tgt_len), True = blocked
    return ~src_mask[:, 0, 0], torch.zeros(blocked.shape).masked_fill(blocked, float("-inf"))


def _with_tgt(tgt_fn):
    return lambda src_mask, tgt_mask: (~src_mask[:, 0, 0], tgt_fn(tgt_mask))


def _with_padding(padding_fn):
    return lambda src_mask, tgt_mask: (padding_fn(src_mask), right_to_pytorch(src_mask, tgt_mask)[1])


@pytest.mark.parametrize(
    "student",
    [
        right_to_pytorch,
        _with_tgt(lambda m: torch.where(m, 0.0, float("-inf"))),
        _with_tgt(lambda m: torch.zeros(m.shape, dtype=torch.float64).masked_fill(~m, float("-inf"))),
        _with_padding(lambda s: s.logical_not()[:, 0, 0]),
    ],
)
def test_06_4_right_answers_pass(student):
    result = nb06.check_to_pytorch(student, quiet=True)
    assert result, result.message


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (_with_padding(lambda s: s[:, 0, 0]), "not inverted, or inverted twice"),  # forgetting to invert
        (_with_padding(lambda s: ~~s[:, 0, 0]), "not inverted, or inverted twice"),  # inverting twice
        (_with_padding(lambda s: ~s), "keeps the course's shape (batch, 1, 1, src_len)"),
        (_with_padding(lambda s: ~s.squeeze()), "squeeze() also drops the batch"),
        (_with_padding(lambda s: (~s[:, 0, 0]).float()), "must be bool here"),
        (_with_tgt(lambda m: torch.zeros(m.shape).masked_fill(m, float("-inf"))), "-inf where the course's mask is True"),
        (_with_tgt(lambda m: torch.zeros(m.shape).masked_fill(~m, float("-inf")).T), "wrong axis"),
        (_with_tgt(lambda m: m.float()), "holds 1.0 and 0.0"),
        (_with_tgt(lambda m: (~m).float()), "use -inf, not 1.0"),
        (_with_tgt(lambda m: (~m).float() * float("-inf")), "0 * -inf is NaN"),
        (_with_tgt(lambda m: torch.zeros(m.shape).masked_fill(~m, -1e9)), "large finite number"),
        (_with_tgt(lambda m: ~m), "PyTorch's bool form (True = blocked)"),
        (_with_tgt(lambda m: m), "must be a float tensor"),
        (_with_tgt(lambda m: torch.zeros(m.shape).masked_fill(~m, float("-inf"))[None]), "expected shape"),
        (lambda s, m: right_to_pytorch(s, m)[0], "return a tuple"),
    ],
)
def test_06_4_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb06.check_to_pytorch(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_06_4_not_attempted_and_crash():
    assert nb06.check_to_pytorch(unattempted, quiet=True).status == "not attempted"
    crashed = nb06.check_to_pytorch(lambda s, m: s.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message
