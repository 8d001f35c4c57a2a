"""Hidden tests for notebook 13 (your own Transformer)."""

from __future__ import annotations

import torch
from torch import nn

from course_lib.exercises import nb13

from . import Forbidden, Rules, generator, hidden_test


@hidden_test(nb13.check_fixed_layer_norm, cases=3, rules=Rules(forbid=(
    Forbidden("layer_?norm|group_?norm|instance_?norm|batch_?norm", "a repair of the norm written out, without "
              "PyTorch's LayerNorm (nn.LayerNorm, F.layer_norm)"),),
    stated="implied: repair the classmate's norm (not replace it by PyTorch's)"))
def fixed_layer_norm(grader, student_cls):
    g = generator(130_001)
    for case, d, scale, shift in [("d 7, large values", 7, 40.0, -3.0), ("d 2", 2, 1.0, 0.5),
                                  ("d 33, near-constant rows", 33, 1e-3, 2.0)]:
        module = grader.call(student_cls, f"RepairedLayerNorm({d})", d)
        # The values must land on the student's own module: in the sandbox its parameters, fetched by name or
        # by iteration, are the kernel's tensors (tests/test_remote_proxy.py); set here by name.
        names = [name for name, p in module.named_parameters() if tuple(p.shape) == (d,)]
        x = torch.randn(3, 4, d, generator=g) * scale + shift
        reference = nn.LayerNorm(d)
        if len(names) == 2:  # gamma, beta in that order: give them values that matter
            gamma, beta = torch.rand(d, generator=g) + 0.5, torch.randn(d, generator=g)
            with torch.no_grad():
                for name, value in zip(names, (gamma, beta), strict=True):
                    target = module
                    for part in name.split("."):
                        target = getattr(target, part)
                    target.copy_(value)
                reference.weight.copy_(gamma)
                reference.bias.copy_(beta)
        with torch.no_grad():
            got = grader.call(module, case, x.clone())
            expected = reference(x)
        grader.expect(case, got, expected, atol=1e-4)


@hidden_test(nb13.check_attention_calls)
def attention_calls(grader, answer):
    if isinstance(answer, bool):
        raise grader.wrong("answer with a whole number.")
    grader.check_value(answer, 2 * 1 + 2 * 2)
