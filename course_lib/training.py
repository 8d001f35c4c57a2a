"""The training loop shared by the notebooks, the command line (``python -m course_lib.train``) and
the benchmark.

Recipe (the paper's, sized for a CPU): label-smoothed cross-entropy that ignores padding
(:mod:`course_lib.losses`), Adam with betas (0.9, 0.98) and eps 1e-9 under the warm-up schedule
(:mod:`course_lib.schedule`), gradient-norm clipping, and a validation pass after every epoch.
One addition: by default the model that is validated, kept and returned holds an exponential moving
average of the trained weights (:class:`WeightAverage`, a cheap cousin of the paper's checkpoint
averaging); on the toy corpus it reached BLEU 99 at 120 s where the last weights reached 97.

:func:`train` returns a *history*: one dict per epoch with ``epoch, step, train_loss, valid_loss,
train_ppl, valid_ppl, valid_accuracy, lr, tokens, seconds, wall_seconds`` (``valid_bleu`` and
``valid_bleu_lc`` too when a :class:`BleuCallback` is given), ready for plotting. Callbacks let a notebook draw live without
copying the loop. Other features: a time budget checked before every step, step/epoch limits,
keeping the best epoch's weights (the lowest validation loss by default; the highest validation BLEU or
the last epoch: ``TrainConfig.select_by``, :func:`choose_epoch`) and last checkpoints, resuming, seeding (same seed, same machine -> bit-identical weights)
and DistributedDataParallel when launched with ``torchrun`` (see :mod:`course_lib.distributed`).

Clock: ``seconds`` (and the time budget) count the time spent training -- loading batches,
forward, backward, optimizer -- but not the validation passes or callbacks, so drawing plots or
computing BLEU in a notebook does not eat the budget. ``wall_seconds`` is the plain wall clock.

Defaults (``TrainConfig`` and ``TransformerConfig``) were tuned on a 2-core CPU with one thread:
the default model reaches test BLEU >= 97 well within 2 minutes (numbers in
``data/checkpoints/README.md`` and ``benchmarks/time_to_bleu.py``).

Checked in ``tests/test_training.py``: a tiny model learns a copy task and greedy decoding then
copies unseen sequences; reproducibility; time budget; callbacks; weight averaging; the command
line. ``tests/test_checkpoint.py``: resuming equals uninterrupted training.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from . import distributed
from .checkpoint import atomic_torch_save, build_checkpoint, load_model_state, read_checkpoint
from .devices import autocast, autocast_dtype, get_device, model_device
from .losses import LabelSmoothingLoss, LossStats
from .schedule import make_noam_scheduler, make_optimizer
from .tokenization import Vocab
from .utils import configure_threads, seed_everything


@dataclass
class TrainConfig:
    """Every training setting. Defaults: the course recipe, tuned on a 2-core laptop CPU (see the benchmark)."""

    epochs: int = 100  # most passes over the training data (a time budget or max_steps usually stops first)
    max_steps: int | None = None  # stop after this many optimizer updates
    time_budget: float | None = None  # stop after this many seconds of training (checked before every step)
    warmup_steps: int = 200  # learning-rate warm-up (schedule peak) in optimizer steps
    lr_factor: float = 1.0  # multiplier of the warm-up schedule; peak lr = factor * (d_model * warmup)^-0.5
    lr_decay: str = "inverse_sqrt"  # after the warm-up: "inverse_sqrt" (Noam) or "linear" (to 0 at the last planned step)
    label_smoothing: float = 0.1  # probability mass spread over the whole vocabulary
    clip_grad_norm: float | None = 1.0  # clip the global gradient norm (None: no clipping)
    weight_decay: float = 0.0  # Adam L2 penalty
    ema_decay: float | None = 0.99  # evaluate/keep an exponential moving average of the weights (None: off)
    batch_size: int = 128  # sentences per batch (used to build the loaders in the CLI and benchmark, not by train())
    batch_tokens: int | None = None  # target tokens per batch when batching by tokens (None: by batch_size sentences); recorded in checkpoints
    seed: int = 0  # seeds initialisation, shuffling and dropout
    num_threads: int | None = None  # torch CPU threads; None = COURSE_NUM_THREADS or 1 (see utils.configure_threads)
    device: str | None = None  # "cpu", "cuda", "mps", ...; None = $COURSE_DEVICE, else CUDA, MPS or the CPU
    precision: str = "auto"  # "auto": mixed precision on CUDA (bf16; fp16 + gradient scaler on older cards), fp32 elsewhere; or "fp32", "bf16", "fp16"
    best_checkpoint: str | None = None  # write the kept weights (the epoch select_by chooses) here, with training state
    last_checkpoint: str | None = None  # write the latest state here after every epoch (for resuming)
    restore_best: bool = True  # at the end, load the kept weights (the epoch select_by chooses) into the model
    progress: bool = True  # show a tqdm progress bar
    clock: str = "wall"  # "wall" (real time) or "process" (this process's CPU time: steadier on a busy 1-thread run)
    # which epoch's weights are kept: "loss" (lowest validation loss), "bleu" (highest validation BLEU, scored by a
    # BleuCallback) or "last" (see choose_epoch); left out of the repr so configs printed before it existed read the same
    select_by: str = field(default="loss", repr=False)

    def to_dict(self) -> dict:
        return asdict(self)


class Callback:
    """Hooks into :func:`train`. Override what you need; return True from a hook to stop training.

    ``on_step_end(info)`` gets ``{"step", "epoch", "loss", "lr", "tokens", "seconds"}`` after every update
    (``loss`` is this batch's mean label-smoothed loss). ``on_epoch_end(history)`` gets the whole history
    list after the epoch's entry was appended (a hook may add keys to ``history[-1]``).
    """

    def on_train_begin(self, model: nn.Module) -> bool | None:
        return None

    def on_step_end(self, info: dict) -> bool | None:
        return None

    def on_epoch_end(self, history: list[dict]) -> bool | None:
        return None

    def on_train_end(self, history: list[dict]) -> None:
        return None


class LambdaCallback(Callback):
    """A callback from plain functions, e.g. ``LambdaCallback(on_epoch_end=lambda h: plot(h))``."""

    def __init__(self, on_step_end=None, on_epoch_end=None, on_train_end=None):
        self._step, self._epoch, self._end = on_step_end, on_epoch_end, on_train_end

    def on_step_end(self, info):
        return self._step(info) if self._step else None

    def on_epoch_end(self, history):
        return self._epoch(history) if self._epoch else None

    def on_train_end(self, history):
        return self._end(history) if self._end else None


class BleuCallback(Callback):
    """Add validation BLEU to the history every ``every`` epochs: greedy decoding, sacreBLEU on the detokenized
    output (:func:`course_lib.evaluation.evaluate_translation`), cased as ``valid_bleu`` and lower-cased as
    ``valid_bleu_lc``, the figure ``benchmarks/real_data.py`` reports as ``bleu_lc`` and the one
    ``TrainConfig(select_by="bleu")`` keeps the best epoch of (:func:`choose_epoch`).

    Args:
        model: the model being trained (the one :func:`train` validates: with weight averaging, the average).
        src_token_lists: the validation sources as token lists (words or BPE pieces, as trained).
        tgt_token_lists: their references: raw sentences, scored as they are (the command line passes the
            reference file's lines, as the benchmark does), or token lists, detokenized first.
        src_vocab, tgt_vocab: the vocabularies.
        every: epochs between evaluations (epochs ``every``, ``2 * every``, ...; 1 = every epoch).
    """

    def __init__(self, model, src_token_lists, tgt_token_lists, src_vocab, tgt_vocab, every: int = 1):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive whole number of epochs, got {every!r}")
        self.model, self.every = model, every
        self.data = (src_token_lists, tgt_token_lists, src_vocab, tgt_vocab)

    def on_epoch_end(self, history):
        if history[-1]["epoch"] % self.every == 0:
            from .evaluation import evaluate_translation

            scores = evaluate_translation(self.model, *self.data)  # greedy
            history[-1].update(valid_bleu=scores.bleu, valid_bleu_lc=scores.bleu_lc)
        return None


# ----- which epoch's weights are kept (one rule: the loop, the command line and benchmarks/report.py) -----

SELECT_BY = ("loss", "bleu", "last")  # the values of TrainConfig.select_by (the command line's --keep)


def selection_score(entry: dict, select_by: str) -> float | None:
    """How good the epoch of one history ``entry`` is under ``select_by``; higher is better, None: not scored.

    Args:
        entry: one history dict (see the module docstring).
        select_by: ``"loss"``: minus the validation loss (the training loss when there was no validation
            loader); ``"bleu"``: the lower-cased validation BLEU a :class:`BleuCallback` wrote
            (``valid_bleu_lc``; None in epochs it skipped); ``"last"``: the epoch number.
    """
    if select_by == "loss":
        score = -entry.get("valid_loss", entry["train_loss"])
    elif select_by == "bleu":
        score = entry.get("valid_bleu_lc")
    elif select_by == "last":
        score = entry["epoch"]
    else:
        raise ValueError(f"select_by must be one of {', '.join(map(repr, SELECT_BY))}, got {select_by!r}")
    return None if score is None or math.isnan(score) else float(score)


def choose_epoch(history: Sequence[dict], select_by: str) -> dict | None:
    """The history entry whose weights ``select_by`` keeps: the best :func:`selection_score`, the earliest
    on a tie; None when no epoch was scored.

    Args:
        history: the history of :func:`train` (or rows shaped like it: ``epoch`` and the scored key).
        select_by: ``"loss"``, ``"bleu"`` or ``"last"`` (see :func:`selection_score`).
    """
    scored = [(score, entry) for entry in history if (score := selection_score(entry, select_by)) is not None]
    if not scored:
        return None
    best = max(score for score, _ in scored)
    return next(entry for score, entry in scored if score == best)


def describe_choice(history: Sequence[dict], select_by: str) -> str:
    """One line for a log: which epoch's weights ``select_by`` keeps and why, with what the other rules would keep.

    Args:
        history: the history of :func:`train`.
        select_by: ``"loss"``, ``"bleu"`` or ``"last"``.
    """
    if not history:
        return "no epoch finished: nothing to choose from"
    kept = choose_epoch(history, select_by)
    n = history[-1]["epoch"]
    loss_name = "validation loss" if "valid_loss" in history[-1] else "training loss"
    by_loss, by_bleu = choose_epoch(history, "loss"), choose_epoch(history, "bleu")
    scored = sum(selection_score(entry, "bleu") is not None for entry in history)
    if kept is None:  # "bleu" with no scored epoch
        return f"kept the last weights (epoch {n}): no epoch had a validation BLEU score"
    if select_by == "loss":
        reason = f"the lowest {loss_name} ({-selection_score(kept, 'loss'):.3f})"
    elif select_by == "bleu":
        reason = (f"the highest validation BLEU ({kept['valid_bleu_lc']:.2f} lower-cased, greedy; scored after "
                  f"{scored} of {n} epochs)")
    else:
        reason = "the last epoch"
    others = []
    if select_by != "loss" and by_loss is not None and by_loss is not kept:
        others.append(f"the lowest {loss_name} was epoch {by_loss['epoch']}'s ({by_loss.get('valid_loss', by_loss['train_loss']):.3f})")
    if select_by != "bleu" and by_bleu is not None and by_bleu is not kept:
        others.append(f"the highest validation BLEU was epoch {by_bleu['epoch']}'s ({by_bleu['valid_bleu_lc']:.2f})")
    return f"kept epoch {kept['epoch']} of {n}: {reason}" + "".join(f"; {o}" for o in others)


def _check_selection(config: TrainConfig, callbacks: Sequence[Callback]) -> None:
    """Fail before training when ``config.select_by`` is unknown or nothing would score it."""
    if config.select_by not in SELECT_BY:
        raise ValueError(f"select_by must be one of {', '.join(map(repr, SELECT_BY))}, got {config.select_by!r}")
    if config.select_by == "bleu" and not any(isinstance(cb, BleuCallback) for cb in callbacks):
        raise ValueError("select_by='bleu' needs a BleuCallback among the callbacks: it scores validation BLEU")


def _saved_epoch(checkpoint: dict) -> int | None:
    """The epoch whose weights a checkpoint written during training holds (None if it does not say)."""
    history = (checkpoint.get("training_state") or {}).get("history") or []
    return history[-1]["epoch"] if history else (checkpoint.get("metrics") or {}).get("epoch")


def _move(batch: Sequence[torch.Tensor], device: torch.device) -> tuple[torch.Tensor, ...]:
    """(src, tgt_in, tgt_out) to ``device``."""
    if len(batch) != 3:
        raise ValueError(f"a batch must be (src, tgt_in, tgt_out), got {len(batch)} items")
    return tuple(t.to(device, non_blocking=True) for t in batch)


@torch.no_grad()
def evaluate_loss(model: nn.Module, loader: Iterable, criterion: LabelSmoothingLoss, device=None) -> LossStats:
    """Label-smoothed loss, NLL and token accuracy over a whole loader (eval mode, no gradients).

    Args:
        model: the translation model.
        loader: yields ``(src, tgt_in, tgt_out)`` batches ``(batch, src_len)``, ``(batch, tgt_len)`` x2.
        criterion: the loss (its ``pad_id`` marks ignored targets).
        device: where to run; default the model's device (the loader's batches may be anywhere).
    """
    device = model_device(model) if device is None else device
    was_training = model.training
    model.eval()
    total = LossStats()
    for batch in loader:
        src, tgt_in, tgt_out = _move(batch, device)
        _, stats = criterion.stats(model(src, tgt_in), tgt_out)
        total += stats
    model.train(was_training)
    return total


def _perplexity(nll: float) -> float:
    return math.exp(min(nll, 50.0))  # capped so a diverged run prints a huge number, not an overflow


def capture_rng_state() -> dict:
    """Every random generator's state as tensors and plain types (storable with ``weights_only``)."""
    np_state = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": [np_state[0], torch.from_numpy(np_state[1].astype(np.int64)), *np_state[2:]],
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict) -> None:
    """Inverse of :func:`capture_rng_state`."""
    torch.set_rng_state(state["torch"].cpu())
    random.setstate(_as_tuple(state["python"]))
    name, keys, *rest = state["numpy"]
    np.random.set_state((name, keys.cpu().numpy().astype(np.uint32), *rest))  # cpu(): a checkpoint may load onto a GPU
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def _clock(name: str):
    """The function that reads the training clock (see ``TrainConfig.clock``)."""
    clocks = {"wall": time.perf_counter, "process": time.process_time}
    if name not in clocks:
        raise ValueError(f"clock must be 'wall' or 'process', got {name!r}")
    return clocks[name]


