"""Whose code runs in a student's model: traced, not read off which files exist.

For every part of the model that a student supplies, to the translator ``Transformer(config, parts)``
(notebook 13, ``--my-parts``; ``model="transformer"``, the default) or to the language model
``GPT(config, parts)`` (notebook 15; ``model="gpt"``), the table says one of

* ``you (my_transformer/x.py)``: the part is defined in the student's file, and code of that file ran
  while a small model was built and run with the parts (``sys.setprofile`` records every Python call);
* ``the course's solution (my_transformer/x.py, saved unchanged)``: the file is the course edition's own
  ``%%my_part`` cell, saved as it is (compared by the file's syntax tree, so comments and spacing do not
  count): the code runs, but nobody wrote it (:data:`COURSE_SOLUTIONS`);
* ``course_lib (course_lib.x.Name, named in my_transformer/x.py)``: the file only imports course_lib's part;
* ``course_lib's code runs (my_transformer/x.py adds none)``: the file defines the part, but none of its
  code ran (a class that only renames or subclasses course_lib's);
* ``supplied (path)``: a part defined elsewhere (a test, another package);
* ``course_lib (name)`` for every part not supplied.

A model's table lists the parts that model is built from (:data:`course_lib.student.contracts.USED_BY`): the
translator's ten (no ``decoder_only_layer``: a saved one never runs in it), the GPT's nine (no encoder or
encoder-decoder layer).

``tests/test_assembly.py`` checks :data:`COURSE_SOLUTIONS` against the course's saved parts in
``notebooks/my_transformer/`` and each label on a part written to produce it.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path

import torch

from ..gpt import GPT, GPTConfig
from ..model import Transformer, TransformerConfig
from ..utils import keeps_random_state
from .contracts import PARTS, USED_BY
from .package import MY_PACKAGE

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # course_lib/

# sha256 of the syntax tree (ast.dump) of each file the course edition's %%my_part cells save. Refresh with
# ``python -c "from course_lib.student.ownership import solution_digests; print(solution_digests('notebooks'))"``
# after changing a %%my_part cell of notebooks 02-09 or 15 (tests/test_assembly.py fails until then).
COURSE_SOLUTIONS = {
    "attention": "6b55175a71908c03e766669028aea422f9a31118d53f1dfaa2ac6df828ad164a",  # notebook 06's update
    "decoder_layer": "44fbabfe9ef33dd8409ef790a4e3ee2ec878ceda3eecd85b3047b90eec9a2e71",
    "decoder_only_layer": "ee35590a51aadff455e1876980aaa84296d355a3dc5035953ed75454e5f41d09",
    "embeddings": "49ce426ad021f17eb089fe20e09e6978b9b4ce4716fbb2c7fc937a94869f621a",
    "encoder_layer": "524bd35ee9fde8739a59f06f8c7f042eddcd1e5b278ee47a7b06cdc01bafb903",
    "feed_forward": "5324af616aaacb8e22cd1e0eeebe2ec554fc5b50601e03ba1c79e8d421b846c2",
    "layer_norm": "55097587d8ec455239db79e200bfeb04eb86b0d0fd1fda62093f15f6081fbbcb",
    "masks": "8162e0305e4448ced23cf91d871dd59d2c06b48dcf1e1df67b12235589cbe595",
    "multi_head_attention": "682743e3ae1e94e3e9edc4fd3e8c3045056de4338136c5db88f7924985a09b4d",
    "positional_encoding": "399144fdc5894393da14d215d0e4be75d06321dc5ab20e02b5f2e89164291f0a",
}


def source_digest(text: str) -> str:
    """sha256 of the code's syntax tree: the same for two files that differ only in comments and spacing."""
    return hashlib.sha256(ast.dump(ast.parse(text)).encode("utf-8")).hexdigest()


def solution_digests(directory: str | Path) -> dict[str, str]:
    """``{module: digest}`` of the saved parts in ``<directory>/my_transformer/`` (to refresh COURSE_SOLUTIONS)."""
    folder = Path(directory) / MY_PACKAGE
    return {path.stem: source_digest(path.read_text(encoding="utf-8"))
            for path in sorted(folder.glob("*.py")) if path.stem != "__init__"}


def _source_file(obj) -> Path | None:
    try:
        found = inspect.getsourcefile(obj)
    except TypeError:
        return None
    return Path(found).resolve() if found else None


def _check_model(model: str) -> tuple[str, ...]:
    if model not in USED_BY:
        raise ValueError(f"model must be one of {sorted(USED_BY)}, got {model!r}")
    return USED_BY[model]


