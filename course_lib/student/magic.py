"""``%%my_part``: run a notebook cell and keep it as a file of the student's own package, ``my_transformer/``.

In a notebook::

    %load_ext course_lib.student

    %%my_part attention
    def attention(q, k, v, mask=None):
        ...

writes the cell's code to ``my_transformer/attention.py`` (next to the notebook), imports it from
there exactly as later notebooks will, and checks the part against its contract
(:mod:`course_lib.student.contracts`); a part that fails to import or breaks its contract is not kept. After
the cell, the names it defines are the saved file's (``bind_names``): the cells below run the student's saved
part (or, when the cell is still a stub or was refused, the last saved version, else ``course_lib``'s twin,
and the message says which). Later notebooks import it (``from my_transformer.attention import attention``) and the capstone
(notebook 13) assembles every saved part into the model that trains; notebook 15 saves one more part, a GPT's
block (``%%my_part decoder_only_layer``), and builds a language model from the same parts. The file gets the usual
imports at the top; an import of another saved part goes in the cell itself, so it is visible.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..utils import keeps_random_state
from .bug_finder import Finding, compare_with_course
from .contracts import PARTS, PartContractError, check_fully_masked_row, check_part
from .package import MY_PACKAGE, import_saved, load_my_parts, module_names, part_file, save_part


@keeps_random_state
def keep_part(module: str, source: str, directory: str | Path = ".", package: str = MY_PACKAGE) -> list[str]:
    """Save ``source`` as the student's ``module``, import it as a module and check its contract.

    The file is imported exactly as later notebooks will import it (so a missing import shows now).
    If it fails to import or breaks a contract, the previous file is put back and the error raised.

    Args:
        module: one of :func:`module_names`.
        source: the cell's code.
        directory: the folder that holds the package.
        package: the package name.

    Returns:
        ``["attention (attention)", ...]``: the function or class and the part it provides.
    """
    path = part_file(module, directory, package)
    previous = path.read_text(encoding="utf-8") if path.exists() else None
    save_part(module, source, directory, package)
    try:
        loaded = import_saved(module, directory, package)
        checked = []
        for spec in PARTS:
            if spec.module != module:
                continue
            if not hasattr(loaded, spec.attribute):
                raise PartContractError(spec.name, f"is missing: the cell defines no {spec.attribute}")
            for norm_first in _placements(spec.name):
                check_part(spec.name, getattr(loaded, spec.attribute), norm_first,
                           fully_masked_rows=False)  # 06 adds that one
            checked.append(f"{spec.attribute} ({spec.name})")
        return checked
    except Exception:
        if previous is None:
            path.unlink()
        else:
            path.write_text(previous, encoding="utf-8")
        raise


def _placements(part: str) -> tuple[bool, ...]:
    """The norm placements a saved part is checked in: post-norm, and for a GPT's block pre-norm too (notebook 15's
    GPT trains pre-norm; the translator's layers are saved in notebooks 08-09 and first trained post-norm)."""
    return (False, True) if part == "decoder_only_layer" else (False,)


def fully_masked_note(part: str, fn) -> str | None:
    """For the attention: the promise notebook 06 adds (no NaN on a fully masked row), as a note; else None."""
    if part != "attention":
        return None
    try:
        check_fully_masked_row(fn)
    except PartContractError as error:
        return (f"note: your attention {error.promise.split(';')[0]}. Notebook 06 shows why that matters and has "
                "you update it; notebook 13 needs the update")
    return None


def skeleton(module: str) -> str:
    """The body of a blank ``%%my_part <module>`` cell: each contract and a stub to replace (student edition)."""
    if module not in module_names():
        raise ValueError(f"module must be one of {module_names()}, got {module!r}")
    lines = [f"# Your {module.replace('_', ' ')}: write it here, following the steps above. Running this cell saves it",
             f"# as my_transformer/{module}.py, checks its contract, and the cells below use it (math, torch, nn and F",
             "# are imported for you; import your other parts from my_transformer)."]
    for spec in PARTS:
        if spec.module != module:
            continue
        lines.append(f"# contract: {spec.signature}")
        if spec.name == "attention":
            lines.append("# from notebook 06 on, also: a query that may see no key (a fully masked row) gets no NaN")
        if spec.attribute[0].isupper():
            lines += [f"class {spec.attribute}(nn.Module):", "    def __init__(self, *args, **kwargs):",
                      "        super().__init__()", "        raise NotImplementedError", ""]
        else:
            lines += [f"def {spec.attribute}(*args, **kwargs):", "    raise NotImplementedError", ""]
    return "\n".join(lines).rstrip("\n")


def _not_written(error: Exception) -> bool:
    """True if the part only raised NotImplementedError (the stub is still there)."""
    return isinstance(error, PartContractError) and isinstance(error.__cause__, NotImplementedError)


_REFUSED = ".refused.json"  # {module: why its last %%my_part cell was not saved}, next to the saved parts


def _remember_refusal(module: str, reason: str | None, directory: str | Path = ".", package: str = MY_PACKAGE) -> None:
    """Record (or, with ``reason`` None, clear) that the last ``%%my_part module`` cell was refused."""
    path = Path(directory) / package / _REFUSED
    refused = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if reason is None:
        if module not in refused:
            return
        refused.pop(module)
    else:
        refused[module] = reason
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(refused, indent=1) + "\n", encoding="utf-8")