def _on_cpu(value):
    """``value`` (tensors inside dicts, lists and tuples) with every tensor copied to the CPU."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _on_cpu(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_on_cpu(item) for item in value)
    return value


def _cpu_state(model: nn.Module) -> dict:
    return {name: tensor.detach().cpu().clone() for name, tensor in model.state_dict().items()}


def _as_tuple(value):
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list | tuple) else value


class WeightAverage:
    """Exponential moving average (Polyak averaging) of the weights being trained.

    After every optimizer step ``average = d * average + (1 - d) * weights`` with
    ``d = min(decay, (1 + t) / (10 + t))`` at update ``t`` (small at first, so the average does not
    stay stuck near the random initial weights). The average of the last few hundred steps is
    smoother and usually better than the last weights, whose noise the learning rate keeps high.

    Args:
        averaged: the model that holds the average (its parameters are overwritten, never trained).
        decay: the long-run decay ``d``, e.g. 0.99 (averages about the last 100 steps).
    """

    def __init__(self, averaged: nn.Module, decay: float):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"ema_decay must be in (0, 1), got {decay}")
        self.averaged, self.decay, self.updates = averaged, decay, 0

    @torch.no_grad()
    def update(self, trained: nn.Module) -> None:
        self.updates += 1
        d = min(self.decay, (1 + self.updates) / (10 + self.updates))
        averages, currents = list(self.averaged.parameters()), [p.detach() for p in trained.parameters()]
        if len(averages) != len(currents):
            raise ValueError(f"the averaged model has {len(averages)} parameters, the trained one {len(currents)}")
        # average += (1 - d) * (current - average), for all tensors in one call (one loop in C++, not in Python)
        torch._foreach_lerp_(averages, currents, 1.0 - d)


class _Trainer:
    """The state of one :func:`train` call, split into small steps (read :func:`train` first).

    ``self.model`` is the caller's model: what is validated, kept, saved and returned. With weight
    averaging on, the optimizer trains a private copy ``self.trained`` and ``self.model`` holds the
    average of its weights; otherwise both names refer to the same model.
    """

    def __init__(self, model, train_loader, valid_loader, config, callbacks, src_vocab, tgt_vocab):
        self.config = config
        self.device = get_device(config.device)
        self.model = model.to(self.device)
        self.autocast = autocast_dtype(self.device, config.precision)  # None: plain float32
        # float16 needs its gradients scaled (they underflow otherwise); bfloat16 has float32's range and does not
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.autocast == torch.float16)
        self.trained = copy.deepcopy(self.model) if config.ema_decay else self.model
        self.average = WeightAverage(self.model, config.ema_decay) if config.ema_decay else None
        self.step_model = distributed.wrap_model(self.trained, self.device)  # DDP wrapper or the model itself
        self.train_loader, self.valid_loader = train_loader, valid_loader
        self.callbacks = list(callbacks)
        self.step_callbacks = [cb for cb in self.callbacks if type(cb).on_step_end is not Callback.on_step_end]
        self.vocabs = (src_vocab, tgt_vocab)
        self.criterion = LabelSmoothingLoss(config.label_smoothing, model.config.pad_id)
        self.optimizer = make_optimizer(self.trained.parameters(), config.weight_decay)
        self.scheduler = make_noam_scheduler(self.optimizer, model.config.d_model, config.warmup_steps, config.lr_factor,
                                             _decay_end(config, train_loader))
        self.step, self.epoch, self.history = 0, 0, []
        _check_selection(config, self.callbacks)
        self.best_valid_loss, self.best_epoch, self.best_state = math.inf, None, None  # lowest loss; the kept epoch
        self.train_seconds = 0.0
        self.main = distributed.is_main_process()
        self.clock = _clock(config.clock)

    # ----- checkpoints and resuming -----
    def training_state(self) -> dict:
        return {
            "optimizer": _on_cpu(self.optimizer.state_dict()),  # a checkpoint from a GPU loads on any machine
            "grad_scaler": self.scaler.state_dict() if self.scaler.is_enabled() else None,
            "scheduler": self.scheduler.state_dict(),
            "step": self.step,
            "epoch": self.epoch,
            "history": copy.deepcopy(self.history),
            "best_valid_loss": self.best_valid_loss,
            "best_epoch": self.best_epoch,
            "train_seconds": self.train_seconds,
            "rng": capture_rng_state(),
            "trained_weights": None if self.average is None else _cpu_state(self.trained),
            "average_updates": 0 if self.average is None else self.average.updates,
        }

    def save(self, path: str | None) -> None:
        if path is None or not self.main:
            return
        src_vocab, tgt_vocab = self.vocabs
        if src_vocab is None or tgt_vocab is None:
            raise ValueError("saving a checkpoint needs src_vocab and tgt_vocab: pass them to train()")
        checkpoint = build_checkpoint(
            self.model, src_vocab, tgt_vocab, self.training_state(), self.config.to_dict(), self.history[-1]
        )
        atomic_torch_save(checkpoint, path)

    def resume(self, path: str) -> None:
        data = read_checkpoint(path, map_location=self.device)
        state = data.get("training_state")
        if not state:
            raise ValueError(f"{path} holds no training state (saved without optimizer/scheduler); cannot resume")
        load_model_state(self.model, data["model_state"], str(path))
        if self.average is not None:
            if state.get("trained_weights") is None:
                raise ValueError(f"{path} was trained without weight averaging; resume with ema_decay=None")
            load_model_state(self.trained, state["trained_weights"], str(path))
            self.average.updates = state["average_updates"]
        elif state.get("trained_weights") is not None:
            raise ValueError(f"{path} was trained with weight averaging; resume with the same ema_decay")
        self.optimizer.load_state_dict(state["optimizer"])  # moves the state to the parameters' device
        if self.scaler.is_enabled() and state.get("grad_scaler"):
            self.scaler.load_state_dict(state["grad_scaler"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.epoch = state["step"], state["epoch"]
        self.history = list(state["history"])
        self.best_valid_loss = state["best_valid_loss"]
        self.train_seconds = state["train_seconds"]
        restore_rng_state(state["rng"])
        kept = choose_epoch(self.history, self.config.select_by)  # this run's rule over the epochs so far
        self.best_epoch = None if kept is None else kept["epoch"]
        if kept is not None and kept is self.history[-1]:  # resuming from the kept epoch itself
            self.best_state = copy.deepcopy(self.model.state_dict())
        elif kept is not None and self.config.best_checkpoint:
            try:
                saved = read_checkpoint(self.config.best_checkpoint, map_location=self.device)
            except Exception:  # no usable best file: the best so far is unknown, keep the final weights
                saved = None
            if saved is not None and _saved_epoch(saved) in (None, kept["epoch"]):  # None: written before it said
                self.best_state = saved["model_state"]

    # ----- the loop -----
    def out_of_budget(self) -> bool:
        config = self.config
        over_steps = config.max_steps is not None and self.step >= config.max_steps
        over_time = config.time_budget is not None and self.train_seconds >= config.time_budget
        return distributed.any_process(over_steps or over_time, self.device)

    def train_step(self, batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One optimizer update; returns the batch's summed loss, summed NLL (detached) and target token count."""
        src, tgt_in, tgt_out = _move(batch, self.device)
        with autocast(self.device, self.autocast):
            logits = self.step_model(src, tgt_in)  # (batch, tgt_len, vocab), in self.autocast's dtype
        loss_sum, nll_sum, n_tokens = self.criterion.sums(logits.float(), tgt_out)  # the loss in float32
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss_sum / n_tokens.clamp(min=1)).backward()  # scale(): identity unless float16
        if self.config.clip_grad_norm is not None:
            self.scaler.unscale_(self.optimizer)  # clip the true gradients, not the scaled ones
            nn.utils.clip_grad_norm_(self.trained.parameters(), self.config.clip_grad_norm)
        self.scaler.step(self.optimizer)  # plain optimizer.step() unless float16 (then skipped on inf/NaN)
        self.scaler.update()
        self.scheduler.step()
        if self.average is not None:
            self.average.update(self.trained)
        self.step += 1
        return loss_sum.detach(), nll_sum.detach(), n_tokens

    def run_epoch(self, bar) -> tuple[LossStats, bool]:
        """Train on one pass over the data (or until stopped). Returns the epoch's stats and whether to stop."""
        self.trained.train()
        sums = torch.zeros(3, dtype=torch.float64, device=self.device)  # loss_sum, nll_sum, n_tokens
        stop = False
        started = self.clock()
        for batch in self.train_loader:
            self.train_seconds += self.clock() - started
            if self.out_of_budget():
                stop = True
                break
            started = self.clock()
            loss_sum, nll_sum, n_tokens = self.train_step(batch)
            sums += torch.stack([loss_sum.double(), nll_sum.double(), n_tokens.double()])
            self.train_seconds += self.clock() - started
            stop = self.after_step(bar, loss_sum / n_tokens.clamp(min=1), n_tokens)
            started = self.clock()
            if stop:
                break
        else:
            self.train_seconds += self.clock() - started
        loss_sum, nll_sum, n_tokens = distributed.sum_over_processes(sums.tolist(), self.device)
        return LossStats(loss_sum, nll_sum, int(n_tokens)), stop

    def after_step(self, bar, loss: torch.Tensor, n_tokens: torch.Tensor) -> bool:
        """Progress bar and step callbacks. ``loss`` and ``n_tokens`` stay on the device: reading them waits for
        the GPU to finish the step, so that happens only every 10th step (bar) or when a callback asks."""
        if bar is not None:
            bar.update(1)
            if self.step % 10 == 0:
                bar.set_postfix(epoch=self.epoch, loss=f"{float(loss):.3f}", refresh=False)
        if not self.step_callbacks:
            return False
        info = {
            "step": self.step,
            "epoch": self.epoch,
            "loss": float(loss),
            "lr": self.scheduler.get_last_lr()[0],
            "tokens": int(n_tokens),
            "seconds": self.train_seconds,
        }
        wants_stop = any([bool(cb.on_step_end(info)) for cb in self.step_callbacks])
        return distributed.any_process(wants_stop, self.device) if distributed.is_distributed() else wants_stop

    def keep_if_chosen(self) -> None:
        """Keep this epoch's weights (and write ``best_checkpoint``) if ``config.select_by`` chooses it so far."""
        entry = self.history[-1]
        self.best_valid_loss = min(self.best_valid_loss, entry.get("valid_loss", entry["train_loss"]))
        if choose_epoch(self.history, self.config.select_by) is entry:
            self.best_epoch = entry["epoch"]
            self.best_state = copy.deepcopy(self.model.state_dict())
            self.save(self.config.best_checkpoint)

    def end_epoch(self, train_stats: LossStats, wall_start: float) -> bool:
        """Validate, record the history entry, run the callbacks, keep the weights if ``select_by`` chooses them."""
        entry = {"epoch": self.epoch, "step": self.step, "train_loss": train_stats.loss,
                 "train_ppl": _perplexity(train_stats.nll)}
        # Validation must not move the training's random numbers (dropout): iterating a DataLoader draws a seed
        # from the global generator, so without this a run that validates, or scores BLEU, would train other
        # weights than the same run without (or than benchmarks/real_data.py, which validates outside train).
        training_rng = capture_rng_state()
        try:
            if self.valid_loader is not None:
                valid = evaluate_loss(self.model, self.valid_loader, self.criterion, self.device)
                entry.update(valid_loss=valid.loss, valid_ppl=_perplexity(valid.nll), valid_accuracy=valid.accuracy)
            entry.update(lr=self.scheduler.get_last_lr()[0], tokens=train_stats.n_tokens,
                         seconds=self.train_seconds, wall_seconds=wall_start + time.perf_counter())
            self.history.append(entry)
            wants_stop = any([bool(cb.on_epoch_end(self.history)) for cb in self.callbacks])  # BleuCallback scores here
        finally:
            restore_rng_state(training_rng)
        self.keep_if_chosen()
        self.save(self.config.last_checkpoint)
        return distributed.any_process(wants_stop, self.device) if distributed.is_distributed() else wants_stop


