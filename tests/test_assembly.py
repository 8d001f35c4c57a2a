"""Assembly from supplied parts: contracts enforced with clear errors, the saved chain trains, %%my_part keeps files."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from course_lib.model import Transformer, TransformerConfig
from course_lib.student.assembly import build_transformer
from course_lib.student.contracts import PART_NAMES, PARTS, PartContractError, check_part
from course_lib.student.magic import keep_part
from course_lib.student.ownership import ownership_table
from course_lib.student.package import load_my_parts, module_names

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CONFIG = TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=16, n_heads=4, d_ff=32)


class WrongWidth(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear = nn.Linear(d_model, d_model + 1)

    def forward(self, x):
        return self.linear(x)


class IntegerNorm(nn.Module):
    def __init__(self, d_model):
        super().__init__()

    def forward(self, x):
        return x.long()


class NaNNorm(nn.Module):
    def __init__(self, d_model):
        super().__init__()

    def forward(self, x):
        return x / 0.0 * 0.0


def ignores_mask(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(-1)
    return weights @ v, weights


class MixingFeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.linear(x + x.mean(dim=1, keepdim=True))  # averages over positions


def float_causal(size):
    return torch.ones(size, size).tril()


@pytest.mark.parametrize(("part", "broken", "promise"), [
    ("feed_forward", WrongWidth, "shape (2, 5, 17), expected (2, 5, 16)"),
    ("layer_norm", IntegerNorm, "dtype torch.int64, expected floats"),
    ("layer_norm", NaNNorm, "NaN"),
    ("attention", ignores_mask, "attends to masked positions"),
    ("feed_forward", MixingFeedForward, "mixes positions"),
    ("causal_mask", float_causal, "bool tensor"),
    ("multi_head_attention", lambda d_model, n_heads: nn.Identity(), "raised TypeError"),
])
def test_a_broken_promise_names_the_part(part, broken, promise):
    with pytest.raises(PartContractError, match=f"your {part} .*") as error:
        build_transformer(CONFIG, {part: broken})
    assert promise in str(error.value)
    assert error.value.part == part


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_the_saved_parts_of_the_notebooks_train_and_decode(norm_first):
    parts = load_my_parts(NOTEBOOKS)
    assert sorted(parts) == sorted(PART_NAMES)
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=16, n_heads=4, d_ff=32,
                               norm_first=norm_first)
    model = build_transformer(config, parts)
    assert isinstance(model.decoder.norm, nn.Identity) != norm_first  # pre-norm ends each stack with a LayerNorm
    assert type(model) is Transformer  # the one course model, with the student's parts inside
    src = torch.randint(4, 23, (4, 7))
    tgt = torch.randint(4, 19, (4, 6))
    src[1, 5:] = 0
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):  # memorise one batch
        loss = nn.functional.cross_entropy(model(src, tgt[:, :-1]).flatten(0, 1), tgt[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    from course_lib.decoding import greedy_decode

    tokens = greedy_decode(model, src, max_len=8)
    assert tokens.shape[0] == 4 and tokens.shape[1] <= 8


def test_an_all_course_assembly_is_the_course_model():
    """No parts: the same modules, created in the same order, so the same seed gives the same weights."""
    torch.manual_seed(0)
    course = Transformer(CONFIG).eval()
    torch.manual_seed(0)
    assembled = build_transformer(CONFIG, {}).eval()
    assert [n for n, _ in course.named_parameters()] == [n for n, _ in assembled.named_parameters()]
    for (name, a), b in zip(course.state_dict().items(), assembled.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    src, tgt = torch.randint(4, 23, (3, 6)), torch.randint(4, 19, (3, 5))
    src[2, 4:] = 0
    with torch.no_grad():
        assert torch.equal(course(src, tgt), assembled(src, tgt))


def test_the_course_parts_passed_in_give_the_course_model():
    """The course's own parts, passed as parts, compute what the course model computes (weights copied)."""
    from course_lib import attention, embeddings, layers, masks

    course_parts = {"token_embedding": embeddings.TokenEmbedding, "positional_encoding": embeddings.sinusoidal_table,
                    "multi_head_attention": attention.MultiHeadAttention, "padding_mask": masks.padding_mask,
                    "causal_mask": masks.causal_mask, "layer_norm": layers.LayerNorm,
                    "feed_forward": layers.PositionwiseFeedForward}
    torch.manual_seed(0)
    course = Transformer(CONFIG).eval()
    plugged = build_transformer(CONFIG, course_parts).eval()
    plugged.load_state_dict(course.state_dict())
    src, tgt = torch.randint(4, 23, (3, 6)), torch.randint(4, 19, (3, 5))
    src[2, 4:] = 0
    with torch.no_grad():
        assert torch.allclose(course(src, tgt), plugged(src, tgt), atol=1e-6)


