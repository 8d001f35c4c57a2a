"""Heatmaps of matrices: any matrix, the positional-encoding table and similarity matrices.
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from course_lib.plotting.base import (
    _auto_annotate,
    _cmap,
    _colorbar,
    _draw_heatmap,
    _heatmap_figsize,
    _limits,
    _new_axes,
    _root_figure,
)
from course_lib.plotting.inputs import _as_float, _labels
from course_lib.plotting.style import DIVERGING_CMAP, SEQUENTIAL_CMAP, _ensure_readable

# ----------------------------------------------------------------------------------------------
# Heatmaps
# ----------------------------------------------------------------------------------------------


def plot_heatmap(
    matrix,
    x_labels=None,
    y_labels=None,
    title=None,
    xlabel=None,
    ylabel=None,
    cmap=None,
    center=None,
    annotate=False,
    vmin=None,
    vmax=None,
    colorbar_label=None,
    ax=None,
    fmt=".2f",
) -> Figure:
    """A matrix as coloured cells with labelled axes and a labelled colour bar (the generic building block).

    Args:
        matrix: ``(rows, cols)``; leading size-1 dimensions are dropped. Row 0 is drawn at the top.
        x_labels: ``cols`` labels for the columns (e.g. key tokens); None shows a few indices.
        y_labels: ``rows`` labels for the rows (e.g. query tokens); None shows a few indices.
        title, xlabel, ylabel: texts (None for none).
        cmap: colour map name or object; default :data:`SEQUENTIAL_CMAP`, or :data:`DIVERGING_CMAP`
            when ``center`` is given.
        center: if given (e.g. 0 for signed values), the colour limits are symmetric around it.
        annotate: write the values in the cells (True/False); None = only when the matrix is at most 12 x 12.
        vmin, vmax: colour limits (default: the data range).
        colorbar_label: label of the colour bar.
        ax: draw into this Axes instead of a new figure.
        fmt: format of the annotations, e.g. ".2f" or "d".

    Returns:
        The Figure.
    """
    data = _as_float(matrix, "matrix", 2, "(rows, cols)")
    x_labels = _labels(x_labels, data.shape[1], "x_labels", "matrix", "columns")
    y_labels = _labels(y_labels, data.shape[0], "y_labels", "matrix", "rows")
    if cmap is None:
        cmap = SEQUENTIAL_CMAP if center is None else DIVERGING_CMAP
    cmap = _cmap(cmap)
    norm = Normalize(*_limits(data, vmin, vmax, center))
    if ax is None:
        fig, ax = _new_axes(_heatmap_figsize(*data.shape, x_labels, y_labels))
    else:
        fig = _root_figure(ax)
    mesh = _draw_heatmap(ax, data, cmap, norm, x_labels, y_labels, _auto_annotate(annotate, data.shape), fmt)
    cbar = _colorbar(fig, mesh, ax, colorbar_label)
    ax.set(title=title or "", xlabel=xlabel or "", ylabel=ylabel or "")
    return _ensure_readable(fig, [ax, cbar.ax])


def plot_positional_encoding(pe, title="Sinusoidal positional encoding", max_pos=None) -> Figure:
    """The positional-encoding table as a heatmap: position (rows, top to bottom) x dimension (columns).

    Args:
        pe: ``(max_len, d_model)`` (or ``(1, max_len, d_model)``), e.g. ``sinusoidal_table(50, 64)``.
        title: figure title.
        max_pos: show only the first ``max_pos`` positions (None = all).

    Returns:
        The Figure (diverging colour map, limits symmetric around 0).
    """
    table = _as_float(pe, "pe", 2, "(max_len, d_model)")
    if max_pos is not None:
        table = table[:max_pos]
    return plot_heatmap(
        table, title=title, xlabel="embedding dimension", ylabel="position", center=0.0, colorbar_label="PE value"
    )


def plot_similarity(
    matrix,
    title="Similarity between positions",
    labels=None,
    xlabel="position",
    ylabel="position",
    colorbar_label="similarity",
) -> Figure:
    """A similarity matrix (e.g. dot products of positional encodings, position x position).

    Args:
        matrix: ``(n, m)``, usually square ``(n, n)``. Signed values get the diverging map centred at 0;
            a matrix without negative values gets the sequential map over its range (more contrast).
        title: figure title.
        labels: ``n`` labels used for both axes (e.g. tokens); None shows indices.
        xlabel, ylabel, colorbar_label: axis and colour-bar texts.

    Returns:
        The Figure.
    """
    data = _as_float(matrix, "matrix", 2, "(n, n)")
    x_labels = _labels(labels, data.shape[1], "labels", "matrix", "columns")
    y_labels = _labels(labels, data.shape[0], "labels", "matrix", "rows")
    center = 0.0 if np.nanmin(data) < 0 else None
    return plot_heatmap(
        data,
        x_labels,
        y_labels,
        title=title,
        xlabel=xlabel,
        ylabel=ylabel,
        center=center,
        colorbar_label=colorbar_label,
    )
