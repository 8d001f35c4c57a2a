"""DistributedDataParallel: batches are sharded without overlap, and two CPU processes launched by
``torchrun`` (gloo) train the same tiny model from the command line and end with identical weights."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course_lib.checkpoint import load_checkpoint
from course_lib.distributed import ShardedBatchSampler

REPO = Path(__file__).resolve().parent.parent


class ListBatches:
    """A batch sampler stand-in: fixed batches, reshuffled per epoch."""

    def __init__(self, n_batches):
        self.n_batches, self.epoch = n_batches, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        order = torch.randperm(self.n_batches, generator=torch.Generator().manual_seed(self.epoch)).tolist()
        return iter([[2 * i, 2 * i + 1] for i in order])

    def __len__(self):
        return self.n_batches


def test_sharded_batches_are_disjoint_equal_in_number_and_follow_the_epoch():
    base = ListBatches(7)
    shards = [ShardedBatchSampler(base, num_replicas=2, rank=r) for r in range(2)]
    for shard in shards:
        shard.set_epoch(3)
    first, second = (list(shard) for shard in shards)
    assert len(first) == len(second) == len(shards[0]) == 3  # 7 batches: one left out so nobody waits
    assert not {i for b in first for i in b} & {i for b in second for i in b}
    assert first + second != [] and sorted(first + second) != sorted(list(ListBatches(7)))  # epoch 3 order, 6 of 7
    shards[0].set_epoch(4)
    assert list(shards[0]) != first
    with pytest.raises(ValueError, match="rank"):
        ShardedBatchSampler(base, num_replicas=2, rank=2)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_processes_train_identical_replicas_from_the_command_line(tmp_path):
    checkpoint = tmp_path / "ddp.pt"
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--nnodes=1",
        "--master_addr=127.0.0.1", f"--master_port={free_port()}",
        "-m", "course_lib.train",
        "--max-train-pairs", "400", "--max-eval-pairs", "20", "--max-steps", "4", "--batch-size", "50",
        "--d-model", "32", "--d-ff", "64", "--n-heads", "2", "--layers", "1", "--dropout", "0.1",
        "--threads", "1", "--beam", "1", "--samples", "1", "--no-progress", "--output", str(checkpoint),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    out = result.stdout
    assert "replicas identical after training: True" in out
    assert out.count("test greedy") == 1  # only rank 0 reports
    assert "world size 2" in out
    _, _, _, data = load_checkpoint(checkpoint)
    assert data["metrics"]["steps"] == 4