def test_dropout_and_unknown_parts_are_rejected():
    from course_lib.attention import scaled_dot_product_attention

    with pytest.raises(ValueError, match=r"dropout must be 0\.0"):
        build_transformer(TransformerConfig(dropout=0.1), {"attention": scaled_dot_product_attention})
    with pytest.raises(ValueError, match="unknown part names"):
        build_transformer(CONFIG, {"layernorm": nn.LayerNorm})
    with pytest.raises(ValueError, match="unknown part names"):
        Transformer(CONFIG, {"layernorm": nn.LayerNorm})


def test_ownership_table_says_whose_code_runs(tmp_path):
    """Traced ownership: the student's code, the course's solution saved unchanged, course_lib renamed or imported."""
    from course_lib.student.ownership import ownership_rows

    folder = tmp_path / "my_transformer"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    solution = (NOTEBOOKS / "my_transformer" / "layer_norm.py").read_text()
    (folder / "layer_norm.py").write_text(solution.replace("# gamma", "# the gain, my comment"))  # comments only
    (folder / "feed_forward.py").write_text(
        (NOTEBOOKS / "my_transformer" / "feed_forward.py").read_text().replace("def forward(self, x", "def forward(self, h")
        .replace("(x)", "(h)"))  # the same code with the student's own names
    (folder / "multi_head_attention.py").write_text(
        "from course_lib.attention import MultiHeadAttention as CourseAttention\n\n\n"
        "class MultiHeadAttention(CourseAttention):\n    pass\n")
    (folder / "masks.py").write_text("from course_lib.masks import causal_mask, padding_mask  # noqa: F401\n")
    parts = load_my_parts(tmp_path)
    rows = {name: label for name, _, label in ownership_rows({**parts, "attention": ignores_mask})}
    assert rows["layer_norm"] == "the course's solution (my_transformer/layer_norm.py, saved unchanged)"
    assert rows["feed_forward"] == "you (my_transformer/feed_forward.py)", rows["feed_forward"]
    assert rows["multi_head_attention"] == "course_lib's code runs (my_transformer/multi_head_attention.py adds none)"
    assert rows["padding_mask"].startswith("course_lib (course_lib.masks.padding_mask, named in my_transformer/masks")
    assert rows["attention"] == "supplied (test_assembly.py)"
    assert rows["decoder_layer"] == "course_lib (course_lib.layers.DecoderLayer)"
    table = ownership_table(parts)
    assert "1 of 10 parts are your own code; 1 are the course's solutions" in table


def test_the_course_solutions_are_the_saved_parts_of_the_course_notebooks():
    from course_lib.student.ownership import COURSE_SOLUTIONS, solution_digests

    assert COURSE_SOLUTIONS == solution_digests(NOTEBOOKS), (
        "a %%my_part cell changed: refresh course_lib.student.ownership.COURSE_SOLUTIONS (its comment says how)")