def planned_steps(config: TrainConfig, steps_per_epoch: int | None) -> int | None:
    """Optimizer updates the run will make if no time budget stops it: ``min(epochs * steps_per_epoch,
    max_steps)`` (None when neither bound is known)."""
    planned = None if steps_per_epoch is None else config.epochs * steps_per_epoch
    if config.max_steps is not None:
        planned = config.max_steps if planned is None else min(planned, config.max_steps)
    return planned


def _decay_end(config: TrainConfig, train_loader) -> int | None:
    """The step where a ``"linear"`` decay reaches 0 (None for ``"inverse_sqrt"``)."""
    if config.lr_decay == "inverse_sqrt":
        return None
    if config.lr_decay != "linear":
        raise ValueError(f"lr_decay must be 'inverse_sqrt' or 'linear', got {config.lr_decay!r}")
    total = planned_steps(config, len(train_loader) if hasattr(train_loader, "__len__") else None)
    if total is None:
        raise ValueError("lr_decay='linear' needs the run's length: a train_loader with len() or max_steps")
    if total <= config.warmup_steps:
        raise ValueError(f"lr_decay='linear' needs more planned steps ({total}) than warmup_steps "
                         f"({config.warmup_steps})")
    return total


def _progress_bar(config: TrainConfig, steps_per_epoch: int | None, start_step: int):
    if not config.progress or not distributed.is_main_process():
        return None
    from tqdm.auto import tqdm

    total = None if config.time_budget is not None else planned_steps(config, steps_per_epoch)
    return tqdm(total=total, initial=start_step, desc="training", unit="step", dynamic_ncols=True)


