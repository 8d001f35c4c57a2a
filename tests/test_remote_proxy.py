"""The grader's proxy of a student's objects (instructor/remote.py and grader_kernel_side.py), in one process.

The "kernel" here is this process: ``execute`` runs the request code with ``exec``. Everything still
crosses the same encoding (tagged JSON, tensors as bytes), so what comes back by value and what by
reference is exactly what the sandboxed grader sees.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from instructor import grader_kernel_side, remote

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def connect(tmp_path, monkeypatch):
    monkeypatch.setattr(grader_kernel_side, "EXCHANGE", str(tmp_path))
    monkeypatch.setattr(grader_kernel_side, "OBJECTS", {})
    monkeypatch.setitem(sys.modules, "grader_kernel_side", grader_kernel_side)  # its name in a kernel (instructor/kernel.py)

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


def _same(got, expected) -> bool:
    if isinstance(expected, torch.Tensor):
        return type(got) is torch.Tensor and got.dtype == expected.dtype and got.shape == expected.shape and \
            torch.equal(got.to_dense() if got.is_sparse else got, expected.to_dense() if expected.is_sparse else expected)
    if isinstance(expected, np.ndarray):
        return type(got) is np.ndarray and got.dtype == expected.dtype and np.array_equal(got, expected)
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(expected, (tuple, list)):
        return type(got) is type(expected) and len(got) == len(expected) and all(map(_same, got, expected))
    if isinstance(expected, dict):
        return type(got) is dict and got.keys() == expected.keys() and all(_same(got[k], expected[k]) for k in expected)
    return type(got) is type(expected) and got == expected


ORDINARY = {
    "NumPy float64 (a float subclass)": (np.float64(64.0), 64.0),
    "NumPy float32": (np.float32(0.5), 0.5),
    "NumPy int64": (np.int64(7), 7),
    "NumPy bool": (np.bool_(True), True),
    "NumPy array of floats": (np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(6, dtype=np.float32).reshape(2, 3)),
    "NumPy array of ints, not contiguous": (np.arange(12).reshape(3, 4).T, np.arange(12).reshape(3, 4).T.copy()),
    "NumPy array of booleans": (np.eye(3, dtype=bool), np.eye(3, dtype=bool)),
    "a big Python int": (2**70 + 1, 2**70 + 1),
    "NaN": (float("nan"), float("nan")),
    "a bool": (False, False),
    "a complex number": (1 + 2j, 1 + 2j),
    "a tuple of mixed numbers": ((1, 2.5, np.int32(3), True), (1, 2.5, 3, True)),
    "a dict with tuple keys": ({(0, 1): [np.float64(1.5)], "a": None}, {(0, 1): [1.5], "a": None}),
    **{f"a {dtype} tensor": (torch.arange(6).reshape(2, 3).to(dtype), torch.arange(6).reshape(2, 3).to(dtype))
       for dtype in (torch.bfloat16, torch.float16, torch.float32, torch.float64, torch.complex64, torch.bool,
                     torch.uint8, torch.int8, torch.int64, torch.uint16)},
    "an empty tensor": (torch.empty(0, 4), torch.empty(0, 4)),
    "a tensor that requires grad": (torch.ones(2, requires_grad=True), torch.ones(2)),
    "a 0-d tensor": (torch.tensor(3.5), torch.tensor(3.5)),
    "a sparse tensor (its dense values)": (torch.eye(3).to_sparse(), torch.eye(3)),
}


@pytest.mark.parametrize("what", list(ORDINARY))
def test_ordinary_answers_cross_by_value(connect, what):
    """Every ordinary answer reaches the hidden test as a value of its own kind (before the fix a NumPy float
    crashed the grader with ValueError: could not convert string to float: 'np.float64(64.0)')."""
    answer, expected = ORDINARY[what]
    got = connect(answer)
    assert _same(got, expected), (what, got)


def test_a_value_that_cannot_cross_says_which_and_why(connect):
    class Broken(list):
        def __iter__(self):
            raise RuntimeError("boom")

    with pytest.raises(remote.AnswerUnreadable, match=r"Broken.*boom"):
        connect([1, Broken([2])])


def test_a_class_posing_as_a_tensor_stays_the_student_s(connect):
    """A student's class named ``torch.Tensor`` is not taken for one: it stays a handle of the notebook's class."""
    class Poser:
        pass

    Poser.__module__, Poser.__qualname__ = "torch", "Tensor"
    proxy = connect(Poser())
    assert type(proxy) is remote.Remote and not isinstance(proxy, torch.Tensor)
    assert "torch.Tensor" in repr(proxy) and "class of the notebook" in repr(proxy)
