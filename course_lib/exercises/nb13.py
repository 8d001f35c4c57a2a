"""Exercise checks for notebook 13 (your own Transformer).

13.1 repair a classmate's LayerNorm (the articles' version): checked by the same comparison the
     diagnosis uses (contract, then numbers against ``nn.LayerNorm`` with the same gamma and beta).
13.2 how many times one forward pass of the default model calls a supplied ``attention`` function.

Wrong answers get the failing case and a hint, never the expected value.
"""

from __future__ import annotations

import torch

from course_lib.exercises import FAILED, PASSED, VALUE, exercise
from course_lib.model import TransformerConfig
from course_lib.student.bug_finder import compare_with_course


@exercise("13.1", points=2)
def check_fixed_layer_norm(ex, layer_norm_class, quiet: bool = False):
    """``layer_norm_class(d_model)`` must normalise exactly like ``nn.LayerNorm``."""
    module, verdict = ex.call_student(layer_norm_class, (4,), case="RepairedLayerNorm(4)", who="your class",
                                   quiet=quiet)
    if verdict is not None:
        return verdict
    _, verdict = ex.call_student(module, (torch.randn(2, 4),), case="a (2, 4) input", who="your forward",
                              quiet=quiet)
    if verdict is not None:
        return verdict
    finding = compare_with_course("layer_norm", layer_norm_class)
    if finding.ok:
        return ex.report(PASSED, "your LayerNorm keeps its contract and equals nn.LayerNorm.", quiet)
    return ex.report(FAILED, f"not yet: {finding.evidence}.", quiet)


def attention_calls(config: TransformerConfig) -> int:
    """Calls of the attention function in one forward pass: one per encoder layer, two per decoder layer."""
    return config.n_encoder_layers + 2 * config.n_decoder_layers


_HINTS = {
    "layers": "that is one call per layer: a decoder layer attends twice (masked self-attention, then "
              "cross-attention to the memory)",
    "encoder": "that counts the encoder only: the decoder layers call attention too",
    "decoder": "that counts the decoder only: every encoder layer has a self-attention block too",
    "heads": "the heads run side by side in ONE call (the head dimension is a batch dimension of the "
             "attention function): count attention blocks, not heads",
}


@exercise("13.2", points=1, kind=VALUE)
def check_attention_calls(ex, answer, quiet: bool = False):
    """How many times one forward pass of the default model calls ``attention``."""
    if answer is None:
        return ex.not_attempted("set your answer instead of `None`", quiet)
    if isinstance(answer, bool) or not isinstance(answer, int):
        return ex.report(FAILED, f"expected a whole number, got {answer!r}", quiet)
    config = TransformerConfig()
    expected = attention_calls(config)
    if answer == expected:
        return ex.report(PASSED, "one call per encoder layer and two per decoder layer.", quiet)
    mistakes = [
        (config.n_encoder_layers + config.n_decoder_layers, "layers"),
        (config.n_encoder_layers, "encoder"),
        (2 * config.n_decoder_layers, "decoder"),
        (expected * config.n_heads, "heads"),
    ]
    hints = [_HINTS[kind] for value, kind in mistakes if value == answer]
    hint = "; or ".join(hints) or ("count the attention blocks in each encoder layer and in each decoder layer "
                                   "of TransformerConfig(), then add them up")
    return ex.report(FAILED, f"{answer} is not it: {hint}.", quiet)