def test_keep_part_saves_checks_and_restores_on_failure(tmp_path):
    good = "def causal_mask(size):\n    return torch.ones(size, size, dtype=torch.bool).tril()\n\n\n" \
           "def padding_mask(ids, pad_id=0):\n    return (ids != pad_id)[:, None, None, :]\n"
    assert keep_part("masks", good, tmp_path) == ["padding_mask (padding_mask)", "causal_mask (causal_mask)"]
    saved = (tmp_path / "my_transformer" / "masks.py").read_text()
    assert "def causal_mask" in saved and "import torch" in saved
    leaky = good.replace(".tril()", "")
    with pytest.raises(PartContractError, match="leaks the future"):
        keep_part("masks", leaky, tmp_path)
    assert (tmp_path / "my_transformer" / "masks.py").read_text() == saved  # the good version is kept
    with pytest.raises(PartContractError, match=r"could not|is missing|raised"):
        keep_part("attention", "def attention(q, k, v, mask=None):\n    return undefined_name\n", tmp_path)
    assert not (tmp_path / "my_transformer" / "attention.py").exists()
    assert sorted(load_my_parts(tmp_path)) == ["causal_mask", "padding_mask"]
    with pytest.raises(ValueError, match="module must be one of"):
        keep_part("atention", good, tmp_path)


def test_the_cell_magic_is_registered(tmp_path, monkeypatch):
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    start_ipython()
    shell = get_ipython()
    monkeypatch.chdir(tmp_path)
    shell.run_line_magic("load_ext", "course_lib.student.magic")
    shell.run_cell_magic("my_part", "layer_norm",
                         "class LayerNorm(nn.Module):\n    def __init__(self, d_model):\n        super().__init__()\n"
                         "    def forward(self, x):\n        return (x - x.mean(-1, keepdim=True)) / "
                         "torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)\n")
    assert (tmp_path / "my_transformer" / "layer_norm.py").exists()
    assert "layer_norm" in module_names()
    # the cells below use the saved file's class, under the cell's name
    assert shell.user_ns["LayerNorm"].__module__ == "my_transformer.layer_norm"
    shell.run_line_magic("load_ext", "course_lib.student")  # the package's own name loads the same magic


def test_the_magic_defines_the_parts_names_from_the_file_or_course_lib(tmp_path, monkeypatch, capsys):
    """Saved: the file's objects; a stub or a refused cell with nothing saved: course_lib's twin, and it says so."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    from course_lib.masks import causal_mask
    from course_lib.student.magic import skeleton

    start_ipython()
    shell = get_ipython()
    monkeypatch.chdir(tmp_path)
    shell.run_line_magic("load_ext", "course_lib.student")
    shell.user_ns.pop("causal_mask", None)
    shell.run_cell_magic("my_part", "masks", skeleton("masks"))
    assert "below are course_lib's" in capsys.readouterr().out
    assert shell.user_ns["causal_mask"] is causal_mask
    good = ("def padding_mask(ids, pad_id=0):\n    return (ids != pad_id)[:, None, None, :]\n\n"
            "def causal_mask(size, device=None):\n"
            "    return torch.ones(size, size, dtype=torch.bool, device=device).tril()\n")
    shell.run_cell_magic("my_part", "masks", good)
    assert "`padding_mask`, `causal_mask` below are the saved file's" in capsys.readouterr().out
    assert shell.user_ns["causal_mask"].__module__ == "my_transformer.masks"
    shell.run_cell_magic("my_part", "masks", good.replace(".tril()", ""))  # leaks the future: refused
    assert "your previous version is kept, and `padding_mask`, `causal_mask` below are it" in capsys.readouterr().out
    assert shell.user_ns["causal_mask"].__module__ == "my_transformer.masks"
    assert bool(shell.user_ns["causal_mask"](3)[0, 1]) is False  # the saved (correct) version, not the refused one


def test_check_part_rejects_unknown_names():
    with pytest.raises(ValueError, match="name must be one of"):
        check_part("encoder", nn.Identity)


@pytest.mark.parametrize("module", module_names())
def test_a_blank_part_cell_waits_for_the_student(module, tmp_path, monkeypatch, capsys):
    """The student edition's %%my_part cells hold only the contract and a stub: running one saves nothing."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    from course_lib.student.magic import check_saved_part, skeleton

    start_ipython()
    shell = get_ipython()
    monkeypatch.chdir(tmp_path)
    shell.run_line_magic("load_ext", "course_lib.student.magic")
    shell.run_cell_magic("my_part", module, skeleton(module))
    assert "not saved yet" in capsys.readouterr().out
    assert not (tmp_path / "my_transformer" / f"{module}.py").exists()
    assert check_saved_part(next(s.name for s in PARTS if s.module == module)) is None


