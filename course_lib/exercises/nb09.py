"""Exercise checks for notebook 09 (the decoder).

09.1 ``shift_right``: the decoder input ``<bos> y1 ... yn`` and the labels ``y1 ... yn <eos>`` of one sentence.
09.2 predict the shape of one decoder layer's cross-attention weights for a described batch.
09.3 ``greedy_step``: extend a batch of prefixes by the most likely next token.

Each checker compares with the course's own code (``course_lib.data`` builds decoder inputs and labels
the same way; ``course_lib.decoding.greedy_decode`` takes the same steps) and names the typical mistake
it recognises: swapped or missing special tokens, transposed attention shapes, the wrong position or
dimension of the argmax.
"""

from __future__ import annotations

import torch

from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise, known_mistake
from course_lib.model import Transformer, TransformerConfig
from course_lib.tokenization import BOS_ID, EOS_ID

# ----------------------------------------------------------------------------------------------
# 09.1 shift right
# ----------------------------------------------------------------------------------------------


def reference_shift_right(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ids ``(n,)`` of ``y1 ... yn`` -> decoder input ``<bos> y1 ... yn`` and labels ``y1 ... yn <eos>``, both ``(n + 1,)``."""
    bos, eos = ids.new_tensor([BOS_ID]), ids.new_tensor([EOS_ID])
    return torch.cat([bos, ids]), torch.cat([ids, eos])


def _shift_cases():
    return [
        ("a 6-token sentence [13, 70, 425, 122, 7, 5]", torch.tensor([13, 70, 425, 122, 7, 5])),
        ("a one-token sentence [42]", torch.tensor([42])),
        ("ten tokens [4, 5, ..., 13]", torch.arange(4, 14)),
        ("a sentence with <unk> (id 3) in it: [9, 3, 11]", torch.tensor([9, 3, 11])),
    ]


def _as_long_tensor(value, name: str):
    """The student's output as a LongTensor (lists are accepted), or a message saying what is wrong."""
    if isinstance(value, (list, tuple)):
        try:
            value = torch.tensor(value, dtype=torch.long)
        except (TypeError, ValueError):
            return None, f"the {name} must be a 1-D tensor (or list) of ints"
    if not isinstance(value, torch.Tensor):
        return None, f"the {name} must be a 1-D tensor of token ids, got {type(value).__name__}"
    if value.dtype.is_floating_point or value.dtype == torch.bool:
        return None, f"the {name} must hold integer token ids (dtype long), got dtype {value.dtype}"
    return value.long(), None


def _shift_hint(dec_in: torch.Tensor, labels: torch.Tensor, ids: torch.Tensor) -> str:
    want_in, want_labels = reference_shift_right(ids)
    if torch.equal(dec_in, want_labels) and torch.equal(labels, want_in):
        return " You swapped them: the decoder INPUT starts with <bos>, the LABELS end with <eos>."
    if torch.equal(dec_in, ids) or torch.equal(labels, ids):
        return " Each side needs one special token: <bos> (id 1) in front of the input, <eos> (id 2) after the labels."
    full = torch.cat([ids.new_tensor([BOS_ID]), ids, ids.new_tensor([EOS_ID])])
    if torch.equal(dec_in, full) or torch.equal(labels, full):
        return (" That is the whole <bos> y1 ... yn <eos>; the input drops the last token (<eos>) and the labels"
                " drop the first (<bos>), so both have n + 1 tokens.")
    if len(dec_in) == len(ids) + 1 and torch.equal(dec_in[1:], ids) and dec_in[0] == EOS_ID:
        return " The input must start with <bos> (id 1), not <eos> (id 2)."
    if len(labels) == len(ids) + 1 and torch.equal(labels[:-1], ids) and labels[-1] == BOS_ID:
        return " The labels must end with <eos> (id 2), not <bos> (id 1)."
    return ""


@exercise("09.1", points=2)
def check_shift_right(ex, student_fn, quiet: bool = False):
    """``shift_right(ids)`` returns ``(decoder_input, labels)`` for a 1-D tensor of target ids."""
    cases = _shift_cases()
    for description, ids in cases:
        result, verdict = ex.call_student(student_fn, (ids.clone(),), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return ex.report(FAILED, f"on case {description}: return two things, (decoder_input, labels).",
                          quiet)
        dec_in, problem = _as_long_tensor(result[0], "decoder input")
        if problem is None:
            labels, problem = _as_long_tensor(result[1], "labels")
        if problem is not None:
            return ex.report(FAILED, f"on case {description}: {problem}.", quiet)
        want_in, want_labels = reference_shift_right(ids)
        for name, got, want in (("decoder input", dec_in, want_in), ("labels", labels, want_labels)):
            difference = describe_difference(got, want)
            if difference:
                hint = _shift_hint(dec_in, labels, ids)
                return ex.report(FAILED,
                    f"on case {description}, the {name}: expected {want.tolist()}, got {got.tolist()}.{hint}", quiet,
                )
    return ex.report(PASSED, f"all {len(cases)} sentences give the same decoder input and labels as "
                  "course_lib.data (TranslationDataset + collate_batch).", quiet)


# ----------------------------------------------------------------------------------------------
# 09.2 the cross-attention shape
# ----------------------------------------------------------------------------------------------

SHAPE_BATCH, SHAPE_HEADS, LONGEST_GERMAN, LONGEST_ENGLISH = 32, 4, 11, 13
CROSS_ATTENTION_SHAPE = (SHAPE_BATCH, SHAPE_HEADS, LONGEST_ENGLISH + 1, LONGEST_GERMAN + 1)


def _shape_hint(answer: tuple) -> str:
    b, h, q, k = CROSS_ATTENTION_SHAPE
    hints = {
        (b, h, k, q): "Rows are the queries, and in cross-attention the queries come from the DECODER (English); "
                      "the keys come from the German memory.",
        (b, h, LONGEST_ENGLISH, LONGEST_GERMAN): "Count the special tokens: the decoder input is <bos> y1 ... yn and "
                                                 "the source is x1 ... xm <eos>.",
        (b, h, LONGEST_ENGLISH + 2, LONGEST_GERMAN + 1): "The decoder input has <bos> but not <eos>: "
                                                         "n + 1 positions, not n + 2.",
        (b, h, LONGEST_ENGLISH + 1, LONGEST_GERMAN + 2): "The source sentence gets <eos> only (no <bos>): m + 1 positions.",
        (b, h, q, q): "That is the shape of the decoder's SELF-attention; cross-attention's keys are the German positions.",
        (b, h, k, k): "That is the shape of the encoder's self-attention; the queries of cross-attention are English.",
        (b, q, k): "Attention weights keep a head dimension: (batch, n_heads, q_len, k_len).",
        (b, q, h, k): "The head dimension comes second: (batch, n_heads, q_len, k_len).",
        (b, h, q, 16): "The last dimension is the number of keys (source positions), not d_head.",
    }
    return hints.get(answer, "Work it out as (batch, n_heads, q_len, k_len): queries from the decoder input, "
                             "keys from the encoder output.")


@exercise("09.2", points=1, kind=VALUE)
def check_cross_attention_shape(ex, answer, quiet: bool = False):
    """The shape of the cross-attention weights of one decoder layer for the batch described in the notebook."""
    if answer is None:
        return ex.not_attempted("set your answer instead of `None`", quiet)
    if isinstance(answer, torch.Size):
        answer = tuple(answer)
    if not isinstance(answer, (tuple, list)) or not all(isinstance(n, int) for n in answer):
        return ex.report(FAILED, f"give the shape as a tuple of ints, e.g. (2, 3, 4, 5), got {answer!r}.", quiet)
    answer = tuple(answer)
    if answer == CROSS_ATTENTION_SHAPE:
        return ex.report(PASSED, f"correct: {CROSS_ATTENTION_SHAPE} = (batch, n_heads, English positions "
                      "incl. <bos>, German positions incl. <eos>).", quiet)
    return ex.report(FAILED, f"{answer} is not right. {_shape_hint(answer)}", quiet)


# ----------------------------------------------------------------------------------------------
# 09.3 one greedy decoding step
# ----------------------------------------------------------------------------------------------


def reference_greedy_step(model, memory: torch.Tensor, src: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """tokens ``(batch, t)`` -> ``(batch, t + 1)``: append the most likely next token of every row."""
    logits = model.decode(tokens, memory, src)  # (batch, t, tgt_vocab_size)
    next_token = logits[:, -1].argmax(dim=-1)  # (batch,): the prediction of the newest position
    return torch.cat([tokens, next_token[:, None]], dim=1)  # (batch, t + 1)


_GREEDY_MISTAKES = [
    ("you take the prediction of the FIRST position (logits[:, 0]); the next token is predicted by the newest "
     "position, logits[:, -1]",
     lambda logits: logits[:, 0].argmax(dim=-1)),
    ("you take the LEAST likely token (argmin); greedy decoding takes the argmax",
     lambda logits: logits[:, -1].argmin(dim=-1)),
]


def _greedy_setup():
    """A small seeded model in eval mode, a padded source batch, its memory and a few prefixes."""
    generator = torch.Generator().manual_seed(9)
    config = TransformerConfig(src_vocab_size=31, tgt_vocab_size=29, d_model=16, n_heads=2, n_encoder_layers=1,
                               n_decoder_layers=2, d_ff=32, max_len=24)
    state = torch.get_rng_state()
    torch.manual_seed(9)
    model = Transformer(config).eval()
    torch.set_rng_state(state)  # do not disturb the notebook's random stream
    src = torch.randint(4, 31, (3, 7), generator=generator)
    src[:, -1] = EOS_ID
    src[2, 4:] = 0  # a shorter, padded sentence
    src[2, 3] = EOS_ID
    prefixes = [
        ("prefixes of length 1 (just <bos>)", torch.full((3, 1), BOS_ID)),
        ("prefixes of length 3", torch.cat([torch.full((3, 1), BOS_ID), torch.randint(4, 29, (3, 2), generator=generator)], 1)),
        ("prefixes of length 6", torch.cat([torch.full((3, 1), BOS_ID), torch.randint(4, 29, (3, 5), generator=generator)], 1)),
    ]
    return model, src, prefixes


def _greedy_hint(got: torch.Tensor, tokens: torch.Tensor, logits: torch.Tensor) -> str:
    if got.shape == tokens.shape and torch.equal(got, tokens):
        return " You returned the prefix unchanged: append the new token with torch.cat(..., dim=1)."
    if got.shape == tokens.shape[:1] or got.shape == (tokens.size(0), 1):
        return " Return the whole prefix with the new token appended, shape (batch, t + 1), not only the new token."
    if got.shape == tokens.shape:
        return " The result has as many columns as the input: append the new token with torch.cat(..., dim=1)."
    if got.dim() == 2 and got.shape == (tokens.size(0), tokens.size(1) + 1) and not torch.equal(got[:, :-1], tokens):
        return " The prefix must stay unchanged; only a new last column is added."
    if got.dim() == 2 and got.shape == (tokens.size(0), tokens.size(1) + 1):

        def gives_got(wrong):
            candidate = wrong(logits)
            return candidate is not None and candidate.shape == got[:, -1].shape and torch.equal(got[:, -1], candidate)

        message = known_mistake(_GREEDY_MISTAKES, gives_got)
        if message:
            return f" It looks like {message}."
    return ""


@exercise("09.3", points=3)
def check_greedy_step(ex, student_fn, quiet: bool = False):
    """``greedy_step(model, memory, src, tokens)`` appends the argmax of the newest position's logits."""
    model, src, prefixes = _greedy_setup()
    with torch.no_grad():
        memory = model.encode(src)  # (batch, src_len, d_model)
        for description, tokens in prefixes:
            got, verdict = ex.call_student(student_fn, (model, memory, src, tokens.clone()), case=description,
                                        quiet=quiet)
            if verdict is not None:
                return verdict
            expected = reference_greedy_step(model, memory, src, tokens)
            if not isinstance(got, torch.Tensor):
                return ex.report(FAILED, f"on case '{description}': return a tensor of token ids "
                              f"(batch, t + 1), got {type(got).__name__}.", quiet)
            difference = describe_difference(got, expected)
            if difference:
                hint = _greedy_hint(got, tokens, model.decode(tokens, memory, src))
                return ex.report(FAILED, f"on case '{description}': {difference}.{hint}", quiet)
    return ex.report(PASSED, f"all {len(prefixes)} batches of prefixes are extended exactly as "
                  "course_lib's greedy decoding does.", quiet)
