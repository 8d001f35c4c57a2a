"""Build the course Transformer with parts supplied by the caller (the student's own), course_lib filling the rest.

    parts = load_my_parts()                    # what the notebooks saved in my_transformer/
    model = build_transformer(config, parts)   # every part checked against its contract first
    print(ownership_table(parts))              # whose code runs (course_lib.student.ownership)

The model is ``course_lib.model.Transformer(config, parts)``, the course's one model class, so training,
cached greedy and beam decoding, evaluation, attention maps and checkpoints work on it unchanged. Where a
student supplies a small part but not the bigger one that contains it (say ``attention`` but not
``multi_head_attention``), the course's bigger part is built around the student's small one
(:mod:`course_lib.builders`). Contracts: :mod:`course_lib.student.contracts`.

``build_gpt(config, parts)`` does the same for the decoder-only language model of notebook 15
(:class:`course_lib.gpt.GPT`): the same parts, with ``decoder_only_layer`` as its blocks.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..gpt import GPT, GPTConfig
from ..model import Transformer, TransformerConfig
from .contracts import check_parts


def build_transformer(config: TransformerConfig, parts: Mapping[str, object] | None = None,
                      check: bool = True) -> Transformer:
    """Check the supplied parts against their contracts, then build the course model with them.

    Args:
        config: the model configuration (``dropout`` must be 0 when parts are supplied).
        parts: ``{part name: function or class}``; missing parts come from course_lib.
        check: run :func:`course_lib.student.contracts.check_parts` first (raises :class:`PartContractError`).

    Returns:
        ``Transformer(config, parts)``: the one course model, with everything it has (cached greedy and
        beam decoding, ``record_attention``, checkpoints); train it with ``course_lib.training.train``.
    """
    parts = dict(parts or {})
    if check:
        check_parts(parts, norm_first=config.norm_first)
    return Transformer(config, parts)


def build_gpt(config: GPTConfig, parts: Mapping[str, object] | None = None, check: bool = True) -> GPT:
    """Check the supplied parts against their contracts, then build the decoder-only language model with them.

    Args:
        config: the language model's configuration (``dropout`` must be 0 when parts are supplied).
        parts: ``{part name: function or class}``; missing parts come from course_lib. ``encoder_layer`` and
            ``decoder_layer`` may be given (as ``load_my_parts`` returns them) but are not used: the blocks are
            ``decoder_only_layer``.
        check: run :func:`course_lib.student.contracts.check_parts` first (raises :class:`PartContractError`).

    Returns:
        ``GPT(config, parts)``; train it with :func:`course_lib.gpt.train_language_model`.
    """
    parts = dict(parts or {})
    if check:
        check_parts(parts, norm_first=config.norm_first)
    return GPT(config, parts)
