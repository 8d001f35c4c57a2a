"""Line plots: positional waves, generic curves, the learning-rate schedule and training histories.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from course_lib.plotting.base import _clip, _new_axes
from course_lib.plotting.inputs import _as_float, _to_numpy
from course_lib.plotting.style import PALETTE, _ensure_readable

# ----------------------------------------------------------------------------------------------
# Lines: positional waves, generic curves, schedules, training history
# ----------------------------------------------------------------------------------------------


def plot_pe_waves(pe, dims=(0, 1, 4, 5), max_pos=None, title="Positional encoding: one wave per dimension") -> Figure:
    """Selected dimensions of the positional table as curves over positions.

    Even dimensions are sines (solid), odd ones cosines (dashed); a sine/cosine pair shares a
    frequency and therefore a colour.

    Args:
        pe: ``(max_len, d_model)`` (or ``(1, max_len, d_model)``).
        dims: dimensions to draw, each in ``[0, d_model)``.
        max_pos: draw positions ``0 .. max_pos - 1`` (None = all).
        title: figure title.

    Returns:
        The Figure, with legend entries like "dim 0 (sin)", "dim 1 (cos)".
    """
    table = _as_float(pe, "pe", 2, "(max_len, d_model)")
    bad = [d for d in dims if not 0 <= d < table.shape[1]]
    if not dims or bad:
        raise ValueError(f"dims must be dimensions in [0, {table.shape[1]}) (d_model), got {tuple(dims)}")
    table = table[:max_pos] if max_pos is not None else table
    positions = np.arange(table.shape[0])
    pairs = sorted({d // 2 for d in dims})
    fig, ax = _new_axes((10.0, 6.0))
    for d in dims:
        colour = PALETTE[pairs.index(d // 2) % len(PALETTE)]
        kind = "sin" if d % 2 == 0 else "cos"
        ax.plot(
            positions,
            table[:, d],
            color=colour,
            linestyle="-" if kind == "sin" else "--",
            linewidth=2.5,
            label=f"dim {d} ({kind})",
        )
    ax.set(title=title or "", xlabel="position", ylabel="PE value")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return _ensure_readable(fig)


def _series(y, name: str, n: int | None, reference: str = "x") -> np.ndarray:
    a = _to_numpy(y, name).astype(np.float64).ravel()
    if n is not None and a.size != n:
        raise ValueError(f"{name} has {a.size} values but {reference} has {n}")
    return a


_LOG_TICK_STEPS = ((1.0,), (1.0, 3.0), (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0), (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0),
                   (1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0))


def _log_ticks(low: float, high: float, at_least: int = 4, at_most: int = 9) -> np.ndarray | None:
    """Round tick values (1, 2, 3, 5 x a power of ten, or finer) inside [low, high] for a log axis: the coarsest
    set with at least ``at_least`` ticks (thinned to at most ``at_most``); the finest set if none has that many;
    None if fewer than two round values fit."""
    if not (0 < low < high and math.isfinite(high)):
        return None
    ticks = []
    for steps in _LOG_TICK_STEPS:
        ticks = [s * 10.0**k for k in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
                 for s in steps if low <= s * 10.0**k <= high]
        if len(ticks) >= at_least:
            return np.array(ticks[:: -(-len(ticks) // at_most)])  # thin out if there are too many
    return np.array(ticks) if len(ticks) >= 2 else None


def _plain_numbers(axis, ticks=None) -> None:
    """Label a log axis with plain numbers (8, 16, 0.01) instead of powers of ten; optionally at ``ticks``.

    Without ``ticks``, an axis that spans less than a few powers of ten (e.g. a loss between 0.9 and 7,
    where the default log ticks label only "1") gets at least three round ticks such as 1, 2, 3, 5.
    """
    if ticks is None:
        low, high = axis.axes.get_ylim() if axis is axis.axes.yaxis else axis.axes.get_xlim()
        ticks = _log_ticks(min(low, high), max(low, high))
    if ticks is not None:
        axis.set_ticks(np.asarray(ticks, dtype=float))
    axis.set_major_formatter(mpl.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(mpl.ticker.NullFormatter())


def plot_lines(x, ys: Mapping, title=None, xlabel=None, ylabel=None, logy=False, logx=False, markers=None) -> Figure:
    """Line plot of one or more series over a shared x (e.g. gradient norm per layer, max weight vs d_k).

    Args:
        x: ``(n,)`` x values (numbers or category names such as layer names); None = 0 .. n-1.
        ys: ``{name: (n,) values}``; each name becomes a legend entry.
        title, xlabel, ylabel: texts.
        logy, logx: logarithmic axes.
        markers: draw a marker at every point; None = only when there are at most 30 points.

    Returns:
        The Figure.
    """
    if not ys:
        raise ValueError("ys is empty: pass {name: values}")
    xs = None if x is None else _to_numpy(x, "x").ravel()
    n = None if xs is None else xs.size
    series = {name: _series(y, f"ys[{name!r}]", n) for name, y in ys.items()}
    fig, ax = _new_axes()
    for k, (name, y) in enumerate(series.items()):
        xv = np.arange(y.size) if xs is None else xs
        mark = y.size <= 30 if markers is None else markers
        ax.plot(xv, y, marker="o" if mark else None, linewidth=2.5, color=PALETTE[k % len(PALETTE)], label=str(name))
    if logy:
        ax.set_yscale("log")
        _plain_numbers(ax.yaxis)
    if logx:
        ax.set_xscale("log")
        _plain_numbers(ax.xaxis, xs if xs is not None and xs.size <= 12 else None)
    ax.set(title=title or "", xlabel=xlabel or "", ylabel=ylabel or "")
    ax.legend(loc="best")
    return _ensure_readable(fig)


def plot_lr_schedule(steps, lrs, warmup_steps=None, title="Learning-rate schedule") -> Figure:
    """The learning rate per optimizer step, with the end of warm-up marked.

    Args:
        steps: ``(n,)`` step numbers (None = 1 .. n).
        lrs: ``(n,)`` learning rates.
        warmup_steps: where warm-up ends (a dashed line and the peak marked); None for no marker.
        title: figure title.

    Returns:
        The Figure.
    """
    lr = _to_numpy(lrs, "lrs").astype(np.float64).ravel()
    step = np.arange(1, lr.size + 1) if steps is None else _series(steps, "steps", lr.size, "lrs")
    if lr.size == 0:
        raise ValueError("lrs is empty")
    fig, ax = _new_axes((9.0, 5.5))
    ax.plot(step, lr, linewidth=2.5, color=PALETTE[0], label="learning rate")
    if warmup_steps is not None:
        ax.axvline(
            warmup_steps, color="grey", linestyle="--", linewidth=2, label=f"end of warm-up (step {warmup_steps:,})"
        )
        peak = int(np.argmin(np.abs(step - warmup_steps)))
        ax.plot(step[peak], lr[peak], "o", markersize=10, color=PALETTE[3], label=f"peak {lr[peak]:.2e}")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    ax.set(title=title or "", xlabel="step", ylabel="learning rate")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right")
    return _ensure_readable(fig)


_METRIC_TITLES = {"loss": "Loss", "ppl": "Perplexity", "bleu": "BLEU", "acc": "Accuracy", "lr": "Learning rate"}
_SPLITS = ("train", "valid", "test")


def _history_series(history, metric: str, x_key: str) -> dict[str, tuple[list, list]]:
    """``{split: (xs, ys)}`` for the keys ``<split>_<metric>`` (or ``metric`` itself) present in ``history``."""
    series = {}
    for key in [f"{split}_{metric}" for split in _SPLITS] + [metric]:
        xs, ys = [], []
        for i, row in enumerate(history):
            if row.get(key) is not None:
                xs.append(row.get(x_key, i + 1))
                ys.append(float(row[key]))
        if ys:
            series[key.removesuffix(f"_{metric}")] = (xs, ys)
    return series


def plot_history(
    history: Sequence[Mapping], metrics=("loss", "ppl", "bleu"), title="Training history", x_key="epoch", fig=None
) -> Figure:
    """Training curves, one panel per metric (train and valid in each), from a list of per-epoch dicts.

    Args:
        history: e.g. ``[{"epoch": 1, "train_loss": 4.1, "valid_loss": 3.8, "train_ppl": 60.3,
            "valid_ppl": 44.7, "valid_bleu": 3.2}, ...]``. Missing keys and None values are skipped;
            metrics absent from every entry get no panel. Values may be floats or 0-d tensors.
        metrics: metric suffixes to draw; panel for ``"m"`` shows ``train_m``, ``valid_m``, ``test_m`` (or ``m``).
        title: figure title.
        x_key: the key holding the x value (entries without it use their 1-based index).
        fig: redraw into this Figure (it is cleared) instead of creating one; for interactive
            backends (``%matplotlib widget``). With the default inline backend, redraw a new figure::

                for epoch in range(1, n_epochs + 1):
                    history.append(train_one_epoch(...))
                    clear_output(wait=True)
                    plot_history(history)
                    plt.show()

    Returns:
        The Figure. Perplexity panels use a log scale when values span more than a factor 20.
    """
    panels = {m: s for m in metrics if (s := _history_series(history, m, x_key))}
    n = max(len(panels), 1)
    if fig is None:
        fig = plt.figure(figsize=(_clip(5.5 * n + 0.5, 8.0, 18.0), 5.2), layout="constrained")
    else:
        fig.clear()
        fig.set_layout_engine("constrained")
    axes = np.atleast_1d(fig.subplots(1, n))
    if not panels:
        message = "no epochs yet" if len(history) == 0 else f"no values for {', '.join(metrics)} in history"
        axes[0].text(0.5, 0.5, message, ha="center", va="center", transform=axes[0].transAxes, fontsize=16)
        axes[0].set_axis_off()
    for ax, (metric, series) in zip(axes, panels.items(), strict=False):
        _draw_history_panel(ax, metric, series, x_key)
    if title:
        fig.suptitle(title)
    return _ensure_readable(fig)


def _draw_history_panel(ax: Axes, metric: str, series: dict, x_key: str) -> None:
    colours = {"train": PALETTE[0], "valid": PALETTE[1], "test": PALETTE[2]}
    for split, (xs, ys) in series.items():
        ax.plot(
            xs,
            ys,
            marker="o",
            linewidth=2.5,
            color=colours.get(split, PALETTE[4]),
            linestyle="--" if split == "valid" else "-",
            label=split,
        )
    values = np.concatenate([ys for _, ys in series.values()])
    if metric == "ppl" and values.min() > 0 and values.max() / values.min() > 20:
        ax.set_yscale("log")
        _plain_numbers(ax.yaxis)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(title=_METRIC_TITLES.get(metric, metric), xlabel=x_key)
    ax.legend(loc="best")
