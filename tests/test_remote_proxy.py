"""The grader's proxy of a student's objects (instructor/remote.py and grader_kernel_side.py), in one process.

The "kernel" here is this process: ``execute`` runs the request code with ``exec``. Everything still
crosses the same encoding (tagged JSON, tensors as bytes), so what comes back by value and what by
reference is exactly what the sandboxed grader sees.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "instructor"))
import grader_kernel_side  # noqa: E402
import remote  # noqa: E402


@pytest.fixture()
def connect(tmp_path, monkeypatch):
    monkeypatch.setattr(grader_kernel_side, "EXCHANGE", str(tmp_path))
    monkeypatch.setattr(grader_kernel_side, "OBJECTS", {})

    def execute(code, timeout, silent):
        grad = torch.is_grad_enabled()  # the kernel side resets it after a request; a real kernel is another process
        try:
            exec(code, {})
        finally:
            torch.set_grad_enabled(grad)
        return SimpleNamespace(status="ok", error=None)

    conn = remote.Connection(execute, tmp_path, timeout=10)

    def to_remote(obj):
        return remote.decode(grader_kernel_side.encode(obj), conn)

    return to_remote


def test_in_place_changes_reach_the_module_by_name_and_by_iteration(connect):
    """A module's parameters are the kernel's own whether fetched by name or by iterating ``parameters()``
    (before the fix, iteration handed back copies and a hidden test's in-place change silently did nothing)."""
    module = nn.LayerNorm(3)
    proxy = connect(module)
    with torch.no_grad():
        proxy.weight.copy_(torch.tensor([1.0, 2.0, 3.0]))  # by name
        for p in proxy.parameters():  # by iteration
            p.add_(10.0)
        for name, p in proxy.named_parameters():
            assert name in ("weight", "bias") and tuple(p.shape) == (3,)
            p.mul_(2.0)
    assert module.weight.tolist() == [22.0, 24.0, 26.0] and module.bias.tolist() == [20.0, 20.0, 20.0]
    assert torch.equal(proxy.weight.detach(), module.weight.detach())  # values come back on request


def test_next_and_getitem_reach_parameters_by_reference_too(connect):
    """``next(module.parameters())`` and an ``nn.ParameterList`` item are the kernel's parameters as well."""
    module = nn.Module()
    module.scales = nn.ParameterList([nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(3))])
    proxy = connect(module)
    with torch.no_grad():
        next(proxy.parameters()).fill_(1.0)
        proxy.scales[1].fill_(2.0)
    assert module.scales[0].tolist() == [1.0, 1.0] and module.scales[1].tolist() == [2.0, 2.0, 2.0]
    (weights,) = [value for value in proxy.state_dict().values() if value.shape == (2,)]
    assert type(weights) is torch.Tensor  # a state dict's values are plain tensors: they come back as data


def test_results_of_calls_come_back_by_value(connect):
    """What the student's code returns is data the grader owns: changing it changes nothing in the kernel."""
    module = nn.Linear(2, 2)
    before = module.weight.detach().clone()
    out = connect(module)(torch.ones(1, 2))
    assert type(out) is torch.Tensor and out.shape == (1, 2)
    out.add_(1.0)
    plain = connect(SimpleNamespace(items=[torch.zeros(2)]))
    (item,) = list(plain.items)  # plain tensors inside a list come back as data
    assert type(item) is torch.Tensor
    assert torch.equal(module.weight.detach(), before)
