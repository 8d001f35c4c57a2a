"""Which device the course runs on, moving tensors to a model's device, and mixed precision.

One choice for the whole course: :func:`get_device` takes the device asked for (an argument, or the
``COURSE_DEVICE`` environment variable), else CUDA, else Apple's MPS, else the CPU. Every public
function that takes a model and tensors (decoding, evaluation, attention recording, the explorer, the
checks of a student's parts) moves the tensors to the model's device with :func:`to_model_device`, so a
notebook may build its inputs on the CPU and still use a model trained on a GPU; each function's
docstring says where its results come back (as a rule: where the caller's tensors were).

Mixed precision (:func:`autocast_dtype`): on CUDA the training loop computes in bfloat16 where the card
supports it and in float16 with a gradient scaler on older cards (the T4 of Colab's free tier); the CPU
and MPS stay in float32 unless asked otherwise. ``tests/test_devices.py`` checks all of this on a
CPU-only machine with a second device emulated on the CPU (``tests/emulated_device.py``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

import torch
from torch import nn

DEVICE_ENV = "COURSE_DEVICE"
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


class DeviceUnavailable(ValueError):
    """The device asked for is not on this machine, or is not a device name."""


def _available(device: torch.device) -> bool:
    if device.type == "cuda":
        return torch.cuda.is_available() and (device.index is None or device.index < torch.cuda.device_count())
    if device.type == "mps":
        return _mps_available()
    return True


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def _parse(name: str, source: str) -> torch.device:
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError) as exc:
        raise DeviceUnavailable(f"{source} must name a device such as 'cpu', 'cuda', 'cuda:1' or 'mps', got {name!r}") from exc
    if not _available(device):
        raise DeviceUnavailable(f"{source} asks for {name!r}, but this machine has no such device "
                         f"(CUDA available: {torch.cuda.is_available()}, MPS available: {_mps_available()})")
    return device


def get_device(prefer: str | torch.device | None = None) -> torch.device:
    """The device to run on: ``prefer``, else ``$COURSE_DEVICE``, else CUDA, else MPS, else the CPU.

    Args:
        prefer: a device name (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``) or None for the automatic choice.

    Raises:
        DeviceUnavailable: the device asked for (argument or environment variable) is not on this machine.
    """
    if prefer is not None:
        return _parse(str(prefer), "device")
    if os.environ.get(DEVICE_ENV):
        return _parse(os.environ[DEVICE_ENV], f"the environment variable {DEVICE_ENV}")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def describe_device(device: torch.device | None = None) -> str:
    """One line naming the device (and the GPU's model), e.g. ``"cuda (NVIDIA H100 80GB HBM3)"``.

    Args:
        device: the device to describe; default :func:`get_device`.
    """
    device = get_device() if device is None else torch.device(device)
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    if device.type == "mps":
        return "mps (Apple GPU)"
    return device.type


def _unwrap(model: nn.Module) -> nn.Module:
    return getattr(model, "module", model)  # the model inside a DistributedDataParallel wrapper


def model_device(model: nn.Module) -> torch.device:
    """Where ``model``'s weights are (its first parameter or buffer); the CPU for a model without any."""
    model = _unwrap(model)
    for tensor in _tensors(model):
        return tensor.device
    return torch.device("cpu")


def _tensors(model: nn.Module) -> Iterable[torch.Tensor]:
    yield from model.parameters()
    yield from model.buffers()


def to_model_device(model: nn.Module, *tensors: torch.Tensor | None):
    """``tensors`` moved to ``model``'s device (None stays None): one tensor in, one out; several in, a tuple out.

    Args:
        model: the module whose device decides.
        tensors: the caller's tensors, on any device.
    """
    device = model_device(model)
    moved = tuple(None if t is None else t.to(device) for t in tensors)
    return moved[0] if len(moved) == 1 else moved


def cuda_precision() -> str:
    """``"bf16"`` on a CUDA card that computes in bfloat16 (Ampere and newer), else ``"fp16"`` (e.g. the T4)."""
    return "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp16"  # a T4 only emulates bf16


def autocast_dtype(device: torch.device, precision: str = "auto") -> torch.dtype | None:
    """The dtype to autocast to on ``device`` for ``precision``, or None for plain float32.

    Args:
        device: where the model runs.
        precision: ``"auto"`` (mixed precision on CUDA, float32 elsewhere), ``"fp32"``, ``"bf16"`` or ``"fp16"``.

    Raises:
        ValueError: an unknown ``precision``.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "auto":
        precision = cuda_precision() if torch.device(device).type == "cuda" else "fp32"
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def autocast(device: torch.device, dtype: torch.dtype | None):
    """``torch.autocast`` to ``dtype`` on ``device``, or no context at all for None (plain float32).

    Args:
        device: where the model runs.
        dtype: from :func:`autocast_dtype`.
    """
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=dtype)


def describe_precision(device: torch.device, precision: str = "auto") -> str:
    """What :func:`autocast_dtype` chooses, in words: ``"float32"``, ``"mixed precision (bfloat16)"``, ...

    Args:
        device: where the model runs.
        precision: as in :func:`autocast_dtype`.
    """
    dtype = autocast_dtype(device, precision)
    if dtype is None:
        return "float32"
    return "mixed precision (float16, gradient scaler)" if dtype == torch.float16 else "mixed precision (bfloat16)"
