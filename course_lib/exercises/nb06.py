"""Exercise checks for notebook 06 (masking).

06.1 build the decoder's combined mask (padding AND causal) for a batch of target ids.
06.2 predict the picture: the cross-attention mask of a short padded pair, entry by entry.
06.3 fix the polarity bug of the articles' mask code (comments that contradict the code).
06.4 convert the course's masks into what ``nn.Transformer`` takes: a bool ``src_key_padding_mask`` (True =
     blocked) and an additive float ``tgt_mask`` (0.0 / -inf).

06.1-06.3 compare with ``course_lib.masks`` (True = may attend) and explain a wrong entry in terms
of what it means: a padded key, a future key, or a padded query. 06.4 compares with
``course_lib.compat``'s converter and names the classic conversion mistakes: no inversion (or two),
-inf where attending is allowed, 1/0 instead of 0/-inf, 0 * -inf = NaN, the wrong axis or shape.
"""

from __future__ import annotations

import torch

from course_lib.compat import to_torch_attn_mask, to_torch_key_padding_mask
from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise, known_mistake
from course_lib.masks import causal_mask, decoder_self_attention_mask, padding_mask

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


# ----------------------------------------------------------------------------------------------
# 06.4 convert for PyTorch
# ----------------------------------------------------------------------------------------------


def _window_mask(size: int, width: int) -> torch.Tensor:
    """A causal mask that also forgets: query i may read keys i - width + 1 .. i (True = may attend)."""
    return causal_mask(size) & torch.ones(size, size, dtype=torch.bool).triu(1 - width)


def _to_pytorch_cases():
    """(description, src ids, the course tgt_mask): the checker hands over padding_mask(src) and tgt_mask."""
    return [
        ("src=[[5, 6, 7, 2], [5, 2, 0, 0]], tgt_mask=causal_mask(4)",
         torch.tensor([[5, 6, 7, 2], [5, 2, 0, 0]]), causal_mask(4)),
        ("one sentence with padding: src=[[5, 2, 0]], tgt_mask=causal_mask(3)", torch.tensor([[5, 2, 0]]),
         causal_mask(3)),
        ("no padding, a single target position: src=[[4, 2]], tgt_mask=causal_mask(1)", torch.tensor([[4, 2]]),
         causal_mask(1)),
        ("three sentences, tgt_mask: each query reads itself and the key before it (a window of 2)",
         torch.tensor([[4, 5, 6, 2], [4, 2, 0, 0], [7, 8, 2, 0]]), _window_mask(5, 2)),
    ]


_INVERT = ("a course mask is True where attending is ALLOWED, PyTorch's bool masks are True where it is BLOCKED: "
           "invert exactly once (~)")
# (message, what that mistake returns from (src_mask, tgt_mask)): the classic conversion mistakes
_PADDING_MISTAKES = [
    (f"it is True at the real tokens, the course's polarity (not inverted, or inverted twice): "
     f"{_INVERT}", lambda src_mask, tgt_mask: src_mask[:, 0, 0]),
    ("it keeps the course's shape (batch, 1, 1, src_len); PyTorch wants (batch, src_len): take "
     "the keys dimension, src_mask[:, 0, 0]", lambda src_mask, tgt_mask: ~src_mask),
    ("it lost its batch dimension: squeeze() also drops the batch when batch = 1; index the two "
     "size-1 dimensions instead, src_mask[:, 0, 0]", lambda src_mask, tgt_mask: ~src_mask.squeeze()),
]


def _additive(blocked: torch.Tensor) -> torch.Tensor:
    return torch.zeros(blocked.shape).masked_fill(blocked, float("-inf"))


_FLOAT_MISTAKES = [
    ("it has -inf where the course's mask is True, i.e. where attending is allowed (the inversion is "
     "missing or done twice): -inf goes where the course's mask is False", lambda m: _additive(m)),
    ("it has -inf below the diagonal: rows are queries and columns keys (the wrong axis); query i may "
     "read keys j <= i, so -inf goes above the diagonal", lambda m: _additive(~m).T),
    ("it holds 1.0 and 0.0. A float mask is ADDED to the scores, so adding 1.0 or 0.0 blocks nothing: "
     "use 0.0 where attending is allowed and -inf where it is blocked", lambda m: m.float()),
    ("it holds 0.0 and 1.0: adding 1.0 to a blocked score does not block it; use -inf, not 1.0",
     lambda m: (~m).float()),
]


