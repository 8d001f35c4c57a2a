"""Small helpers shared by notebooks, training and tests: seeding and thread choice (devices: ``devices``)."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from .devices import get_device  # noqa: F401  (re-exported: older notebooks import it from here)

DEFAULT_NUM_THREADS = 1


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch so a notebook or run repeats exactly on one machine.

    Args:
        seed: the seed for every generator.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def configure_threads(num_threads: int | None = None) -> int:
    """Set how many CPU threads PyTorch uses and return the number chosen.

    The course default is one thread (override with the ``COURSE_NUM_THREADS`` environment
    variable or the argument). On a 2-core machine two threads train about 1.3x faster when
    nothing else runs, but a single competing CPU-bound process (a browser tab, a test runner,
    another notebook) made a 2-thread run 7x slower while a 1-thread run was unaffected, so the
    robust default is 1.

    Args:
        num_threads: threads to use; None reads ``COURSE_NUM_THREADS`` (default 1).
    """
    if num_threads is None:
        num_threads = int(os.environ.get("COURSE_NUM_THREADS", DEFAULT_NUM_THREADS))
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    torch.set_num_threads(num_threads)
    return num_threads


def keeps_random_state(function):
    """Decorate ``function`` so that it leaves Python's, NumPy's and PyTorch's random generators as it found them.

    The checks of a student's part (contracts, the bug finder) seed and draw random numbers; run from a
    notebook cell, they would otherwise change every random number of the cells below, so that what a
    student sees would depend on how their part happens to use the generator.
    """
    import functools

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        python_state, numpy_state = random.getstate(), np.random.get_state()
        with torch.random.fork_rng(devices=[]):
            try:
                return function(*args, **kwargs)
            finally:
                random.setstate(python_state)
                np.random.set_state(numpy_state)

    return wrapper
