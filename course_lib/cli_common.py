"""What the course's command lines share: one-line errors (exit status 2) and the argument types.

Used by ``python -m course_lib.train`` and ``python -m course_lib.translate``; the library itself never
imports a command-line module.
"""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """A mistake in the command line or its input files: reported as one line, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (``prog: error: message``) and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or a positive integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _budget(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds (0 = no limit), got {text}")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


# argparse names the type in "invalid <name> value: 'abc'"
_positive_int.__name__, _non_negative_int.__name__ = "positive integer", "non-negative integer"
_positive_float.__name__, _budget.__name__, _probability.__name__ = "positive number", "number", "probability"


def subword_tokenizers(train_config: dict):
    """The (source, target) subword tokenizers saved in a checkpoint's ``train_config``, or None."""
    if not train_config.get("src_subword_merges"):
        return None
    try:
        from .subword import SubwordTokenizer
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    return (SubwordTokenizer.from_merges(train_config["src_subword_merges"]),
            SubwordTokenizer.from_merges(train_config["tgt_subword_merges"]))