def train(
    model: nn.Module,
    train_loader: Iterable,
    valid_loader: Iterable | None = None,
    config: TrainConfig | None = None,
    callbacks: Sequence[Callback] = (),
    src_vocab: Vocab | None = None,
    tgt_vocab: Vocab | None = None,
    resume_from: str | None = None,
) -> list[dict]:
    """Train a translation model; returns the per-epoch history (also stored in checkpoints).

    Args:
        model: a course ``Transformer`` (moved to the chosen device; trained in place).
        train_loader: yields ``(src, tgt_in, tgt_out)`` batches, shapes ``(batch, src_len)``,
            ``(batch, tgt_len)``, ``(batch, tgt_len)``; its batch sampler's ``set_epoch(epoch)`` is
            called before each epoch if it has one.
        valid_loader: batches like ``train_loader``, evaluated after every epoch (or None).
        config: a :class:`TrainConfig` (default settings if None).
        callbacks: :class:`Callback` objects, called in order.
        src_vocab, tgt_vocab: stored in checkpoints (needed when a checkpoint path is set).
        resume_from: a checkpoint with training state to continue from (weights, optimizer,
            scheduler, step, epoch, history and random state are restored).

    Returns:
        The history: one dict per epoch (see the module docstring).
    """
    history: list[dict] = []
    for epochs_so_far in train_epochs(model, train_loader, valid_loader, config, callbacks, src_vocab, tgt_vocab,
                                      resume_from):
        history = epochs_so_far
    return history