def _run_small_model(parts: dict, model: str) -> None:
    """Build a small ``model`` ("transformer" or "gpt") with ``parts`` and run it forward once."""
    generator = torch.Generator().manual_seed(0)
    if model == "gpt":
        ids = torch.randint(4, 23, (2, 6), generator=generator)
        ids[1, 4:] = 0
        GPT(GPTConfig(vocab_size=23, d_model=16, n_heads=4, d_ff=32, max_len=16), parts).eval()(ids)
        return
    config = TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=16, n_heads=4, d_ff=32)
    src = torch.randint(4, 23, (2, 6), generator=generator)
    tgt = torch.randint(4, 19, (2, 5), generator=generator)
    src[1, 4:] = 0
    Transformer(config, parts).eval()(src, tgt)


@keeps_random_state
def traced_files(parts: Mapping[str, object], model: str = "transformer") -> set[str] | None:
    """Files whose Python code ran while a small ``Transformer(config, parts)`` (``model="gpt"``: a small
    ``GPT(config, parts)``) was built and run forward with the parts that model uses.

    Returns None when the model cannot be built or run with these parts (nothing can be traced then).
    """
    used = _check_model(model)
    seen: set[str] = set()

    def profile(frame, event, arg):
        if event == "call":
            seen.add(frame.f_code.co_filename)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        with torch.no_grad():
            _run_small_model({name: part for name, part in parts.items() if name in used}, model)
    except Exception:  # a broken part: the bug finder explains it; ownership cannot be traced
        return None
    finally:
        sys.setprofile(previous)
    return {str(Path(name).resolve()) for name in seen if not name.startswith("<")}


def owner(name: str, part, ran: set[str] | None) -> str:
    """The label of one supplied part (see the module docstring)."""
    spec = next(s for s in PARTS if s.name == name)
    path = _source_file(part)
    if path is None:
        return "supplied (its source cannot be found)"
    if path.is_relative_to(PACKAGE_DIR):
        module = getattr(part, "__module__", "course_lib")
        return f"course_lib ({module}.{getattr(part, '__qualname__', spec.attribute)}, named in {MY_PACKAGE}/{spec.module}.py)"
    if path.parent.name != MY_PACKAGE:
        return f"supplied ({path.name})"
    saved = f"{MY_PACKAGE}/{path.name}"
    if COURSE_SOLUTIONS.get(path.stem) == source_digest(path.read_text(encoding="utf-8")):
        return f"the course's solution ({saved}, saved unchanged)"
    if ran is not None and str(path) not in ran:
        return f"course_lib's code runs ({saved} adds none)"
    return f"you ({saved})"


def ownership_rows(parts: Mapping[str, object], model: str = "transformer") -> list[tuple[str, str, str]]:
    """(part, notebook, whose code runs) for every part ``model`` ("transformer" or "gpt") is built from, traced
    (see the module docstring); a supplied part the model does not use has no row."""
    used = _check_model(model)
    ran = traced_files(parts, model) if any(name in used for name in parts) else set()
    return [(spec.name, spec.notebook, owner(spec.name, parts[spec.name], ran) if spec.name in parts
             else f"course_lib ({spec.reference})") for spec in PARTS if spec.name in used]


def yours(parts: Mapping[str, object], model: str = "transformer") -> set[str]:
    """The names of the parts of ``model`` whose code is the student's own (label ``you (...)``)."""
    return {name for name, _, label in ownership_rows(parts, model) if label.startswith("you (")}


def owned_notebooks(parts: Mapping[str, object], model: str = "transformer") -> set[str]:
    """Notebook numbers all of whose parts in ``model`` are the student's own (the translator's, for
    ``course_lib.diagrams.draw_ownership``)."""
    mine, used = yours(parts, model), _check_model(model)
    specs = [spec for spec in PARTS if spec.name in used]
    return {n for n in {spec.notebook for spec in specs} if all(s.name in mine for s in specs if s.notebook == n)}


def ownership_table(parts: Mapping[str, object], model: str = "transformer") -> str:
    """The ownership rows of ``model`` ("transformer" or "gpt") as an aligned text table, one line per part it is
    built from, and a count of the student's own."""
    rows = [("part", "notebook", "whose code runs"), *ownership_rows(parts, model)]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    table = "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
                      for row in rows)
    mine = sum(label.startswith("you (") for _, _, label in rows[1:])
    solutions = sum(label.startswith("the course's solution") for _, _, label in rows[1:])
    return f"{table}\n\n{mine} of {len(rows) - 1} parts are your own code" + (
        f"; {solutions} are the course's solutions, saved unchanged" if solutions else "")