def test_the_student_edition_hands_out_no_part_code():
    import importlib.util

    spec = importlib.util.spec_from_file_location("student_edition", NOTEBOOKS.parent / "scripts" / "student_edition.py")
    edition = importlib.util.module_from_spec(spec)
    sys.modules["student_edition"] = edition  # its dataclasses need their module registered
    spec.loader.exec_module(edition)
    import nbformat

    seen = 0
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, 4).cells:
            blank = edition.blank_part_cell(cell)
            if cell.cell_type == "code" and cell.source.startswith("%%my_part"):
                seen += 1
                body = {line.strip() for line in cell.source.splitlines()[1:] if line.strip()}
                handed_out = {line.strip() for line in blank.source.splitlines()}
                leaked = {line for line in body & handed_out if not line.startswith(("class ", "def ", "#"))}
                assert leaked <= {"super().__init__()"}, f"{path.name}: {sorted(leaked)[:3]}"
                assert "raise NotImplementedError" in blank.source
            elif "from my_transformer." in cell.source and "compare_with_course(" in cell.source:
                assert "from my_transformer" not in blank.source and "check_saved_part(" in blank.source
    assert seen == len(module_names()) + 1  # one %%my_part cell per saved module (notebooks 02-09 and 15), and
    # notebook 06 saves attention again


def test_record_attention_sees_a_supplied_multi_head_attention():
    """The explorer and record_attention work on an assembled model: weights from a course twin of the part."""
    from course_lib.attention import MultiHeadAttention
    from course_lib.model import record_attention

    parts = load_my_parts(NOTEBOOKS)
    torch.manual_seed(0)
    model = build_transformer(CONFIG, parts).eval()
    src, tgt = torch.randint(4, 23, (2, 7)), torch.randint(4, 19, (2, 5))
    src[1, 5:] = 0
    with torch.no_grad(), record_attention(model) as maps:
        model(src, tgt)
    assert sorted(maps) == sorted(f"{stack}.layers.{i}.{kind}" for stack, kinds in
                                  (("encoder", ["self_attn"]), ("decoder", ["self_attn", "cross_attn"]))
                                  for i in range(2) for kind in kinds)
    cross = maps["decoder.layers.1.cross_attn"]  # (batch, n_heads, tgt_len, src_len)
    assert cross.shape == (2, 4, 5, 7) and torch.allclose(cross.sum(-1), torch.ones(2, 4, 5), atol=1e-5)
    assert float(cross[1, ..., 5:].abs().max()) == 0.0  # padded source positions get no weight
    assert maps["decoder.layers.0.self_attn"][0].triu(1).abs().max() == 0  # causal
    # the student's own module is in the model (not wrapped: its parameter names are its own), and the
    # twin with its projections reproduces its output, so the recorded weights are the part's
    part = model.decoder.layers[1].cross_attn
    assert type(part) is parts["multi_head_attention"]
    assert not any(".inner." in name for name, _ in model.named_parameters())
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    twin = MultiHeadAttention(16, 4).eval()
    for mine, theirs in zip([m for m in part.modules() if isinstance(m, nn.Linear)],
                            (twin.q_proj, twin.k_proj, twin.v_proj, twin.out_proj), strict=True):
        theirs.load_state_dict(mine.state_dict())
    with torch.no_grad():
        assert torch.allclose(part(x, memory, memory), twin(x, memory, memory), atol=1e-5)


