"""The notebook 09 checkers pass right answers, fail wrong ones with a specific message, and report unattempted ones."""

import pytest
import torch

from course_lib.data import TranslationDataset, collate_batch
from course_lib.exercises import nb09
from course_lib.tokenization import BOS_ID, EOS_ID


def unattempted(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- 09.1 shift right


def right_shift(ids):
    return torch.cat([torch.tensor([BOS_ID]), ids]), torch.cat([ids, torch.tensor([EOS_ID])])


def test_09_1_right_answer_passes_with_tensors_or_lists():
    assert nb09.check_shift_right(right_shift, quiet=True)
    as_lists = nb09.check_shift_right(lambda ids: ([BOS_ID, *ids.tolist()], [*ids.tolist(), EOS_ID]), quiet=True)
    assert as_lists, as_lists.message


def test_09_1_reference_agrees_with_the_course_data_pipeline():
    ids = [13, 70, 425, 122, 7, 5]
    batch = collate_batch([TranslationDataset([[4, 5]], [ids])[0]])
    dec_in, labels = nb09.reference_shift_right(torch.tensor(ids))
    assert torch.equal(batch.tgt_in[0], dec_in) and torch.equal(batch.tgt_out[0], labels)


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (lambda ids: right_shift(ids)[::-1], "You swapped them"),
        (lambda ids: (ids, ids), "Each side needs one special token"),
        (lambda ids: (torch.cat([torch.tensor([BOS_ID]), ids, torch.tensor([EOS_ID])]),) * 2, "both have n + 1"),
        (lambda ids: (torch.cat([torch.tensor([EOS_ID]), ids]), right_shift(ids)[1]), "must start with <bos>"),
        (lambda ids: (right_shift(ids)[0], torch.cat([ids, torch.tensor([BOS_ID])])), "must end with <eos>"),
        (lambda ids: right_shift(ids)[0], "return two things"),
        (lambda ids: (right_shift(ids)[0].float(), right_shift(ids)[1]), "integer token ids"),
        (lambda ids: ("<bos>", "<eos>"), "must be a 1-D tensor of token ids"),
    ],
)
def test_09_1_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb09.check_shift_right(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_09_1_not_attempted_and_crash():
    assert nb09.check_shift_right(unattempted, quiet=True).status == "not attempted"
    crashed = nb09.check_shift_right(lambda ids: ids.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message


def test_09_1_failure_names_the_case_and_both_values():
    result = nb09.check_shift_right(lambda ids: (right_shift(ids)[0], ids), quiet=True)
    assert "6-token sentence" in result.message and "expected [13, 70, 425, 122, 7, 5, 2]" in result.message


# ---------------------------------------------------------------- 09.2 the cross-attention shape


def test_09_2_right_answer_passes_as_tuple_list_or_size():
    assert nb09.check_cross_attention_shape((32, 4, 14, 12), quiet=True)
    assert nb09.check_cross_attention_shape([32, 4, 14, 12], quiet=True)
    assert nb09.check_cross_attention_shape(torch.Size([32, 4, 14, 12]), quiet=True)


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        ((32, 4, 12, 14), "queries come from the DECODER"),
        ((32, 4, 13, 11), "Count the special tokens"),
        ((32, 4, 15, 12), "n + 1 positions, not n + 2"),
        ((32, 4, 14, 13), "<eos> only"),
        ((32, 4, 14, 14), "SELF-attention"),
        ((32, 14, 12), "keep a head dimension"),
        ((32, 14, 4, 12), "head dimension comes second"),
        ((32, 4, 14, 16), "not d_head"),
        ((1, 2, 3, 4), "(batch, n_heads, q_len, k_len)"),
        ("32, 4, 14, 12", "tuple of ints"),
    ],
)
def test_09_2_wrong_answers_fail_with_specific_messages(answer, needle):
    result = nb09.check_cross_attention_shape(answer, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_09_2_not_attempted():
    assert nb09.check_cross_attention_shape(None, quiet=True).status == "not attempted"


def test_09_2_the_expected_shape_is_what_the_model_records():
    from course_lib.model import Transformer, TransformerConfig, record_attention

    model = Transformer(TransformerConfig(src_vocab_size=20, tgt_vocab_size=20)).eval()
    src = torch.randint(4, 20, (32, nb09.LONGEST_GERMAN + 1))
    tgt_in = torch.randint(4, 20, (32, nb09.LONGEST_ENGLISH + 1))
    with torch.no_grad(), record_attention(model) as maps:
        model(src, tgt_in)
    assert tuple(maps["decoder.layers.0.cross_attn"].shape) == nb09.CROSS_ATTENTION_SHAPE


# ---------------------------------------------------------------- 09.3 one greedy step


def right_step(model, memory, src, tokens):
    next_token = model.decode(tokens, memory, src)[:, -1].argmax(dim=-1)
    return torch.cat([tokens, next_token[:, None]], dim=1)


def test_09_3_right_answer_passes():
    result = nb09.check_greedy_step(right_step, quiet=True)
    assert result, result.message


def test_09_3_checker_does_not_change_the_callers_random_stream():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    nb09.check_greedy_step(right_step, quiet=True)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (lambda m, mem, s, t: torch.cat([t, m.decode(t, mem, s)[:, 0].argmax(-1)[:, None]], 1), "FIRST position"),
        (lambda m, mem, s, t: torch.cat([t, m.decode(t, mem, s)[:, -1].argmin(-1)[:, None]], 1), "argmin"),
        (lambda m, mem, s, t: m.decode(t, mem, s)[:, -1].argmax(-1), "not only the new token"),
        (lambda m, mem, s, t: t, "append the new token"),
        (lambda m, mem, s, t: torch.cat([t.flip(1), m.decode(t, mem, s)[:, -1].argmax(-1)[:, None]], 1),
         "prefix must stay unchanged"),
        (lambda m, mem, s, t: [1, 2], "return a tensor"),
    ],
)
def test_09_3_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb09.check_greedy_step(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_09_3_not_attempted_and_crash():
    assert nb09.check_greedy_step(unattempted, quiet=True).status == "not attempted"
    crashed = nb09.check_greedy_step(lambda m, mem, s, t: t.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message
