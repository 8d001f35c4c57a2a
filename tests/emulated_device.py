"""A second device on a CPU-only machine, for tests: tensors that say they live on ``meta`` but hold CPU data.

CI has no GPU, yet the bugs a GPU reveals are device mix-ups: an index tensor on the CPU reaching an
embedding on CUDA, a mask built on the CPU added to scores on CUDA, ``.numpy()`` of a tensor loaded onto
CUDA. Inside :class:`EmulatedDevice` the ``meta`` device behaves like such an accelerator:

- ``model.to("meta")``, ``tensor.to("meta")`` and factory functions with ``device="meta"`` give
  :class:`Elsewhere` tensors: real CPU data (so models compute real numbers) reporting ``device='meta'``;
- an operation mixing an :class:`Elsewhere` tensor with an ordinary CPU tensor raises the error CUDA raises
  ("Expected all tensors to be on the same device"), with PyTorch's own exceptions: 0-dim CPU tensors
  (scalars), indexing with CPU indices, and copies across devices;
- ``.numpy()`` of an :class:`Elsewhere` tensor fails as it does for a CUDA tensor; ``.cpu()`` brings it back.

Every operation inside the context goes through Python, so it is a few times slower than plain PyTorch:
use small models.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

OTHER = torch.device("meta")
aten = torch.ops.aten

# Operations PyTorch allows across devices: copies, and indexing a tensor with indices on the CPU.
MIXING_ALLOWED = {aten.copy_.default, aten.index.Tensor, aten.index_put_.default, aten.index_put.default,
                  aten._index_put_impl_.default}


class DeviceMismatch(RuntimeError):
    """What CUDA raises when an operation gets tensors on two devices."""


class Elsewhere(torch.Tensor):
    """A CPU tensor that reports ``device='meta'`` (see the module docstring)."""

    @staticmethod
    def __new__(cls, inner: torch.Tensor):
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls, inner.size(), strides=inner.stride(), storage_offset=inner.storage_offset(), dtype=inner.dtype,
            device=OTHER, requires_grad=inner.requires_grad)
        wrapper.inner = inner
        return wrapper

    def __repr__(self):
        return f"Elsewhere({self.inner!r})"

    def tolist(self):
        return self.inner.tolist()

    def numpy(self, *args, **kwargs):
        raise TypeError("can't convert meta:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                        "host memory first.")

    # Indexing with Python lists or assigning a Python number makes PyTorch build tensors on the tensor's own
    # device behind the dispatcher (data-less on meta): build them on the CPU first, as the indices and scalars
    # that CUDA accepts from the CPU.
    def __getitem__(self, index):
        return super().__getitem__(_cpu_index(index))

    def __setitem__(self, index, value):
        if not isinstance(value, torch.Tensor):
            value = torch.tensor(value, dtype=self.dtype)
        return super().__setitem__(_cpu_index(index), value)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})


def _cpu_index(index):
    if isinstance(index, tuple):
        return tuple(_cpu_index(part) for part in index)
    if isinstance(index, list):
        return torch.tensor(index)
    return index


def _unwrap(x):
    return x.inner if isinstance(x, Elsewhere) else x


def _is_plain_cpu(x) -> bool:
    return isinstance(x, torch.Tensor) and not isinstance(x, Elsewhere) and x.device.type == "cpu" and x.dim() > 0


def _dispatch(func, args, kwargs):
    leaves = [*args, *kwargs.values()]
    flat = [x for leaf in leaves for x in (leaf if isinstance(leaf, list | tuple) else [leaf])]
    has_elsewhere = any(isinstance(x, Elsewhere) for x in flat)
    target = kwargs.get("device")
    to_other = target is not None and torch.device(target) == OTHER
    if target is not None:
        kwargs = {**kwargs, "device": torch.device("cpu")}
    if func is aten._to_copy.default and target is not None:  # .to(device): the data stays on the CPU
        out = func(*tree_map(_unwrap, args), **kwargs)
        return Elsewhere(out) if to_other else out
    if any(isinstance(x, torch.Tensor) and not isinstance(x, Elsewhere) and x.is_meta for x in flat):
        raise RuntimeError(f"{func} got a data-less meta tensor: it was made outside the emulation")
    if has_elsewhere and func not in MIXING_ALLOWED and any(_is_plain_cpu(x) for x in flat):
        raise DeviceMismatch(f"Expected all tensors to be on the same device, but found at least two devices, "
                             f"meta and cpu! (in {func})")
    out = func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs))
    if func is aten.copy_.default:  # in place: the destination keeps its device
        return args[0]
    if not (has_elsewhere or to_other):
        return out
    return tree_map(lambda x: Elsewhere(x) if isinstance(x, torch.Tensor) and not isinstance(x, Elsewhere) else x, out)


def _via_cpu(make):
    """``torch.tensor``/``torch.as_tensor`` build their data outside the dispatcher: build on the CPU, then move."""

    def build(data, *args, device=None, **kwargs):
        tensor = make(data, *args, **kwargs)
        return tensor if device is None else tensor.to(device)

    return build


def _load_via_cpu(load):
    """``torch.load(..., map_location=meta)`` maps storages, below the dispatcher: load on the CPU, then move."""

    def load_then_move(*args, map_location=None, **kwargs):
        if map_location is None or torch.device(map_location) != OTHER:
            return load(*args, map_location=map_location, **kwargs)
        data = load(*args, map_location="cpu", **kwargs)
        return tree_map(lambda x: x.to(OTHER) if isinstance(x, torch.Tensor) else x, data)

    return load_then_move


class EmulatedDevice(TorchDispatchMode):
    """Inside this context, ``meta`` is a second device holding real data (see the module docstring).

    Args:
        faulty: operations that compute wrongly on the emulated device (their results 1% too large), to
            emulate a broken accelerator set-up.
    """

    def __init__(self, faulty: frozenset = frozenset()):
        super().__init__()
        self.faulty = faulty

    def __enter__(self):
        self.saved = torch.tensor, torch.as_tensor, torch.load
        torch.tensor, torch.as_tensor = _via_cpu(torch.tensor), _via_cpu(torch.as_tensor)
        torch.load = _load_via_cpu(torch.load)
        return super().__enter__()

    def __exit__(self, *exc):
        torch.tensor, torch.as_tensor, torch.load = self.saved
        return super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = _dispatch(func, args, kwargs or {})
        if func in self.faulty and isinstance(out, Elsewhere):
            return Elsewhere(out.inner * 1.01)
        return out