def test_record_attention_matches_projections_by_role_not_by_order():
    """A correct attention that creates its output projection first: the recorded weights are still right."""
    from course_lib.attention import MultiHeadAttention
    from course_lib.builders import recordable

    class OutFirst(nn.Module):
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.mix = nn.Linear(d_model, d_model)  # created first: registration order is out, v, k, q
            self.to_v, self.to_k, self.to_q = (nn.Linear(d_model, d_model) for _ in range(3))
            self.h = n_heads

        def forward(self, query, key, value, mask=None):
            b, n, d = query.shape
            q, k, v = (f(x).view(b, -1, self.h, d // self.h).transpose(1, 2)  # (b, h, len, d_head)
                       for f, x in ((self.to_q, query), (self.to_k, key), (self.to_v, value)))
            weights = (q @ k.transpose(-2, -1) / math.sqrt(d // self.h))
            if mask is not None:
                weights = weights.masked_fill(~mask, -1e9)
            return self.mix((weights.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))

    torch.manual_seed(0)
    part = OutFirst(16, 4).eval()
    recorder = recordable(part, 4)
    twin = MultiHeadAttention(16, 4).eval()
    for mine, theirs in ((part.to_q, twin.q_proj), (part.to_k, twin.k_proj), (part.to_v, twin.v_proj),
                         (part.mix, twin.out_proj)):
        theirs.load_state_dict(mine.state_dict())
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    recorder.keep_attention = True
    with torch.no_grad():
        recorder(x, memory, memory)
        _, expected = twin(x, memory, memory, return_attention=True)
    assert torch.allclose(recorder.last_attention, expected, atol=1e-5)


def test_a_refused_save_is_one_line_and_never_leaves_a_tick_for_the_old_file(tmp_path, monkeypatch, capsys):
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    from course_lib.student.magic import check_saved_part

    start_ipython()
    shell = get_ipython()
    monkeypatch.chdir(tmp_path)
    shell.run_line_magic("load_ext", "course_lib.student.magic")
    good = ("def causal_mask(size):\n    return torch.ones(size, size, dtype=torch.bool).tril()\n\n\n"
            "def padding_mask(ids, pad_id=0):\n    return (ids != pad_id)[:, None, None, :]\n")
    shell.run_cell_magic("my_part", "masks", good)
    assert check_saved_part("causal_mask").ok
    capsys.readouterr()
    shell.run_cell_magic("my_part", "masks", good.replace(".tril()", ""))  # leaks the future: refused
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("❌ not saved: causal_mask leaks the future")
    assert "previous version is kept" in lines[0] and "Traceback" not in out
    finding = check_saved_part("causal_mask")
    assert finding.ok is False and "refused" in finding.evidence
    assert capsys.readouterr().out.startswith("❌ causal_mask: your last %%my_part masks cell was not saved")
    shell.run_cell_magic("my_part", "masks", good)  # fixed: saved, and the refusal is forgotten
    capsys.readouterr()
    assert check_saved_part("causal_mask").ok


def test_a_students_embedding_can_share_its_matrix_with_the_output_layer():
    parts = load_my_parts(NOTEBOOKS)
    config = TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=16, n_heads=4, d_ff=32,
                               tie_embeddings=True)
    model = build_transformer(config, parts)
    shared = [p for p in model.decoder.embedding.parameters() if p is model.generator.weight]
    assert len(shared) == 1 and tuple(shared[0].shape) == (19, 16)
    assert model.num_parameters() == Transformer(config).num_parameters()  # the tied matrix counted once


def test_checking_a_part_leaves_the_notebooks_random_numbers_alone(tmp_path):
    """A %%my_part cell and the bug finder seed and draw random numbers; the cells below must not notice."""
    import random

    import numpy as np

    from course_lib.student.bug_finder import compare_with_course
    from course_lib.student.magic import keep_part

    torch.manual_seed(123)
    random.seed(123)
    np.random.seed(123)
    expected = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(123)
    random.seed(123)
    np.random.seed(123)
    keep_part("feed_forward", "class FeedForward(nn.Module):\n    def __init__(self, d_model, d_ff):\n"
              "        super().__init__()\n        self.linear1 = nn.Linear(d_model, d_ff)\n"
              "        self.linear2 = nn.Linear(d_ff, d_model)\n\n    def forward(self, x):\n"
              "        return self.linear2(torch.relu(self.linear1(x)))\n", tmp_path)
    from course_lib.layers import PositionwiseFeedForward

    assert compare_with_course("feed_forward", PositionwiseFeedForward).ok
    got = (torch.rand(3), random.random(), np.random.rand())
    assert torch.equal(got[0], expected[0]) and got[1:] == expected[1:]
