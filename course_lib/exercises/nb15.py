"""Exercise checks for notebook 15 (your parts make a GPT).

15.1 ``next_token_probs``: the distribution a sampler draws the next token from (temperature, top-k).
15.2 ``language_model_loss``: the next-token loss on every position of a batch of sentences.

Checkers compare with the reference (:func:`course_lib.gpt.next_token_probs`, :func:`course_lib.gpt.language_model_loss`)
and name the typical mistake they recognise: the temperature multiplied instead of divided or applied after the
softmax, top-k zeroed after the softmax without renormalising, one logit too many or too few kept, ties at the
k-th value dropped; the loss without the shift or shifted the wrong way, padding scored, a sum instead of a
mean, a mean per sentence.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_lib.exercises import FAILED, PASSED, describe_difference, exercise, known_mistake
from course_lib.gpt import language_model_loss as reference_loss
from course_lib.gpt import next_token_probs as reference_probs


def _close(got, expected, atol: float = 1e-6) -> bool:
    return (isinstance(got, torch.Tensor) and got.shape == expected.shape
            and torch.allclose(got.detach().double(), expected.double(), atol=atol, rtol=1e-5))


# ----------------------------------------------------------------------------------------------
# 15.1 the sampling distribution
# ----------------------------------------------------------------------------------------------


def _top_k_exactly(logits: torch.Tensor, k: int) -> torch.Tensor:
    """-inf everywhere but at exactly k entries per row (ties at the k-th value broken by position)."""
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, logits.topk(k, dim=-1).indices, True)
    return logits.masked_fill(~keep, float("-inf"))


def _keep_top(logits: torch.Tensor, k: int) -> torch.Tensor:
    kth = logits.topk(k, dim=-1).values[:, -1:]  # (batch, 1)
    return logits.masked_fill(logits < kth, float("-inf"))


_PROBS_MISTAKES = [
    ("you multiply the logits by the temperature; divide them by it (a low temperature must sharpen)",
     lambda x, t, k: reference_probs(x * t * t, t, k)),
    ("the temperature is applied to the probabilities after the softmax; divide the LOGITS by it, then softmax",
     lambda x, t, k: reference_probs(x, 1.0, k) / t),
    ("you zero the entries outside the top k after the softmax but do not renormalise: set their LOGITS to -inf "
     "before the softmax (or divide by the kept sum)",
     lambda x, t, k: (F.softmax(x / t, -1) * (_keep_top(x, k) > float("-inf"))) if k else F.softmax(x / t, -1)),
    ("you keep one logit too many: keep those >= the k-th largest (topk(k).values[:, -1]), not > the (k+1)-th",
     lambda x, t, k: reference_probs(x, t, min(k + 1, x.size(-1))) if k else reference_probs(x, t)),
    ("you keep one logit too few: the k-th largest itself must stay",
     lambda x, t, k: reference_probs(x, t, max(k - 1, 1)) if k else reference_probs(x, t)),
    ("ties at the k-th largest value are dropped: keep every logit >= topk(k).values[:, -1] (as nanoGPT and "
     "Hugging Face do)",
     lambda x, t, k: F.softmax(_top_k_exactly(x / t, k), -1) if k else reference_probs(x, t)),
    ("you return the logits after temperature and top-k; return PROBABILITIES (softmax over the last dimension)",
     lambda x, t, k: _keep_top(x / t, k) if k else x / t),
]


def _probs_cases():
    g = torch.Generator().manual_seed(15)
    wide = torch.randn(3, 12, generator=g) * 2  # (batch, vocab)
    return [
        ("one row, temperature 1, no top-k", torch.tensor([[2.0, 1.0, 0.0, -1.0, 0.5]]), 1.0, None),
        ("three rows of 12 logits, temperature 0.5 (sharper)", wide, 0.5, None),
        ("three rows, temperature 2 (flatter)", wide, 2.0, None),
        ("three rows, top-3 at temperature 1", wide, 1.0, 3),
        ("three rows, top-5 at temperature 0.7", wide, 0.7, 5),
        ("a tie at the 2nd largest value, top-2", torch.tensor([[3.0, 1.0, 1.0, 0.0, -2.0]]), 1.0, 2),
        ("top-1 (greedy as a distribution)", wide, 1.3, 1),
    ]


@exercise("15.1", points=2)
def check_next_token_probs(ex, student_fn, quiet: bool = False):
    """``next_token_probs(logits, temperature, top_k)`` equals :func:`course_lib.gpt.next_token_probs`."""
    cases = _probs_cases()
    outputs = []
    for description, logits, temperature, top_k in cases:
        got, verdict = ex.call_student(student_fn, (logits.clone(), temperature, top_k), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        outputs.append(got)
    for got, (description, logits, temperature, top_k) in zip(outputs, cases, strict=True):
        difference = describe_difference(got, reference_probs(logits, temperature, top_k), atol=1e-6, rtol=1e-5)
        if difference:
            hint = known_mistake(_PROBS_MISTAKES, lambda wrong, got=got, x=logits, t=temperature, k=top_k:
                                 _close(got, wrong(x, t, k)), tolerate=(RuntimeError,))
            return ex.report(FAILED, f"on case '{description}': {hint or difference}.", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with the reference.", quiet)


# ----------------------------------------------------------------------------------------------
# 15.2 the language-model loss
# ----------------------------------------------------------------------------------------------


def _per_sentence_mean(logits, ids, pad_id):
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], ignore_index=pad_id, reduction="none")
    counts = (ids[:, 1:] != pad_id).sum(-1).clamp(min=1)  # (batch,)
    return (losses.sum(-1) / counts).mean()


_LOSS_MISTAKES = [
    ("there is no shift: position t must be scored against the NEXT token ids[:, t + 1] (logits[:, :-1] against "
     "ids[:, 1:])",
     lambda logits, ids, pad: F.cross_entropy(logits.flatten(0, 1), ids.flatten(), ignore_index=pad)),
    ("the shift goes the wrong way: logits[:, :-1] (every position but the last) predict ids[:, 1:]",
     lambda logits, ids, pad: F.cross_entropy(logits[:, 1:].flatten(0, 1), ids[:, :-1].flatten(), ignore_index=pad)),
    ("padding is scored: pass ignore_index=pad_id so that <pad> targets do not count",
     lambda logits, ids, pad: F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())),
    ("you return the sum over the tokens; return the mean per scored token",
     lambda logits, ids, pad: reference_loss(logits, ids, pad, reduction="sum")),
    ("you average per sentence, then over the batch: every scored token must weigh the same (long sentences "
     "have more)",
     _per_sentence_mean),
]


def _loss_cases():
    g = torch.Generator().manual_seed(150)
    cases = []
    for description, lengths, vocab, pad_id in [
        ("one sentence of 6 tokens, no padding", [6], 9, 0),
        ("three sentences of 7, 4 and 2 tokens, padded to 7", [7, 4, 2], 11, 0),
        ("four sentences of different lengths, vocabulary 20", [5, 9, 3, 9], 20, 0),
        ("two sentences with pad_id 3", [6, 3], 8, 3),
    ]:
        seq = max(lengths)
        ids = torch.full((len(lengths), seq), pad_id)
        for row, length in enumerate(lengths):
            ids[row, :length] = torch.randint(4, vocab, (length,), generator=g)
            ids[row, 0], ids[row, length - 1] = 1, 2  # <bos> ... <eos>
        logits = torch.randn(len(lengths), seq, vocab, generator=g) * 2  # (batch, seq, vocab)
        cases.append((description, logits, ids, pad_id))
    return cases


@exercise("15.2", points=2)
def check_language_model_loss(ex, student_fn, quiet: bool = False):
    """``language_model_loss(logits, ids, pad_id)`` equals :func:`course_lib.gpt.language_model_loss`."""
    cases = _loss_cases()
    for description, logits, ids, pad_id in cases:
        got, verdict = ex.call_student(student_fn, (logits.clone(), ids.clone(), pad_id), case=description,
                                       quiet=quiet)
        if verdict is not None:
            return verdict
        if not isinstance(got, torch.Tensor) or got.numel() != 1:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            return ex.report(FAILED, f"on case '{description}': return the loss as a one-number tensor, got {shape}.",
                             quiet)
        expected = reference_loss(logits, ids, pad_id)
        if not torch.isclose(got.detach().double().reshape(()), expected.double(), atol=1e-5, rtol=1e-5):
            hint = known_mistake(_LOSS_MISTAKES, lambda wrong, got=got, logits=logits, ids=ids, pad=pad_id: bool(
                torch.isclose(got.detach().double().reshape(()), wrong(logits, ids, pad).double(), atol=1e-5,
                              rtol=1e-5)), tolerate=(RuntimeError, ValueError))
            hint = hint or "score logits[:, :-1] against ids[:, 1:] with cross-entropy, ignoring pad_id targets"
            return ex.report(FAILED, f"on case '{description}': got {got.item():.4f}. Hint: {hint}.", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree with the reference.", quiet)
