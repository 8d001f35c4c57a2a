"""The student's own package, ``my_transformer/``: where ``%%my_part`` saves parts, and the one way they are imported.

Every saved part is a file ``<directory>/my_transformer/<module>.py`` (the notebooks' folder holds the
package). Saving is atomic; importing is always fresh (an earlier import of the package is dropped, so a
part saved again in a notebook is the one that runs) and goes through :func:`fresh_import` alone, for the
magic's check right after saving, for :func:`load_my_parts` (notebooks 13 and 15, the command line, the bug finder)
and for the ownership table.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from .contracts import PARTS, USED_BY, PartContractError

MY_PACKAGE = "my_transformer"
HEADER = '''"""Your own {module}: saved by `%%my_part {module}` in notebook {notebook}. Edit the notebook cell, not this file."""
# ruff: noqa
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

'''
INIT = '"""Your own Transformer parts, saved from the notebooks by ``%%my_part`` (see course_lib.student)."""\n'


def module_names() -> list[str]:
    """The file names (without .py) a ``%%my_part`` cell may write, in course order."""
    return list(dict.fromkeys(spec.module for spec in PARTS))


def part_file(module: str, directory: str | Path = ".", package: str = MY_PACKAGE) -> Path:
    """``<directory>/<package>/<module>.py``."""
    return Path(directory) / package / f"{module}.py"


def save_part(module: str, source: str, directory: str | Path = ".", package: str = MY_PACKAGE) -> Path:
    """Write ``source`` as ``<directory>/<package>/<module>.py`` (with the standard header) and return the path.

    Args:
        module: one of :func:`module_names`, e.g. ``"attention"``.
        source: the cell's code.
        directory: the folder that holds the package.
        package: the package name.
    """
    if module not in module_names():
        raise ValueError(f"module must be one of {module_names()}, got {module!r}")
    notebook = next(spec.notebook for spec in PARTS if spec.module == module)
    path = part_file(module, directory, package)
    path.parent.mkdir(parents=True, exist_ok=True)
    init = path.parent / "__init__.py"
    if not init.exists():
        init.write_text(INIT, encoding="utf-8")
    text = HEADER.format(module=module, notebook=notebook) + source.strip("\n") + "\n"
    tmp = path.with_suffix(".py.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # atomic: a half-written part never replaces a good one
    return path


class SavedImportError(ImportError):
    """A saved file failed to import; ``module`` names it, ``__cause__`` is the error."""

    def __init__(self, module: str, package: str, error: Exception):
        super().__init__(f"{package}/{module}.py could not be imported: {type(error).__name__}: {error}")
        self.module = module


def fresh_import(modules: list[str], directory: str | Path = ".", package: str = MY_PACKAGE) -> dict[str, ModuleType]:
    """Import ``<package>.<module>`` for each of ``modules`` from ``directory``, dropping every earlier import first.

    Args:
        modules: module names (files of the package, without .py).
        directory: the folder that holds the package.
        package: the package name.

    Returns:
        ``{module: imported module}``. A module that fails to import raises :class:`SavedImportError`.
    """
    root = str(Path(directory).resolve())
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]  # a fresh import: the notebooks may have saved new versions
    importlib.invalidate_caches()
    imported = {}
    for module in modules:
        try:
            if package not in sys.modules:
                _import_package(package, root)
            imported[module] = importlib.import_module(f"{package}.{module}")  # found through the package's folder
        except Exception as error:
            raise SavedImportError(module, package, error) from error
    return imported


def _import_package(package: str, root: str) -> None:
    """Import ``<root>/<package>/`` as the package ``package``, found as ``import`` would find it with ``root``
    on the import path (which is left as it is); its modules are then imported from the package's own folder."""
    spec = importlib.machinery.PathFinder.find_spec(package, [root])
    if spec is None:
        raise ModuleNotFoundError(f"No module named {package!r}", name=package)
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[package]
        raise


def import_saved(module: str, directory: str | Path = ".", package: str = MY_PACKAGE) -> ModuleType:
    """Import the saved ``<package>.<module>`` afresh."""
    return fresh_import([module], directory, package)[module]


def load_my_parts(directory: str | Path = ".", package: str = MY_PACKAGE, model: str | None = None) -> dict[str, object]:
    """Import the parts the notebooks saved in ``<directory>/<package>/`` (fresh, every call).

    Args:
        directory: the folder that holds the package (the notebooks' folder).
        package: the package name.
        model: ``"transformer"`` or ``"gpt"``: only the parts that model is built from
            (:data:`course_lib.student.contracts.USED_BY`; the command line's translator leaves out notebook 15's
            block, so a later edit of it does not touch a translator's checkpoint); None: every saved part.

    Returns:
        ``{part name: function or class}`` for every part whose file exists; a file that exists but fails to
        import or lacks its function or class is a :class:`PartContractError` naming both.
    """
    if model is not None and model not in USED_BY:
        raise ValueError(f"model must be one of {sorted(USED_BY)} or None, got {model!r}")
    wanted = {spec.module for spec in PARTS if model is None or spec.name in USED_BY[model]}
    saved = [m for m in module_names() if m in wanted and part_file(m, directory, package).is_file()]
    try:
        loaded = fresh_import(saved, directory, package)  # one fresh import: parts importing parts share modules
    except SavedImportError as failure:
        error = failure.__cause__
        name = next(spec.name for spec in PARTS if spec.module == failure.module)
        raise PartContractError(name, f"could not be imported from {package}/{failure.module}.py: "
                                f"{type(error).__name__}: {error}") from error
    parts = {}
    for spec in PARTS:
        if spec.module not in loaded or (model is not None and spec.name not in USED_BY[model]):
            continue
        if not hasattr(loaded[spec.module], spec.attribute):
            raise PartContractError(spec.name, f"is missing: {package}/{spec.module}.py defines no {spec.attribute}")
        parts[spec.name] = getattr(loaded[spec.module], spec.attribute)
    return parts
