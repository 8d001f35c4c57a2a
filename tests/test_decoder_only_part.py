"""Notebook 15's part, ``decoder_only_layer`` (a GPT's block), is a student part like the others: its contract
(shape, and above all causality: no output may depend on a later position), ``%%my_part``, the saved course
edition, the ownership table of the model that uses it, and which model uses which parts.

The bug finder's side (the comparison with course_lib's twin, the planted bugs, stage 2 in a GPT) is in
``tests/test_bug_catalogue.py`` and ``tests/test_diagnosis.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from course_lib import attention, embeddings, layers, masks
from course_lib.gpt import GPT, GPTConfig
from course_lib.layers import DecoderOnlyLayer
from course_lib.model import Transformer, TransformerConfig
from course_lib.student.contracts import PART_NAMES, SPECS, USED_BY, PartContractError, check_part, check_parts
from course_lib.student.magic import keep_part
from course_lib.student.ownership import owned_notebooks, ownership_rows, ownership_table
from course_lib.student.package import HEADER, load_my_parts

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SAVED = NOTEBOOKS / "my_transformer" / "decoder_only_layer.py"
SPECS_BY_MODULE = {spec.module: spec for spec in SPECS.values()}


def course_block(d_model, n_heads, d_ff, norm_first=False):
    return DecoderOnlyLayer(d_model, n_heads, d_ff, 0.0, norm_first)


class Block(nn.Module):
    """course_lib's block, called with whatever mask ``given(x, mask)`` returns (the planted mistakes)."""

    given = staticmethod(lambda x, mask: mask)

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.inner = DecoderOnlyLayer(d_model, n_heads, d_ff, 0.0, norm_first)

    def forward(self, x, mask):
        return self.inner(x, self.given(x, mask))


class NoMask(Block):
    given = staticmethod(lambda x, mask: None)


class OneStepAhead(Block):
    """Each position also sees the next one: a causal mask built with tril(1)."""

    given = staticmethod(lambda x, mask: torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril(1))


class LeaksOnlyPreNorm(Block):
    """Right in post-norm; in pre-norm the mask is dropped (only the path notebook 15's GPT trains leaks)."""

    def forward(self, x, mask):
        return self.inner(x, None if self.inner.norm_first else mask)


class OwnCausalMask(Block):
    """A causal mask of its own: causal, but the padding of the mask it is given is lost."""

    given = staticmethod(lambda x, mask: torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril())


class WrongWidth(Block):
    def forward(self, x, mask):
        return self.inner(x, mask)[..., :-1]


class NaNBlock(Block):
    def forward(self, x, mask):
        return self.inner(x, mask) * float("nan")


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_the_course_block_and_the_saved_course_edition_keep_the_contract(norm_first):
    check_part("decoder_only_layer", course_block, norm_first=norm_first)
    check_part("decoder_only_layer", load_my_parts(NOTEBOOKS)["decoder_only_layer"], norm_first=norm_first)


@pytest.mark.parametrize(("block", "promise"), [
    (NoMask, "leaks the future: with a causal mask, changing the input at positions 1 and later changed the output "
             "at earlier ones"),
    (OneStepAhead, "leaks the future"),
    (OwnCausalMask, "attends to masked positions: changing a key the mask blocks changed the output"),
    (WrongWidth, "shape (2, 6, 15), expected (2, 6, 16)"),
    (NaNBlock, "NaN"),
    (lambda d_model, n_heads, d_ff, norm_first=False: nn.Identity, "must build an nn.Module"),
], ids=["no-mask", "one-step-ahead", "own-causal-mask", "wrong-width", "nan", "not-a-module"])
def test_a_broken_promise_names_the_part_and_the_promise(block, promise):
    with pytest.raises(PartContractError, match=r"^your decoder_only_layer ") as error:
        check_part("decoder_only_layer", block)
    assert error.value.part == "decoder_only_layer"
    assert promise in error.value.promise, error.value.promise


def test_a_leak_one_step_ahead_is_caught_at_every_position():
    """The causality probe changes positions t.. for every t: a block that leaks only from t + 1 to t is caught
    (one change of the last positions would miss a leak between earlier ones)."""
    with pytest.raises(PartContractError, match="positions 1 and later"):
        check_part("decoder_only_layer", OneStepAhead)


def test_the_placement_the_gpt_trains_is_checked_too():
    check_part("decoder_only_layer", LeaksOnlyPreNorm, norm_first=False)
    with pytest.raises(PartContractError, match="leaks the future"):
        check_part("decoder_only_layer", LeaksOnlyPreNorm, norm_first=True)
    with pytest.raises(PartContractError, match="leaks the future"):  # a GPT's config: pre-norm
        check_parts({"decoder_only_layer": LeaksOnlyPreNorm}, norm_first=GPTConfig().norm_first)


def _cell(path: Path) -> str:
    """The body of the %%my_part cell that saved ``path`` (the file without the header the magic adds)."""
    header = HEADER.format(module=path.stem, notebook=SPECS_BY_MODULE[path.stem].notebook)
    text = path.read_text(encoding="utf-8")
    assert text.startswith(header)
    return text[len(header):]