def _describe_float_mask(got, expected) -> str | None:
    """How a float mask with -inf entries differs from ``expected`` (describe_difference cannot subtract -inf)."""
    if tuple(got.shape) != tuple(expected.shape):
        return f"expected shape {tuple(expected.shape)}, got shape {tuple(got.shape)}"
    if got.isnan().any():
        return ("it contains NaN: 0 * -inf is NaN, so a 0/1 mask multiplied by -inf does not work; fill with "
                "masked_fill or torch.where instead")
    wrong = (got.double() != expected.double()).nonzero()
    if not len(wrong):
        return None
    index = tuple(int(i) for i in wrong[0])
    blocked = bool(expected[index] == float("-inf"))
    finite = torch.isfinite(expected)  # the allowed entries, 0.0
    if torch.equal(got[finite].double(), expected[finite].double()) and bool(
            (torch.isfinite(got[~finite]) & (got[~finite] < -1e3)).all()):
        return ("it blocks with a large finite number; PyTorch's form (what "
                "nn.Transformer.generate_square_subsequent_mask returns) uses float('-inf')")
    return (f"{len(wrong)} entries differ, the first at {index}, where query {index[0]} "
            f"{'may not' if blocked else 'may'} read key {index[1]}")


def _tgt_mask_difference(got, tgt_mask) -> str | None:
    """What is wrong with the student's float tgt_mask, with the known mistake when one explains it."""
    expected = to_torch_attn_mask(tgt_mask, as_additive=True)  # (tgt_len, tgt_len): 0.0 / -inf
    if not isinstance(got, torch.Tensor):
        return f"it must be a torch.Tensor, got {type(got).__name__}"
    if got.dtype == torch.bool:
        if torch.equal(got, ~tgt_mask):
            return ("it is PyTorch's bool form (True = blocked), which nn.Transformer accepts too, but this "
                    "exercise asks for the additive float form: 0.0 where the course's mask is True, -inf where it "
                    "is False")
        return f"it must be a float tensor (0.0 = may attend, -inf = blocked), got a bool tensor; {_INVERT}"
    if not got.is_floating_point():
        return f"it must be a float tensor (0.0 = may attend, -inf = blocked), got {got.dtype}"
    difference = _describe_float_mask(got, expected)
    if difference is None:
        return None
    mistake = known_mistake(_FLOAT_MISTAKES, lambda wrong: _describe_float_mask(got, wrong(tgt_mask)) is None,
                            tolerate=(RuntimeError,))
    return mistake or difference


def _padding_difference(got, src, src_mask) -> str | None:
    """What is wrong with the student's bool src_key_padding_mask, with the known mistake when one explains it."""
    expected = to_torch_key_padding_mask(src)  # (batch, src_len), True at <pad>
    if isinstance(got, torch.Tensor) and got.is_floating_point():
        return ("it must be bool here (True at <pad> = blocked); keep the float form for "
                "tgt_mask")
    difference = describe_difference(got, expected)
    if difference is None:
        return None
    mistake = known_mistake(_PADDING_MISTAKES, lambda wrong: torch.equal(got, wrong(src_mask, None)),
                            tolerate=(RuntimeError, TypeError))
    if mistake is None and isinstance(got, torch.Tensor) and tuple(got.shape) != tuple(expected.shape):
        mistake = "PyTorch's key_padding_mask has shape (batch, src_len), one entry per key"
    return f"{difference}. {mistake}" if mistake else difference


@exercise("06.4", points=2)
def check_to_pytorch(ex, student_fn, quiet: bool = False):
    """``to_pytorch(src_mask, tgt_mask)`` turns the course's masks (True = may attend) into what ``nn.Transformer``
    takes: ``src_key_padding_mask`` bool ``(batch, src_len)``, True at ``<pad>``, and ``tgt_mask`` float
    ``(tgt_len, tgt_len)``, 0.0 where the course's mask is True and -inf where it is False."""
    cases = _to_pytorch_cases()
    for description, src, tgt_mask in cases:
        src_mask = padding_mask(src)  # (batch, 1, 1, src_len)
        result, verdict = ex.call_student(student_fn, (src_mask.clone(), tgt_mask.clone()), case=description,
                                          quiet=quiet)
        if verdict is not None:
            return verdict
        if not isinstance(result, tuple) or len(result) != 2:
            return ex.report(FAILED, "return a tuple (src_key_padding_mask, tgt_mask)", quiet)
        for name, why in (("src_key_padding_mask", _padding_difference(result[0], src, src_mask)),
                          ("tgt_mask", _tgt_mask_difference(result[1], tgt_mask))):
            if why:
                return ex.report(FAILED, f"on case '{description}', {name}: {why}.", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with course_lib.compat's converter "
                             "(to_torch_key_padding_mask, to_torch_attn_mask(..., as_additive=True)).", quiet)