def train_epochs(
    model: nn.Module,
    train_loader: Iterable,
    valid_loader: Iterable | None = None,
    config: TrainConfig | None = None,
    callbacks: Sequence[Callback] = (),
    src_vocab: Vocab | None = None,
    tgt_vocab: Vocab | None = None,
    resume_from: str | None = None,
) -> Iterator[list[dict]]:
    """:func:`train`, one epoch at a time: a generator that yields the history after every epoch.

    Lets a caller interleave two trainings epoch by epoch (``benchmarks/real_data.py``). The last
    value yielded is what :func:`train` returns (the best weights are restored, if configured, after
    the last epoch and before that final yield). Arguments: see :func:`train`.
    """
    config = TrainConfig() if config is None else config
    configure_threads(config.num_threads)
    seed_everything(config.seed)
    trainer = _Trainer(model, train_loader, valid_loader, config, callbacks, src_vocab, tgt_vocab)
    if resume_from is not None:
        trainer.resume(resume_from)
    for cb in trainer.callbacks:
        cb.on_train_begin(model)
    batch_sampler = getattr(train_loader, "batch_sampler", None)
    steps_per_epoch = len(train_loader) if hasattr(train_loader, "__len__") else None
    bar = _progress_bar(config, steps_per_epoch, trainer.step)
    wall_start = -time.perf_counter()
    try:
        while trainer.epoch < config.epochs and not trainer.out_of_budget():
            trainer.epoch += 1
            if hasattr(batch_sampler, "set_epoch"):
                batch_sampler.set_epoch(trainer.epoch)
            stats, stop = trainer.run_epoch(bar)
            if stats.n_tokens == 0:  # stopped before the first step of this epoch: nothing to record
                trainer.epoch -= 1
                break
            if trainer.end_epoch(stats, wall_start) or stop:
                break
            if trainer.epoch < config.epochs and not trainer.out_of_budget():
                yield trainer.history
    finally:
        if bar is not None:
            bar.close()
    if config.restore_best and trainer.best_state is not None:
        trainer.model.load_state_dict(trainer.best_state)
    for cb in trainer.callbacks:
        cb.on_train_end(trainer.history)
    yield trainer.history