def test_my_part_saves_the_block_with_notebook_15s_header_and_refuses_a_leaking_one(tmp_path):
    for module in ("attention", "multi_head_attention", "layer_norm", "feed_forward"):  # what the block imports
        keep_part(module, _cell(NOTEBOOKS / "my_transformer" / f"{module}.py"), tmp_path)
    assert keep_part("decoder_only_layer", _cell(SAVED), tmp_path) == ["DecoderOnlyLayer (decoder_only_layer)"]
    saved = (tmp_path / "my_transformer" / "decoder_only_layer.py").read_text(encoding="utf-8")
    assert saved == SAVED.read_text(encoding="utf-8")  # the course edition's file is what the cell saves
    assert saved.startswith('"""Your own decoder_only_layer: saved by `%%my_part decoder_only_layer` in notebook 15.')
    leaking = _cell(SAVED).replace("x = x + self.self_attn(h, h, h, mask=mask)", "x = x + self.self_attn(h, h, h)")
    assert leaking != _cell(SAVED)
    with pytest.raises(PartContractError, match="leaks the future"):  # only its pre-norm path leaks: still refused
        keep_part("decoder_only_layer", leaking, tmp_path)
    assert (tmp_path / "my_transformer" / "decoder_only_layer.py").read_text(encoding="utf-8") == saved
    assert SPECS["decoder_only_layer"].notebook == "15"


@pytest.mark.parametrize(("model", "build"), [
    ("transformer", lambda parts: Transformer(TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=16,
                                                                n_heads=4, d_ff=32), parts)),
    ("gpt", lambda parts: GPT(GPTConfig(vocab_size=23, d_model=16, n_heads=4, d_ff=32, max_len=16), parts)),
])
def test_each_model_uses_exactly_the_parts_it_is_said_to(model, build):
    """USED_BY, which the ownership tables follow, is what the models call: each part supplied alone (course_lib's
    own, wrapped to record its calls) is called while the model is built and run iff the model uses it."""
    course = {"token_embedding": embeddings.TokenEmbedding, "positional_encoding": embeddings.sinusoidal_table,
              "attention": attention.scaled_dot_product_attention, "multi_head_attention": attention.MultiHeadAttention,
              "padding_mask": masks.padding_mask, "causal_mask": masks.causal_mask, "layer_norm": layers.LayerNorm,
              "feed_forward": layers.PositionwiseFeedForward,
              "encoder_layer": lambda d, h, f, norm_first=False: layers.EncoderLayer(d, h, f, 0.0, norm_first),
              "decoder_layer": lambda d, h, f, norm_first=False: layers.DecoderLayer(d, h, f, 0.0, norm_first),
              "decoder_only_layer": course_block}
    assert sorted(course) == sorted(PART_NAMES)
    called = set()
    for name in PART_NAMES:
        def spy(*args, _name=name, **kwargs):
            called.add(_name)
            return course[_name](*args, **kwargs)

        torch.manual_seed(0)
        net = build({name: spy}).eval()
        ids = torch.randint(4, 19, (2, 6))
        ids[1, 4:] = 0
        with torch.no_grad():
            net(ids) if model == "gpt" else net(ids, ids[:, :5])
    assert [name for name in PART_NAMES if name in called] == list(USED_BY[model])


def test_the_ownership_table_of_each_model_lists_its_own_parts(tmp_path):
    """The translator's table (notebook 13) has no row for the GPT's block, which never runs in it; the GPT's table
    (notebook 15) has one, and it says 'you' for a block of the student's own that ran."""
    folder = tmp_path / "my_transformer"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for module in ("attention", "multi_head_attention", "layer_norm", "feed_forward"):  # what the block imports
        (folder / f"{module}.py").write_text((NOTEBOOKS / "my_transformer" / f"{module}.py").read_text())
    (folder / "decoder_only_layer.py").write_text(SAVED.read_text().replace("h = self.norm1(x)", "y = self.norm1(x)")
                                                  .replace("self.self_attn(h, h, h,", "self.self_attn(y, y, y,"))
    parts = load_my_parts(tmp_path)
    translator = {name: label for name, _, label in ownership_rows(parts)}
    assert "decoder_only_layer" not in translator and len(translator) == 10
    assert ownership_table(parts).endswith("0 of 10 parts are your own code; 4 are the course's solutions, "
                                           "saved unchanged")
    gpt = {name: (notebook, label) for name, notebook, label in ownership_rows(parts, model="gpt")}
    assert list(gpt) == list(USED_BY["gpt"]) and "encoder_layer" not in gpt
    assert gpt["decoder_only_layer"] == ("15", "you (my_transformer/decoder_only_layer.py)")
    assert gpt["layer_norm"][1] == "the course's solution (my_transformer/layer_norm.py, saved unchanged)"
    assert ownership_table(parts, model="gpt").endswith("1 of 9 parts are your own code; 4 are the course's "
                                                        "solutions, saved unchanged")
    assert owned_notebooks(parts, model="gpt") == {"15"} and owned_notebooks(parts) == set()
    (folder / "decoder_only_layer.py").write_text(SAVED.read_text())  # the course's cell, saved unchanged
    label = dict((n, lab) for n, _, lab in ownership_rows(load_my_parts(tmp_path), model="gpt"))["decoder_only_layer"]
    assert label == "the course's solution (my_transformer/decoder_only_layer.py, saved unchanged)"
    with pytest.raises(ValueError, match="model must be one of"):
        ownership_table(parts, model="gtp")
