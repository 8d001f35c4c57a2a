"""Exercise checks for notebook 06 (masking).

06.1 build the decoder's combined mask (padding AND causal) for a batch of target ids.
06.2 predict the picture: the cross-attention mask of a short padded pair, entry by entry.
06.3 fix the polarity bug of the articles' mask code (comments that contradict the code).

All three compare with ``course_lib.masks`` (True = may attend) and explain a wrong entry in terms
of what it means: a padded key, a future key, or a padded query.
"""

from __future__ import annotations

import torch

from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise
from course_lib.masks import decoder_self_attention_mask, padding_mask

# ----------------------------------------------------------------------------------------------
# 06.1 the combined decoder mask
# ----------------------------------------------------------------------------------------------


def _decoder_mask_cases():
    return [
        ("one sentence, no padding: tgt=[[1, 5, 6, 7]]", (torch.tensor([[1, 5, 6, 7]]), 0)),
        ("two sentences, the second padded: tgt=[[1, 5, 6, 7], [1, 8, 0, 0]]",
         (torch.tensor([[1, 5, 6, 7], [1, 8, 0, 0]]), 0)),
        ("a single position: tgt=[[1]]", (torch.tensor([[1]]), 0)),
        ("three sentences of length 6 with different padding",
         (torch.tensor([[1, 4, 5, 6, 7, 8], [1, 4, 5, 0, 0, 0], [1, 9, 9, 9, 9, 0]]), 0)),
        ("pad_id=3 instead of 0: tgt=[[1, 5, 3], [1, 3, 3]]", (torch.tensor([[1, 5, 3], [1, 3, 3]]), 3)),
    ]


def _hint_for_decoder_mask(got, expected, tgt, pad_id) -> str:
    """A sentence about the most likely mistake, or ''."""
    if not isinstance(got, torch.Tensor):
        return ""
    if got.dtype == torch.bool and got.shape == expected.shape:
        if torch.equal(got, ~expected):
            return " Your mask is exactly inverted: the course's masks are True where attention is ALLOWED."
        causal_only = torch.ones_like(expected) & torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool).tril()
        if torch.equal(got, causal_only):
            return " That is the causal mask alone: AND it with the padding mask of tgt."
        if torch.equal(got, padding_mask(tgt, pad_id).expand_as(expected)):
            return " That is the padding mask alone: AND it with the causal (lower-triangular) mask."
        if torch.equal(got, expected.transpose(-2, -1)):
            return " Rows are queries and columns are keys: yours is transposed (use tril, keys <= query)."
    if got.dim() == 3 and got.shape == expected.shape[:1] + expected.shape[2:]:
        return " Add the head dimension: (batch, 1, tgt_len, tgt_len) broadcasts over the heads."
    if got.shape == expected.shape and got.dtype != torch.bool:
        return " Return a bool tensor (True = may attend), e.g. compare with != or use .bool()."
    return ""


