"""Exercise checks for notebook 05 (multi-head attention).

05.1 ``split_heads`` / ``merge_heads`` for sequence-first activations: (seq, batch, d_model) <->
     (batch, n_heads, seq, d_head), the layout of ``nn.MultiheadAttention`` without ``batch_first``.
05.2 the parameter count of a multi-head attention block (d_model 512, 8 heads).
05.3 spot and fix the bug in a complete multi-head attention function (it scrambles tokens).

The checkers compare with reference reshapes and ``course_lib.attention.MultiHeadAttention`` and recognise
the typical reshaping mistakes (a view straight into the head layout, the batch-first split applied to
sequence-first input, a merge without moving the dimensions back).
"""

from __future__ import annotations

import torch

from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise, known_mistake

ATOL = 1e-5


# ----------------------------------------------------------------------------------------------
# 05.1 split and merge heads, sequence first
# ----------------------------------------------------------------------------------------------


def _reference_split(x, n_heads):
    seq, batch, d_model = x.shape
    x = x.view(seq, batch, n_heads, d_model // n_heads)  # (seq, batch, n_heads, d_head)
    return x.permute(1, 2, 0, 3)  # (batch, n_heads, seq, d_head)


def _reference_merge(x):
    batch, n_heads, seq, d_head = x.shape
    return x.permute(2, 0, 1, 3).contiguous().view(seq, batch, n_heads * d_head)  # (seq, batch, d_model)


_SPLIT_MISTAKES = [
    ("you split x as if it were batch first (the notebook's split, unchanged): the result is (seq, n_heads, batch, "
     "d_head). x is (seq, batch, d_model): after the view, the batch dimension must move to the front too",
     lambda x, h: x.reshape(x.size(0), x.size(1), h, x.size(2) // h).transpose(1, 2)),
    ("the shape is (seq, batch, n_heads, d_head): you cut each vector into heads but did not move the dimensions. "
     "Permute so that batch, then heads, come before the sequence",
     lambda x, h: x.reshape(x.size(0), x.size(1), h, x.size(2) // h)),
    ("you have (batch, seq, n_heads, d_head): batch is first, but the heads must also come before the sequence",
     lambda x, h: x.reshape(x.size(0), x.size(1), h, x.size(2) // h).transpose(0, 1)),
    ("you viewed x straight as (batch, n_heads, seq, d_head): a view only re-reads the numbers in memory order, "
     "so rows mix features of different tokens. Cut the last dimension into (n_heads, d_head) with a view, then "
     "permute", lambda x, h: x.reshape(x.size(1), h, x.size(0), x.size(2) // h)),
    ("the shape is right but head and position are swapped inside each token: view the last dimension as "
     "(n_heads, d_head), not (d_head, n_heads)",
     lambda x, h: x.reshape(x.size(0), x.size(1), x.size(2) // h, h).permute(1, 3, 0, 2)),
]

_MERGE_MISTAKES = [
    ("you merged with a view/reshape but without moving the dimensions back: rows of the result mix pieces of "
     "different tokens (the bug shown in the notebook). Permute to (seq, batch, n_heads, d_head) first",
     lambda x: x.reshape(x.size(2), x.size(0), x.size(1) * x.size(3))),
    ("you merged back to batch first, (batch, seq, d_model), as in step 4; this layout is sequence first: the "
     "result must be (seq, batch, d_model)", lambda x: x.transpose(1, 2).reshape(x.size(0), x.size(2), -1)),
]


def _split_cases():
    g = torch.Generator().manual_seed(5)
    return [  # seq, batch and n_heads all differ, so a wrong order shows in the shape
        ("x of shape (5, 2, 8) = (seq, batch, d_model), n_heads=4", (torch.randn(5, 2, 8, generator=g), 4)),
        ("x of shape (3, 1, 12), n_heads=2", (torch.randn(3, 1, 12, generator=g), 2)),
        ("x of shape (7, 3, 16), n_heads=4", (torch.randn(7, 3, 16, generator=g), 4)),
        ("x of shape (4, 2, 6), n_heads=1 (one big head)", (torch.randn(4, 2, 6, generator=g), 1)),
    ]


def _explain(got, expected, mistakes, args) -> str:
    return (known_mistake(mistakes, lambda wrong: describe_difference(got, wrong(*args), atol=ATOL) is None)
            or describe_difference(got, expected, atol=ATOL))


@exercise("05.1", points=3)
def check_split_merge(ex, split_heads, merge_heads, quiet: bool = False):
    """Sequence-first ``split_heads(x, n_heads)`` and ``merge_heads(x)`` are right and undo each other."""
    cases = _split_cases()
    todo = "replace `raise NotImplementedError` in split_heads and merge_heads"
    for description, (x, n_heads) in cases:
        got, verdict = ex.call_student(split_heads, (x, n_heads), case=description, who="split_heads",
                                    todo=todo, quiet=quiet)
        if verdict is not None:
            return verdict
        expected = _reference_split(x, n_heads)
        if describe_difference(got, expected, atol=ATOL):
            why = _explain(got, expected, _SPLIT_MISTAKES, (x, n_heads))
            return ex.report(FAILED, f"split_heads on case '{description}': {why}.", quiet)
    for description, (x, n_heads) in cases:
        # contiguous in the head layout, as the output of attention is: a permute then breaks .view
        heads = _reference_split(x, n_heads).contiguous()
        got, verdict = ex.call_student(merge_heads, (heads,), case=description, who="merge_heads",
                                    todo=todo, quiet=True)
        if verdict is not None and verdict.status != FAILED:
            return ex.report(verdict.status, verdict.message, quiet)
        if verdict is not None:
            hint = ""
            if "view" in verdict.message or "contiguous" in verdict.message:
                hint = (" After a permute the tensor is not contiguous in memory: call .contiguous() before .view"
                        " (or use .reshape). Do NOT drop the permute to make the error go away.")
            return ex.report(FAILED, f"{verdict.message.rstrip('.')}.{hint}", quiet)
        if describe_difference(got, x, atol=ATOL):
            why = _explain(got, x, _MERGE_MISTAKES, (heads,))
            return ex.report(FAILED, f"merge_heads on case '{description}': {why}.", quiet)
    return ex.report(PASSED, f"split_heads and merge_heads are right on all {len(cases)} sequence-first cases, "
                  "and merge_heads(split_heads(x)) gives back x.", quiet)


# ----------------------------------------------------------------------------------------------
# 05.2 parameter count
# ----------------------------------------------------------------------------------------------


@exercise("05.2", points=1, kind=VALUE)
def check_parameter_count(ex, answer, quiet: bool = False):
    """Parameters of multi-head attention with d_model 512 and 8 heads (biases included)."""
    d, h = 512, 8
    expected = 4 * d * d + 4 * d
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, int)):
        return ex.report(FAILED, f"expected a whole number (int), got {type(answer).__name__}", quiet)
    known = {
        4 * d * d: "that counts the four weight matrices but not their biases (d_model numbers each)",
        3 * d * d + 3 * d: "that is W_q, W_k and W_v; the output projection W_o has parameters too",
        h * (4 * d * d + 4 * d): "the number of heads does not multiply the count: the heads share the same "
        "d_model x d_model projections, each head uses a d_head-wide slice of them",
        4 * d * (d // h) + 4 * (d // h): "that is the size of one head's slice; the projections are d_model x d_model",
    }
    if answer in known:
        return ex.report(FAILED, f"{answer} is not right: {known[answer]}.", quiet)
    hint = "Four nn.Linear(d_model, d_model) layers (W_q, W_k, W_v, W_o), each with a bias."
    return ex.check_answer(answer, expected, hint=hint, quiet=quiet)


# ----------------------------------------------------------------------------------------------
# 05.3 spot the bug
# ----------------------------------------------------------------------------------------------


def buggy_multi_head_attention(x, mha):
    """The function of exercise 05.3 as given to the student (the merge forgets to move heads back)."""
    batch, seq, d_model = x.shape
    n_heads, d_head = mha.n_heads, mha.d_head
    q = mha.q_proj(x).reshape(batch, seq, n_heads, d_head).permute(0, 2, 1, 3)
    k = mha.k_proj(x).reshape(batch, seq, n_heads, d_head).permute(0, 2, 1, 3)
    v = mha.v_proj(x).reshape(batch, seq, n_heads, d_head).permute(0, 2, 1, 3)
    scores = q @ k.transpose(-2, -1) / d_head**0.5
    heads = scores.softmax(dim=-1) @ v
    merged = heads.reshape(batch, seq, d_model)
    return mha.out_proj(merged)


def _mha_cases():
    from course_lib.attention import MultiHeadAttention

    with torch.random.fork_rng(devices=[]):  # fixed cases without touching the notebook's random state
        torch.manual_seed(3)
        cases = []
        for d_model, n_heads, batch, seq in [(8, 2, 2, 5), (12, 3, 1, 4), (16, 4, 3, 6)]:
            mha = MultiHeadAttention(d_model, n_heads).eval()
            x = torch.randn(batch, seq, d_model)
            cases.append((f"d_model={d_model}, n_heads={n_heads}, x of shape {(batch, seq, d_model)}", x, mha))
    return cases


@exercise("05.3", points=2)
def check_fixed_multi_head_attention(ex, student_fn, quiet: bool = False):
    """The repaired ``multi_head_attention(x, mha)`` equals ``mha(x, x, x)``."""
    cases = _mha_cases()
    outputs = []
    with torch.no_grad():
        for description, x, mha in cases:
            got, verdict = ex.call_student(student_fn, (x, mha), case=description, quiet=quiet)
            if verdict is not None:
                return verdict
            outputs.append(got)
        if all(describe_difference(got, buggy_multi_head_attention(x, mha), atol=ATOL) is None
               for got, (_, x, mha) in zip(outputs, cases, strict=True)):
            return ex.not_attempted("the function still gives the buggy output; find the line that scrambles "
                                 "tokens, fix it", quiet)
        for got, (description, x, mha) in zip(outputs, cases, strict=True):
            difference = describe_difference(got, mha(x, x, x), atol=ATOL)
            if difference:
                return ex.report(FAILED, f"on case '{description}': {difference}. Compare each line with "
                              "the steps of the notebook; only one line was wrong.", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases equal course_lib's MultiHeadAttention: the heads go back "
                  "next to each other (permute / transpose) before the reshape.", quiet)
