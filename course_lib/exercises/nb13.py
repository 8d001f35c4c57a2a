"""Exercise checks for notebook 13 (your own Transformer).

13.1 repair a classmate's LayerNorm (the articles' version): checked by the same comparison the
     diagnosis uses (contract, then numbers against ``nn.LayerNorm`` with the same gamma and beta).
13.2 how many times one forward pass of the default model calls a supplied ``attention`` function.

Wrong answers get the failing case and a hint, never the expected value.
"""

from __future__ import annotations

import torch

from course_lib.exercises import FAILED, PASSED, call_student, not_attempted, report
from course_lib.model import TransformerConfig
from course_lib.student.bug_finder import compare_with_course


def check_fixed_layer_norm(layer_norm_class, quiet: bool = False):
    """13.1: ``layer_norm_class(d_model)`` must normalise exactly like ``nn.LayerNorm``."""
    module, verdict = call_student("13.1", layer_norm_class, (4,), case="RepairedLayerNorm(4)", who="your class",
                                   quiet=quiet)
    if verdict is not None:
        return verdict
    _, verdict = call_student("13.1", module, (torch.randn(2, 4),), case="a (2, 4) input", who="your forward",
                              quiet=quiet)
    if verdict is not None:
        return verdict
    finding = compare_with_course("layer_norm", layer_norm_class)
    if finding.ok:
        return report("13.1", PASSED, "your LayerNorm keeps its contract and equals nn.LayerNorm.", quiet)
    return report("13.1", FAILED, f"not yet: {finding.evidence}.", quiet)


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


def check_attention_calls(answer, quiet: bool = False):
    """13.2: how many times one forward pass of the default model calls ``attention``."""
    if answer is None:
        return not_attempted("13.2", "set your answer instead of `None`", quiet)
    if isinstance(answer, bool) or not isinstance(answer, int):
        return report("13.2", FAILED, f"expected a whole number, got {answer!r}", quiet)
    config = TransformerConfig()
    expected = attention_calls(config)
    if answer == expected:
        return report("13.2", PASSED, "one call per encoder layer and two per decoder layer.", quiet)
    mistakes = [
        (config.n_encoder_layers + config.n_decoder_layers, "layers"),
        (config.n_encoder_layers, "encoder"),
        (2 * config.n_decoder_layers, "decoder"),
        (expected * config.n_heads, "heads"),
    ]
    hints = [_HINTS[kind] for value, kind in mistakes if value == answer]
    hint = "; or ".join(hints) or ("count the attention blocks in each encoder layer and in each decoder layer "
                                   "of TransformerConfig(), then add them up")
    return report("13.2", FAILED, f"{answer} is not it: {hint}.", quiet)