@exercise("06.1", points=2)
def check_decoder_mask(ex, student_fn, quiet: bool = False):
    """``decoder_mask(tgt, pad_id)`` returns the (batch, 1, tgt_len, tgt_len) padding AND causal mask."""
    cases = _decoder_mask_cases()
    for description, (tgt, pad_id) in cases:
        got, verdict = ex.call_student(student_fn, (tgt.clone(), pad_id), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        expected = decoder_self_attention_mask(tgt, pad_id)
        difference = describe_difference(got, expected)
        if difference:
            hint = _hint_for_decoder_mask(got, expected, tgt, pad_id)
            return ex.report(FAILED, f"on case '{description}': {difference}.{hint}", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with course_lib.masks.decoder_self_attention_mask.",
                  quiet)


# ----------------------------------------------------------------------------------------------
# 06.2 predict the picture: the cross-attention mask (the notebook draws only self-attention masks)
# ----------------------------------------------------------------------------------------------

PICTURE_QUERIES = ("<bos>", "the", "dog", "<pad>", "<pad>")  # the decoder input: rows
PICTURE_KEYS = ("ein", "Hund", "<eos>", "<pad>")  # the German source: columns
PICTURE_SRC_IDS = torch.tensor([[7, 8, 2, 0]])
PICTURE_SHAPE = (len(PICTURE_QUERIES), len(PICTURE_KEYS))


def _picture_expected() -> torch.Tensor:
    """The source padding mask ``(1, 1, 1, src_len)`` as the cross-attention scores ``(5, 4)`` see it."""
    return padding_mask(PICTURE_SRC_IDS)[0, 0].expand(*PICTURE_SHAPE)


def _as_bool_matrix(answer):
    """The student's rows of 0/1 (or True/False) as a bool tensor, or an error message."""
    rows, cols = PICTURE_SHAPE
    try:
        matrix = torch.as_tensor(answer)
    except (TypeError, ValueError) as exc:
        return None, f"could not read your answer as a {rows} x {cols} table of 0/1 ({exc})"
    if matrix.dtype != torch.bool:
        if matrix.is_floating_point() or not bool(((matrix == 0) | (matrix == 1)).all()):
            return None, "use only 0 (blocked) and 1 (may attend), or False/True"
        matrix = matrix.bool()
    if tuple(matrix.shape) != PICTURE_SHAPE:
        return None, (f"expected {rows} rows (one per English query) of {cols} entries (one per German key), "
                      f"got shape {tuple(matrix.shape)}")
    return matrix, None


def _why(row: int, col: int) -> str:
    """Point at a wrong entry and give the rule that decides it (the rule, not the 0/1 itself)."""
    query, key = PICTURE_QUERIES[row], PICTURE_KEYS[col]
    where = f"row {row} (English query '{query}'), column {col} (German key '{key}')"
    if key == "<pad>":
        reason = "what may a query do with a <pad> key, which is not a word?"
    elif query == "<pad>":
        reason = ("the padding mask acts on keys (columns) only, not on queries (rows); a <pad> query's output is "
                  "simply ignored by the loss.")
    elif col > row:
        reason = ("the whole German sentence is known before the decoder writes a word: is there a future to hide "
                  "from a query in cross-attention?")
    else:
        reason = "a real German key (not <pad>; <eos> included): is anything blocking it?"
    return f"{where} is wrong. Hint: {reason}"


@exercise("06.2", points=1, kind=VALUE)
def check_picture(ex, answer, quiet: bool = False):
    """The cross-attention mask of the decoder input ``<bos> the dog <pad> <pad>`` over the source
    ``ein Hund <eos> <pad>``, as 5 rows of 4 entries 0/1."""
    if answer is None:
        return ex.not_attempted("replace `None` by your 5 rows of 0/1", quiet)
    matrix, error = _as_bool_matrix(answer)
    if error:
        return ex.report(FAILED, error, quiet)
    expected = _picture_expected()
    wrong = (matrix != expected).nonzero().tolist()
    if wrong:
        row, col = wrong[0]
        return ex.report(FAILED, f"{len(wrong)} of {expected.numel()} entries are wrong. The first: "
                                      f"{_why(row, col)}", quiet)
    return ex.report(PASSED, "all 20 entries are right: no causal part in cross-attention, and the <pad> "
                                  "queries still read the German words.", quiet)


# ----------------------------------------------------------------------------------------------
# 06.3 fix the polarity bug
# ----------------------------------------------------------------------------------------------


def _mask_cases():
    return [
        ("src=[[5, 6, 7]], tgt=[[1, 8, 9]] (no padding)", (torch.tensor([[5, 6, 7]]), torch.tensor([[1, 8, 9]]), 0)),
        ("src=[[5, 6, 0], [7, 0, 0]], tgt=[[1, 8, 9, 0], [1, 8, 0, 0]]",
         (torch.tensor([[5, 6, 0], [7, 0, 0]]), torch.tensor([[1, 8, 9, 0], [1, 8, 0, 0]]), 0)),
        ("pad_id=3: src=[[5, 3]], tgt=[[1, 6, 3]]", (torch.tensor([[5, 3]]), torch.tensor([[1, 6, 3]]), 3)),
    ]


@exercise("06.3", points=2)
def check_fixed_masks(ex, student_fn, quiet: bool = False):
    """``fixed_masks(src, tgt, pad_id)`` returns (src_mask, tgt_mask), both True = may attend."""
    cases = _mask_cases()
    for description, (src, tgt, pad_id) in cases:
        result, verdict = ex.call_student(student_fn, (src.clone(), tgt.clone(), pad_id), case=description,
                                       quiet=quiet)
        if verdict is not None:
            return verdict
        if not isinstance(result, tuple) or len(result) != 2:
            return ex.report(FAILED, "return a tuple (src_mask, tgt_mask)", quiet)
        expectations = (("src_mask", result[0], padding_mask(src, pad_id),
                         "src_mask must be True at real tokens and False at <pad> (compare with !=)"),
                        ("tgt_mask", result[1], decoder_self_attention_mask(tgt, pad_id),
                         "tgt_mask must be True on and below the diagonal (tril, or ~triu(..., diagonal=1)) "
                         "and False at <pad> keys"))
        for name, got, expected, hint in expectations:
            difference = describe_difference(got, expected)
            if difference:
                return ex.report(FAILED, f"on case '{description}', {name}: {difference}. Hint: {hint}.", quiet)
    return ex.report(PASSED, f"both masks are right in all {len(cases)} cases: comments and code now agree.", quiet)
