"""Build the course Transformer with parts supplied by the caller (the student's own), course_lib filling the rest.

    parts = load_my_parts()                    # what the notebooks saved in my_transformer/
    model = build_transformer(config, parts)   # every part checked against its contract first
    print(ownership_table(parts))              # whose code runs (course_lib.ownership)

The model is ``course_lib.model.Transformer(config, parts)``, the course's one model class, so training,
cached greedy and beam decoding, evaluation, attention maps and checkpoints work on it unchanged. Where a
student supplies a small part but not the bigger one that contains it (say ``attention`` but not
``multi_head_attention``), the course's bigger part is built around the student's small one
(:mod:`course_lib.builders`). Contracts: :mod:`course_lib.parts`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from pathlib import Path

from .model import Transformer, TransformerConfig
from .parts import PARTS, PartContractError, check_parts

MY_PACKAGE = "my_transformer"


def build_transformer(config: TransformerConfig, parts: Mapping[str, object] | None = None,
                      check: bool = True) -> Transformer:
    """Check the supplied parts against their contracts, then build the course model with them.

    Args:
        config: the model configuration (``dropout`` must be 0 when parts are supplied).
        parts: ``{part name: function or class}``; missing parts come from course_lib.
        check: run :func:`course_lib.parts.check_parts` first (raises :class:`PartContractError`).

    Returns:
        ``Transformer(config, parts)``: the one course model, with everything it has (cached greedy and
        beam decoding, ``record_attention``, checkpoints); train it with ``course_lib.training.train``.
    """
    parts = dict(parts or {})
    if check:
        check_parts(parts, norm_first=config.norm_first)
    return Transformer(config, parts)


def load_my_parts(directory: str | Path = ".", package: str = MY_PACKAGE) -> dict[str, object]:
    """Import the parts the notebooks saved in ``<directory>/<package>/`` (fresh, every call).

    Args:
        directory: the folder that holds the package (the notebooks' folder).
        package: the package name.

    Returns:
        ``{part name: function or class}`` for every part whose file exists; a file that exists but
        lacks its function or class is an error naming both.
    """
    root = Path(directory).resolve()
    folder = root / package
    if not folder.is_dir():
        return {}
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]  # a fresh import: the notebooks may have saved new versions
    importlib.invalidate_caches()
    sys.path.insert(0, str(root))
    try:
        parts = {}
        for spec in PARTS:
            if not (folder / f"{spec.module}.py").is_file():
                continue
            try:
                module = importlib.import_module(f"{package}.{spec.module}")
            except Exception as error:  # report which saved file fails to import
                raise PartContractError(spec.name, f"could not be imported from {package}/{spec.module}.py: "
                                        f"{type(error).__name__}: {error}") from error
            if not hasattr(module, spec.attribute):
                raise PartContractError(spec.name, f"is missing: {package}/{spec.module}.py defines no "
                                        f"{spec.attribute}")
            parts[spec.name] = getattr(module, spec.attribute)
        return parts
    finally:
        sys.path.remove(str(root))
