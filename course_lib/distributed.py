"""Data-parallel training with ``torch.distributed`` (DistributedDataParallel), on CPUs or GPUs.

Launch the same script once per process with ``torchrun``, e.g.::

    torchrun --nproc_per_node=2 -m course_lib.train --time-budget 60

``torchrun`` sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and the rendezvous address;
:func:`init_distributed` joins the group (``gloo`` on CPU, ``nccl`` on GPUs). Every process builds
the same model from the same seed and the same list of length-bucketed batches, then
:class:`ShardedBatchSampler` gives process ``r`` every ``world_size``-th batch starting at ``r``
(all processes get the same number, so none waits for a missing partner). DDP averages the
gradients after every backward pass, so the replicas stay identical; only rank 0 prints and writes
checkpoints. ``tests/test_distributed.py`` runs two CPU processes and checks the replicas end with
identical weights.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator

import torch
import torch.distributed as dist
from torch import nn

from .devices import DEVICE_ENV


def is_distributed() -> bool:
    """True inside an initialised process group with more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def get_rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def get_world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def is_main_process() -> bool:
    """Only this process prints, draws progress bars and writes files."""
    return get_rank() == 0


def launched_by_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def init_distributed(backend: str | None = None) -> torch.device | None:
    """Join the process group if launched by ``torchrun``; return this process's device (None if not distributed).

    Each process takes its own GPU (``cuda:LOCAL_RANK``) when CUDA is present, else the CPU. With
    ``COURSE_DEVICE=cpu`` every process trains on the CPU (gloo) even on a GPU machine: the documented way to
    start more processes than the machine has GPUs.

    Args:
        backend: ``"gloo"`` or ``"nccl"``; default nccl when the processes use GPUs, else gloo.

    Raises:
        TooFewGpus: more processes on this machine than CUDA devices (two processes on one GPU make nccl fail).
    """
    if not launched_by_torchrun() or int(os.environ["WORLD_SIZE"]) < 2:
        return None
    use_cuda = torch.cuda.is_available() and os.environ.get(DEVICE_ENV, "").split(":")[0] != "cpu"
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if use_cuda:
        _check_enough_gpus(local_rank)
    if backend is None:
        backend = "nccl" if use_cuda else "gloo"
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend=backend)
    return device


class TooFewGpus(RuntimeError):
    """``torchrun`` started more processes on this machine than it has GPUs."""


def _check_enough_gpus(local_rank: int) -> None:
    gpus = torch.cuda.device_count()
    if local_rank >= gpus:
        processes = os.environ.get("LOCAL_WORLD_SIZE", str(local_rank + 1))
        raise TooFewGpus(f"torchrun started {processes} processes on this machine, but it has {gpus} GPU(s): use "
                         f"--nproc_per_node={gpus}, or set {DEVICE_ENV}=cpu to train every process on the CPU")


def cleanup_distributed() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def any_process(flag: bool, device: torch.device | None = None) -> bool:
    """True if ``flag`` is True on any process (so every process stops at the same step)."""
    if not is_distributed():
        return flag
    value = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item() > 0)


def sum_over_processes(values: list[float], device: torch.device | None = None) -> list[float]:
    """Element-wise sum of a list of numbers over all processes (identity when not distributed)."""
    if not is_distributed():
        return list(values)
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.tolist()


def weights_digest(model: nn.Module) -> str:
    """SHA-256 of all parameters and buffers in order (equal digests = bit-identical weights)."""
    digest = hashlib.sha256()
    for name, tensor in getattr(model, "module", model).state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def replicas_identical(model: nn.Module) -> bool:
    """Gather every process's :func:`weights_digest` and check they agree (True when not distributed)."""
    if not is_distributed():
        return True
    digests: list[str | None] = [None] * get_world_size()
    dist.all_gather_object(digests, weights_digest(model))
    return len(set(digests)) == 1


def wrap_model(model: nn.Module, device: torch.device) -> nn.Module:
    """DistributedDataParallel around ``model`` when distributed, else ``model`` itself."""
    if not is_distributed():
        return model
    from torch.nn.parallel import DistributedDataParallel

    device_ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids)


class ShardedBatchSampler:
    """Give each process its own share of a batch sampler's batches (like ``DistributedSampler``, for batches).

    Process ``r`` of ``n`` gets batches ``r, r + n, r + 2n, ...`` of the wrapped sampler's epoch,
    cut to the same count on every process. The wrapped sampler must produce the same batches in
    every process (same seed), which :class:`~course_lib.data.BucketBatchSampler` does.

    Args:
        batch_sampler: yields lists of dataset indices, one list per batch.
        num_replicas: number of processes (default: the world size).
        rank: this process (default: its rank).
    """

    def __init__(self, batch_sampler, num_replicas: int | None = None, rank: int | None = None):
        self.batch_sampler = batch_sampler
        self.num_replicas = get_world_size() if num_replicas is None else num_replicas
        self.rank = get_rank() if rank is None else rank
        if not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"rank must be in [0, {self.num_replicas}), got {self.rank}")

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.batch_sampler, "set_epoch"):
            self.batch_sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        batches = list(self.batch_sampler)
        per_process = len(batches) // self.num_replicas
        return iter(batches[self.rank : per_process * self.num_replicas : self.num_replicas])

    def __len__(self) -> int:
        return len(self.batch_sampler) // self.num_replicas