def last_refusal(module: str, directory: str | Path = ".", package: str = MY_PACKAGE) -> str | None:
    """Why the last ``%%my_part module`` cell was refused, or None if it was saved."""
    path = Path(directory) / package / _REFUSED
    return json.loads(path.read_text(encoding="utf-8")).get(module) if path.is_file() else None


def course_twin(module: str) -> dict[str, object]:
    """``{name a %%my_part <module> cell defines: course_lib's part}``, e.g. ``{"attention": scaled_dot_product_attention}``."""
    import importlib

    twins = {}
    for spec in PARTS:
        if spec.module == module:
            where, _, name = spec.reference.rpartition(".")
            twins[spec.attribute] = getattr(importlib.import_module(where), name)
    return twins


def bind_names(module: str, namespace: dict | None, directory: str | Path = ".", package: str = MY_PACKAGE) -> str:
    """Put the names of ``module`` into ``namespace`` (the notebook's): from the saved file, else course_lib's twins.

    Returns:
        ``"saved"`` when they come from ``<package>/<module>.py``, ``"course_lib"`` otherwise (nothing saved).
    """
    if namespace is None:
        return "none"
    if part_file(module, directory, package).is_file():
        loaded = import_saved(module, directory, package)
        namespace.update({spec.attribute: getattr(loaded, spec.attribute) for spec in PARTS if spec.module == module})
        return "saved"
    namespace.update(course_twin(module))
    return "course_lib"


def _notebook_namespace() -> dict | None:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the magic only runs in IPython
        return None
    shell = get_ipython()
    return None if shell is None else shell.user_ns


def my_part(line: str, cell: str) -> None:
    """The ``%%my_part <module>`` cell magic: save the cell as ``my_transformer/<module>.py``, check it, and define
    its names in the notebook from the saved file (so the cells below run the file, not the cell's text).

    A cell that still holds the stub (student edition) or is refused defines nothing new: the names come from the
    last saved file, or from course_lib's twin when nothing is saved yet, and the message says which.
    """
    module = line.strip()
    if module not in module_names():
        raise ValueError(f"%%my_part needs one of {module_names()}, got {module!r}")
    namespace = _notebook_namespace()
    names = ", ".join(f"`{spec.attribute}`" for spec in PARTS if spec.module == module)
    try:
        checked = keep_part(module, cell)
    except PartContractError as error:
        if _not_written(error):
            source = bind_names(module, namespace)
            until = (f"until then {names} below are your last saved version" if source == "saved" else
                     f"until then {names} below are course_lib's, so the cells below still run")
            print(f"⏳ not saved yet: replace `raise NotImplementedError` with your {module.replace('_', ' ')} and run "
                  f"the cell again ({until})")
            return
        reason = f"{error.part} {error.promise}"
        _remember_refusal(module, reason)
        source = bind_names(module, namespace)
        kept = (f"your previous version is kept, and {names} below are it" if source == "saved" else
                f"nothing is saved; {names} below are course_lib's")
        print(f"❌ not saved: {reason}. Fix the cell and run it again ({kept}).")
        return
    _remember_refusal(module, None)
    bind_names(module, namespace)
    print(f"saved {MY_PACKAGE}/{module}.py; its contract holds for: {', '.join(checked)}")
    if module == "attention":
        note = fully_masked_note("attention", import_saved(module).attention)
        print(note or "a fully masked row (a query that may see no key) gives no NaN: notebook 06's promise holds")
    print(f"{names} below {'is' if ',' not in names else 'are'} the saved file's "
          f"(elsewhere: from {MY_PACKAGE}.{module} import {', '.join(spec.attribute for spec in PARTS if spec.module == module)})")


def check_saved_part(part: str, directory: str | Path = ".", package: str = MY_PACKAGE):
    """Compare the saved ``part`` with course_lib's and print the verdict; None (and a note) if it is not saved.

    Args:
        part: a part name of :data:`course_lib.builders.PART_NAMES`, e.g. ``"attention"``.
        directory: the folder that holds the package.
        package: the package name.

    Returns:
        The :class:`course_lib.student.bug_finder.Finding`, or None when the part has not been saved yet.
    """
    module = next(spec.module for spec in PARTS if spec.name == part)
    refusal = last_refusal(module, directory, package)
    if refusal is not None:  # never a ✅ for the older file the refused cell left in place
        print(f"❌ {part}: your last %%my_part {module} cell was not saved ({refusal}); fix it and run it again")
        return Finding(part, False, 1, f"the last %%my_part {module} cell was refused: {refusal}")
    parts = load_my_parts(directory, package)
    if part not in parts:
        print(f"⏳ {part}: not saved yet (run the %%my_part cell above with your code)")
        return None
    finding = compare_with_course(part, parts[part], fully_masked_rows=False)
    print(f"{'✅' if finding.ok else '❌'} {part}: {finding.evidence}")
    note = fully_masked_note(part, parts[part]) if finding.ok else None
    if note:
        print(note)
    return finding


def load_ipython_extension(ipython) -> None:
    """Register ``%%my_part`` (``%load_ext course_lib.student``)."""
    ipython.register_magic_function(my_part, magic_kind="cell", magic_name="my_part")
