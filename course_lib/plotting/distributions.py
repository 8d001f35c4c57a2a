"""Embeddings in 2-D and histograms of values.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from course_lib.plotting.base import _new_axes
from course_lib.plotting.inputs import _as_float, _labels, _to_numpy
from course_lib.plotting.style import FONT_SIZES, PALETTE, _ensure_readable

# ----------------------------------------------------------------------------------------------
# Embeddings and distributions
# ----------------------------------------------------------------------------------------------


def plot_embeddings_2d(
    points, labels, title="Embeddings in 2-D", groups=None, xlabel="component 1", ylabel="component 2"
) -> Figure:
    """A scatter plot of 2-D points (e.g. a PCA projection of embeddings), each labelled with its token.

    Args:
        points: ``(n, 2)``.
        labels: ``n`` token strings written next to the points.
        title, xlabel, ylabel: texts.
        groups: optional ``n`` group names (e.g. "number", "animal"); each group gets a colour and a legend entry.

    Returns:
        The Figure (equal scale on both axes, so distances are faithful).
    """
    xy = _as_float(points, "points", 2, "(n, 2)")
    if xy.shape[1] != 2:
        raise ValueError(f"points must have shape (n, 2), got {xy.shape}")
    labels = _labels(labels, xy.shape[0], "labels", "points", "rows")
    groups = _labels(groups, xy.shape[0], "groups", "points", "rows")
    fig, ax = _new_axes()
    names = sorted(set(groups)) if groups is not None else [None]
    for k, name in enumerate(names):
        keep = np.ones(len(xy), bool) if name is None else np.array([g == name for g in groups])
        ax.scatter(
            xy[keep, 0],
            xy[keep, 1],
            s=90,
            color=PALETTE[k % len(PALETTE)],
            label=name,
            zorder=3,
            edgecolor="white",
            linewidth=1,
        )
    for (x, y), text in zip(xy, labels, strict=True):
        ax.annotate(text, (x, y), xytext=(6, 6), textcoords="offset points", fontsize=FONT_SIZES["tick"], zorder=4)
    ax.axhline(0, color="grey", lw=0.8, zorder=1)
    ax.axvline(0, color="grey", lw=0.8, zorder=1)
    ax.set_aspect("equal", adjustable="datalim")
    ax.margins(0.15)
    ax.set(title=title or "", xlabel=xlabel, ylabel=ylabel)
    if groups is not None:
        ax.legend(loc="best")
    return _ensure_readable(fig)


def _bin_edges(arrays: list[np.ndarray], bins) -> np.ndarray:
    """Shared bin edges; whole numbers (e.g. sentence lengths) get one bin per integer."""
    everything = np.concatenate(arrays)
    lo, hi = everything.min(), everything.max()
    if bins is None and np.all(everything == np.round(everything)) and hi - lo <= 100:
        return np.arange(lo - 0.5, hi + 1.5)
    return np.histogram_bin_edges(everything, bins=50 if bins is None else bins)


def plot_distribution(values: Mapping, title=None, xlabel="value", bins=None, show_stats=True, logy=False) -> Figure:
    """Overlapping histograms on shared bins (e.g. activations before/after LayerNorm).

    Args:
        values: ``{name: array}``; each array of any shape is flattened; NaN and inf are dropped.
        title, xlabel: texts.
        bins: number of bins or bin edges; None = 50 (one per integer for whole numbers).
        show_stats: add mean and standard deviation to each legend entry.
        logy: logarithmic density axis.

    Returns:
        The Figure (y axis: density, so series of different sizes compare).
    """
    if not values:
        raise ValueError("values is empty: pass {name: array}")
    arrays = {}
    for name, v in values.items():
        a = _to_numpy(v, f"values[{name!r}]").astype(np.float64).ravel()
        a = a[np.isfinite(a)]
        if a.size == 0:
            raise ValueError(f"values[{name!r}] has no finite values")
        arrays[name] = a
    edges = _bin_edges(list(arrays.values()), bins)
    fig, ax = _new_axes()
    for k, (name, a) in enumerate(arrays.items()):
        colour = PALETTE[k % len(PALETTE)]
        label = f"{name} (mean {a.mean():.2f}, std {a.std():.2f})" if show_stats else str(name)
        ax.hist(a, bins=edges, density=True, histtype="stepfilled", alpha=0.35, color=colour, label=label)
        ax.hist(a, bins=edges, density=True, histtype="step", linewidth=2, color=colour)
    if logy:
        ax.set_yscale("log")
    else:
        ax.set_ylim(0, ax.get_ylim()[1] * (1.15 + 0.12 * len(arrays)))  # headroom for the legend
    ax.set(title=title or "", xlabel=xlabel or "", ylabel="density")
    ax.legend(loc="upper right")
    return _ensure_readable(fig)
