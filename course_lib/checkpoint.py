"""Saving and loading a trained translator: weights, model config, both vocabularies, and optionally
the training state needed to resume (optimizer, scheduler, step, epoch, history, random state).

A checkpoint is a plain dict of tensors and Python built-ins, so it loads with
``torch.load(..., weights_only=True)``, which refuses to run arbitrary pickled code. It is written
*atomically*: to a temporary file in the same directory, flushed to disk, then moved over the old
file with ``os.replace`` (an atomic rename). A save that dies half-way leaves the previous checkpoint
intact. Loading checks the format and that the config, vocabularies and weights agree, and names
the file in every error. Checked in ``tests/test_checkpoint.py`` (round trip, failure mid-save,
corrupt and missing files, vocabulary/config mismatch, resume).
"""

from __future__ import annotations

import hashlib
import inspect
import os
import tempfile
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path

import torch
from torch import nn

from .model import Transformer, TransformerConfig
from .tokenization import Vocab

FORMAT = "course_lib.translation_checkpoint"
VERSION = 1


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, unreadable, or does not match the model or vocabularies."""


def _unwrap(model: nn.Module) -> nn.Module:
    return getattr(model, "module", model)


def build_checkpoint(
    model: nn.Module,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    training_state: dict | None = None,
    train_config: dict | None = None,
    metrics: dict | None = None,
) -> dict:
    """The dict that :func:`save_checkpoint` writes.

    Args:
        model: a course ``Transformer`` (or a DDP wrapper around one).
        src_vocab, tgt_vocab: the vocabularies it was trained with.
        training_state: optional ``{"optimizer": ..., "scheduler": ..., "step": int, "epoch": int,
            "history": [...], "rng": {...}}`` for resuming (plain types and tensors only).
        train_config: optional training settings (a plain dict), for the record.
        metrics: optional numbers such as ``{"valid_loss": 1.2, "test_bleu": 98.0}``.
    """
    model = _unwrap(model)
    config = model.config.to_dict()
    _check_vocab_sizes(config, len(src_vocab.itos), len(tgt_vocab.itos), "the model being saved")
    state = {name: tensor.detach().cpu() for name, tensor in model.state_dict().items()}
    return {
        "format": FORMAT,
        "version": VERSION,
        "model_config": config,
        "model_state": state,
        "src_itos": list(src_vocab.itos),
        "tgt_itos": list(tgt_vocab.itos),
        "training_state": training_state,
        "train_config": train_config,
        "metrics": metrics or {},
    }


def save_checkpoint(path: str | os.PathLike, model: nn.Module, src_vocab: Vocab, tgt_vocab: Vocab, **extra) -> Path:
    """Write a checkpoint atomically (see the module docstring). ``extra``: see :func:`build_checkpoint`.

    Returns:
        The path written.
    """
    return atomic_torch_save(build_checkpoint(model, src_vocab, tgt_vocab, **extra), path)


def atomic_torch_save(obj, path: str | os.PathLike) -> Path:
    """``torch.save`` to ``path`` so that readers see either the old file or the complete new one.

    The data goes to ``<name>.tmp<random>`` in the same directory (same file system, so the final
    rename is atomic), is flushed and fsync'ed, then renamed over ``path``. On any error the
    temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=path.name + ".tmp", dir=path.parent)
    try:
        os.chmod(tmp_name, _file_mode(path))  # mkstemp makes the file private (0600); use normal permissions
        with os.fdopen(fd, "wb") as handle:
            torch.save(obj, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return path


def _file_mode(path: Path) -> int:
    """The permissions for a new ``path``: those of the file it replaces, else 0666 minus the umask."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def read_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Load and validate a checkpoint dict (``weights_only=True``: tensors and plain types only).

    Raises:
        CheckpointError: missing file, unreadable/corrupt file, or not a course checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises many types for truncated or foreign files
        # One line, and not torch's own text: for pickled objects it advises weights_only=False, i.e. running
        # whatever code the file contains -- advice a course checkpoint never needs.
        # torch words every refusal as "Weights only load failed"; only "Unsupported global" means the file is a
        # real pickle that names code (a class or function) -- anything else is damage or another kind of file.
        kind = ("holds pickled objects, not only tensors and plain types" if "Unsupported global" in str(exc)
                else "truncated, corrupt or not a torch file")
        raise CheckpointError(f"cannot read checkpoint {path}: {kind} ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a course_lib translation checkpoint (format tag missing)")
    if data.get("version") != VERSION:
        raise CheckpointError(f"{path} has checkpoint version {data.get('version')}, this code reads {VERSION}")
    for key in ("model_config", "model_state", "src_itos", "tgt_itos"):
        if key not in data:
            raise CheckpointError(f"{path} lacks {key!r}")
    _check_vocab_sizes(data["model_config"], len(data["src_itos"]), len(data["tgt_itos"]), str(path))
    return data


def _check_vocab_sizes(config: dict, n_src: int, n_tgt: int, where: str) -> None:
    if config.get("src_vocab_size") != n_src or config.get("tgt_vocab_size") != n_tgt:
        raise CheckpointError(
            f"vocabulary/config mismatch in {where}: config says src_vocab_size={config.get('src_vocab_size')}, "
            f"tgt_vocab_size={config.get('tgt_vocab_size')}, but the vocabularies have {n_src} and {n_tgt} tokens"
        )


def config_from_dict(data: dict, where: str = "checkpoint") -> TransformerConfig:
    """A :class:`TransformerConfig` from a saved dict; unknown keys are an error, missing ones take defaults."""
    known = {f.name for f in fields(TransformerConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise CheckpointError(f"{where}: model_config has fields this TransformerConfig does not know: {unknown}")
    return TransformerConfig(**data)


def load_model_state(model: nn.Module, state: dict, where: str = "checkpoint") -> None:
    """Copy weights into ``model``, with a clear error naming every mismatched tensor."""
    model = _unwrap(model)
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    wrong_shape = [
        f"{name}: saved {tuple(state[name].shape)}, model {tuple(own[name].shape)}"
        for name in sorted(set(own) & set(state))
        if state[name].shape != own[name].shape
    ]
    if missing or unexpected or wrong_shape:
        raise CheckpointError(
            f"weights in {where} do not fit the model: missing {missing}, unexpected {unexpected}, "
            f"wrong shape {wrong_shape}"
        )
    model.load_state_dict(state)


# ----- the files a model's supplied parts come from (a --my-parts checkpoint stores them) -----

def _defining_file(obj) -> str | None:
    """The file a function or class was imported from (through its globals, so a later import elsewhere does not
    change the answer)."""
    scope = getattr(obj, "__globals__", None)
    if scope is None and isinstance(obj, type):
        scope = next((v.__globals__ for v in vars(obj).values() if inspect.isfunction(v)), None)
    return scope.get("__file__") if scope else None


def part_sources(parts: Mapping[str, object]) -> dict[str, str]:
    """``{"my_transformer/attention.py": its text, ...}``: the files the supplied parts come from.

    What a ``--my-parts`` checkpoint stores (with :func:`fingerprints` of it), so that the model reloaded later is
    the model that was trained. A part with no file of its own (defined in a notebook cell, in course_lib's
    tests) is left out.
    """
    sources = {}
    for obj in parts.values():
        file = _defining_file(obj)
        if file and Path(file).is_file():
            path = Path(file)
            sources.setdefault(f"{path.parent.name}/{path.name}", path.read_text(encoding="utf-8"))
    return dict(sorted(sources.items()))


def fingerprints(sources: Mapping[str, str]) -> dict[str, str]:
    """``{file: sha256 of its text}``."""
    return {file: hashlib.sha256(text.encode("utf-8")).hexdigest() for file, text in sources.items()}


def changed_parts(recorded: Mapping[str, str], parts: Mapping[str, object]) -> str | None:
    """How the parts' files differ from the ``recorded`` fingerprints, in a few words; None if they are the same."""
    current = fingerprints(part_sources(parts))
    for file, digest in recorded.items():
        if file not in current:
            return f"{file} was part of the model that was trained and is missing now"
        if current[file] != digest:
            return f"{file} changed after the model was trained"
    extra = sorted(set(current) - set(recorded))
    if extra:
        return f"{extra[0]} was saved after the model was trained (the trained model used course_lib's part there)"
    return None


def load_checkpoint(path: str | os.PathLike, device: str | torch.device | None = None, parts: dict | None = None):
    """Rebuild the model and vocabularies saved by :func:`save_checkpoint`.

    Args:
        path: the checkpoint file.
        device: where to put the model (default CPU).
        parts: the parts a model built with ``Transformer(config, parts)`` was trained with (a student's, from
            ``course_lib.student.package.load_my_parts``); a checkpoint of such a model records where they were and
            a fingerprint of each file, and a part changed, missing or added since training is refused.

    Returns:
        ``(model, src_vocab, tgt_vocab, checkpoint_dict)``; the model is in eval mode and the dict
        holds ``training_state``, ``train_config`` and ``metrics``.

    Raises:
        CheckpointError: see :func:`read_checkpoint`, or the weights do not fit the saved config.
    """
    device = torch.device("cpu") if device is None else torch.device(device)
    data = read_checkpoint(path, map_location=device)
    trained_with = (data.get("train_config") or {}).get("my_parts")
    if trained_with and not parts:
        raise CheckpointError(f"{path} was trained with the parts saved in {trained_with}/my_transformer/: load it "
                              f"with them (translate: --my-parts {trained_with}; Python: parts=load_my_parts(...))")
    recorded = (data.get("train_config") or {}).get("my_parts_sha256")
    if trained_with and recorded is not None:  # the parts must be the files the model was trained with
        changed = changed_parts(recorded, parts)
        if changed:
            raise CheckpointError(f"{path}: {changed}, so these parts would build another model; restore it (the "
                                  "checkpoint holds the trained source in train_config['my_parts_source']) or train "
                                  "again")
    model = Transformer(config_from_dict(data["model_config"], str(path)), parts or None).to(device)
    load_model_state(model, data["model_state"], str(path))
    src_vocab = Vocab.from_dict({"itos": data["src_itos"]})
    tgt_vocab = Vocab.from_dict({"itos": data["tgt_itos"]})
    return model.eval(), src_vocab, tgt_vocab, data
