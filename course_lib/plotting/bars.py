"""Bar charts and small matrices: label smoothing, parameter counts, generic comparisons, one-hot
versus dense embeddings.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap, Normalize
from matplotlib.figure import Figure

from course_lib.plotting.base import _clip, _cmap, _colorbar, _draw_heatmap, _label_x, _longest, _new_axes
from course_lib.plotting.heatmaps import plot_heatmap
from course_lib.plotting.inputs import _as_float, _labels, _to_numpy
from course_lib.plotting.style import DIVERGING_CMAP, FONT_SIZES, MASK_COLORS, PALETTE, _ensure_readable

# ----------------------------------------------------------------------------------------------
# Bars: label smoothing, parameter counts, generic comparisons
# ----------------------------------------------------------------------------------------------


def _format_number(v: float, fmt: str | None = None) -> str:
    if fmt is not None:
        if fmt.endswith(("d", "n")) and float(v).is_integer():  # integer formats need an int, not 3.0
            v = int(v)
        return format(v, fmt)
    if float(v).is_integer() and abs(v) >= 1:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.2f}" if abs(v) >= 1 else f"{v:.3f}"


def plot_label_smoothing(target_distribution, tokens=None, row_labels=None, title="Label-smoothed targets") -> Figure:
    """The smoothed target distribution: bars for one token, a heatmap for several.

    Args:
        target_distribution: ``(vocab,)`` one distribution, or ``(n, vocab)`` one row per target token,
            e.g. ``course_lib.losses.smoothed_target_distribution(target, K, 0.1)``.
        tokens: ``vocab`` token strings for the vocabulary axis (None shows ids).
        row_labels: ``n`` labels for the rows of a 2-D input (e.g. the true target tokens).
        title: figure title.

    Returns:
        The Figure.
    """
    ndim = 2 if _to_numpy(target_distribution, "target_distribution").ndim >= 2 else 1
    dist = _as_float(target_distribution, "target_distribution", ndim, "(vocab,) or (n, vocab)")
    tokens = _labels(
        tokens, dist.shape[-1], "tokens", "target_distribution", "entries in its last (vocabulary) dimension"
    )
    if dist.ndim == 2:
        row_labels = _labels(row_labels, dist.shape[0], "row_labels", "target_distribution", "rows")
        return plot_heatmap(
            dist,
            tokens,
            row_labels,
            title=title,
            xlabel="vocabulary token",
            ylabel="target",
            vmin=0.0,
            vmax=1.0,
            annotate=None,
            colorbar_label="target probability",
        )
    fig, ax = _new_axes((_clip(0.55 * dist.size + 2.5, 7.0, 16.0), 5.5))
    top = int(np.argmax(dist))
    colours = [MASK_COLORS[1] if i == top else "#9ecae1" for i in range(dist.size)]
    x = np.arange(dist.size)
    ax.bar(x, dist, color=colours, edgecolor="white")
    if dist.size <= 20:
        for xi, v in zip(x, dist, strict=True):
            ax.text(xi, v + 0.01, f"{v:.3f}", ha="center", va="bottom", fontsize=FONT_SIZES["annotation"])
    if tokens is not None:
        _label_x(ax, tokens)
    ax.set_ylim(0, max(1.0, dist.max()) * 1.08)
    ax.set(title=title or "", xlabel="vocabulary token", ylabel="target probability")
    ax.grid(axis="x", visible=False)
    return _ensure_readable(fig)


def plot_parameter_counts(counts: Mapping, title="Parameters by component") -> Figure:
    """Horizontal bars of parameter counts, each labelled with its number and share; the total in the title.

    Args:
        counts: ``{component name: number of parameters}``, drawn top to bottom in the given order.
        title: figure title (the total is appended).

    Returns:
        The Figure.
    """
    if not counts:
        raise ValueError("counts is empty: pass {component: n_parameters}")
    names = [str(k) for k in counts]
    values = np.array([int(v) for v in counts.values()], dtype=np.int64)
    total = int(values.sum())
    height = _clip(0.6 * len(names) + 1.8, 4.0, 12.0)
    fig, ax = _new_axes((10.0, height))
    y = np.arange(len(names))
    ax.barh(y, values, color=PALETTE[0], height=0.65)
    for yi, v in zip(y, values, strict=True):
        share = f" ({100 * v / total:.1f}%)" if total else ""
        ax.text(v, yi, f"  {v:,}{share}", va="center", ha="left", fontsize=FONT_SIZES["annotation"] + 1)
    ax.set_yticks(y, names)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first component at the top
    ax.set_xlim(0, max(int(values.max()), 1) * 1.35)  # room for the numbers
    ax.xaxis.set_major_formatter(mpl.ticker.FuncFormatter(lambda v, _: f"{int(v):,}"))
    ax.grid(axis="y", visible=False)
    ax.set(title=f"{title} (total {total:,})" if title else f"total {total:,}", xlabel="parameters")
    return _ensure_readable(fig)


def plot_bar(values: Mapping, title=None, ylabel=None, xlabel=None, fmt=None) -> Figure:
    """A bar per entry with its value written on top (e.g. padding fraction plain vs bucketed, BLEU greedy vs beam).

    Args:
        values: ``{name: number}``, drawn left to right in the given order.
        title, ylabel, xlabel: texts.
        fmt: format of the numbers on the bars, e.g. ".1f" or ".1%"; None chooses by magnitude.

    Returns:
        The Figure.
    """
    if not values:
        raise ValueError("values is empty: pass {name: number}")
    names = [str(k) for k in values]
    heights = np.array([float(_to_numpy(v, f"values[{k!r}]")) for k, v in values.items()])
    fig, ax = _new_axes((_clip(1.6 * len(names) + 3.0, 6.0, 14.0), 5.5))
    x = np.arange(len(names))
    ax.bar(x, heights, color=[PALETTE[i % len(PALETTE)] for i in range(len(names))], width=0.6)
    for xi, v in zip(x, heights, strict=True):
        ax.annotate(
            _format_number(v, fmt),
            (xi, v),
            xytext=(0, 4 if v >= 0 else -4),
            textcoords="offset points",
            ha="center",
            va="bottom" if v >= 0 else "top",
            fontsize=FONT_SIZES["tick"],
        )
    _label_x(ax, names, rotation=0 if _longest(names) * len(names) <= 60 else 30)
    ax.margins(y=0.15)
    if heights.min() >= 0:
        ax.set_ylim(bottom=0)
    ax.axhline(0, color="black", linewidth=1)
    ax.grid(axis="x", visible=False)
    ax.set(title=title or "", xlabel=xlabel or "", ylabel=ylabel or "")
    return _ensure_readable(fig)


def plot_one_hot_vs_dense(one_hot, dense, tokens=None, title="One-hot vs dense embedding") -> Figure:
    """Two heatmaps of the same tokens: one-hot rows (vocab wide, mostly zeros) next to dense vectors.

    Args:
        one_hot: ``(n, vocab_size)`` one-hot rows.
        dense: ``(n, d_model)`` embedding vectors of the same tokens (diverging colours, centred at 0).
        tokens: ``n`` token strings for the rows.
        title: figure title.

    Returns:
        The Figure.
    """
    oh = _as_float(one_hot, "one_hot", 2, "(n, vocab_size)")
    de = _as_float(dense, "dense", 2, "(n, d_model)")
    if oh.shape[0] != de.shape[0]:
        raise ValueError(f"one_hot has {oh.shape[0]} rows but dense has {de.shape[0]}; they must show the same tokens")
    tokens = _labels(tokens, oh.shape[0], "tokens", "one_hot", "rows")
    ratios = [_clip(oh.shape[1], 4, 40), _clip(de.shape[1], 4, 40)]
    fig, axes = plt.subplots(
        1,
        2,
        figsize=(14.0, _clip(0.5 * oh.shape[0] + 2.5, 4.5, 10.0)),
        layout="constrained",
        gridspec_kw={"width_ratios": ratios},
    )
    small = max(oh.shape) <= 40
    mesh = _draw_heatmap(
        axes[0],
        oh,
        ListedColormap(["#eeeeee", MASK_COLORS[1]]),
        BoundaryNorm([-0.5, 0.5, 1.5], 2),
        None,
        tokens,
        cell_lines=small,
    )
    _colorbar(fig, mesh, axes[0], None, ticks=[0, 1], shrink=0.8)
    axes[0].set(title=f"one-hot ({oh.shape[1]} columns)", xlabel="vocabulary id", ylabel="token")
    reach = max(float(np.nanmax(np.abs(de))), 1e-12)
    mesh = _draw_heatmap(axes[1], de, _cmap(DIVERGING_CMAP), Normalize(-reach, reach), None, tokens, show_y=False)
    _colorbar(fig, mesh, axes[1], "value", shrink=0.8)
    axes[1].set(title=f"dense ({de.shape[1]} numbers)", xlabel="embedding dimension")
    if title:
        fig.suptitle(title)
    return _ensure_readable(fig)
