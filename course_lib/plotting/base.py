"""Figure and heatmap building blocks: sizes, colour limits, tick labels, annotations, colour bars.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import Colormap, Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from course_lib.plotting.style import _ANNOTATE_MAX, _CELL, FIGSIZE, FONT_SIZES, NAN_COLOR

# ----------------------------------------------------------------------------------------------
# Figure and heatmap building blocks
# ----------------------------------------------------------------------------------------------


def _root_figure(ax: Axes) -> Figure:
    try:
        return ax.get_figure(root=True)
    except TypeError:  # matplotlib < 3.10
        fig = ax.figure
        while not isinstance(fig, Figure):
            fig = fig.figure
        return fig


def _new_axes(figsize=FIGSIZE) -> tuple[Figure, Axes]:
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return fig, ax


def _clip(v: float, low: float, high: float) -> float:
    return float(min(max(v, low), high))


def _longest(labels) -> int:
    return max((len(t) for t in labels), default=0) if labels else 0


def _heatmap_figsize(n_rows: int, n_cols: int, x_labels, y_labels) -> tuple[float, float]:
    if x_labels is None and y_labels is None:
        return FIGSIZE
    width = _CELL * n_cols + 3.0 + 0.11 * _longest(y_labels)
    height = _CELL * n_rows + 1.6 + 0.08 * _longest(x_labels)
    return _clip(width, 6.0, 16.0), _clip(height, 4.5, 12.0)


def _cmap(cmap) -> Colormap:
    cmap = mpl.colormaps[cmap] if isinstance(cmap, str) else cmap
    return cmap.with_extremes(bad=NAN_COLOR)


def _limits(data: np.ndarray, vmin, vmax, center) -> tuple[float, float]:
    """Colour limits; with ``center`` they are symmetric around it (unless both are given)."""
    finite = data[np.isfinite(data)]
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 1.0
    if center is not None and (vmin is None or vmax is None):
        extremes = [lo, hi] + [v for v in (vmin, vmax) if v is not None]
        reach = max(abs(v - center) for v in extremes) or 1.0
        return center - reach, center + reach
    vmin = lo if vmin is None else vmin
    vmax = hi if vmax is None else vmax
    if vmin == vmax:
        vmin, vmax = vmin - 0.5, vmax + 0.5
    return float(vmin), float(vmax)


def _rotation(labels: list[str]) -> float:
    if len(labels) > 30:
        return 90.0
    return 0.0 if _longest(labels) <= 2 else 45.0


def _label_x(ax: Axes, labels: list[str], rotation: float | None = None) -> None:
    """One x tick per label at 0, 1, 2, ...; long labels are slanted and anchored at their end."""
    rotation = _rotation(labels) if rotation is None else rotation
    ax.set_xticks(range(len(labels)), labels)
    ax.tick_params(axis="x", labelrotation=rotation)
    if 0 < rotation < 90:
        plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")


def _set_ticks(ax: Axes, n_rows: int, n_cols: int, x_labels, y_labels, show_x=True, show_y=True) -> None:
    """Ticks at cell centres: every token when labels are given, else a few integer indices."""
    if x_labels is None:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=10, integer=True))
    else:
        _label_x(ax, x_labels)
    if y_labels is None:
        ax.yaxis.set_major_locator(MaxNLocator(nbins=10, integer=True))
    else:
        ax.set_yticks(range(n_rows), y_labels)
    ax.tick_params(labelbottom=show_x, labelleft=show_y, length=0)


def _annotate(ax: Axes, data: np.ndarray, cmap: Colormap, norm: Normalize, fmt: str) -> None:
    """Write each value in its cell, black on light colours and white on dark ones."""
    for (i, j), value in np.ndenumerate(data):
        if np.isnan(value):
            text, colour = "NaN", "black"
        else:
            r, g, b, _ = cmap(norm(value))
            colour = "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.408 else "white"
            text = format(round(value), fmt) if fmt.endswith("d") else format(value, fmt)
        ax.text(j, i, text, ha="center", va="center", color=colour, fontsize=FONT_SIZES["annotation"])


def _draw_heatmap(
    ax,
    data,
    cmap,
    norm,
    x_labels=None,
    y_labels=None,
    annotate=False,
    fmt=".2f",
    show_x=True,
    show_y=True,
    cell_lines=False,
):
    """Draw ``data`` (rows, cols) with row 0 at the top; return the QuadMesh (for a colour bar)."""
    n_rows, n_cols = data.shape
    edge = {"edgecolor": "white", "linewidth": 1.5} if cell_lines else {}
    mesh = ax.pcolormesh(
        np.arange(n_cols + 1) - 0.5,
        np.arange(n_rows + 1) - 0.5,
        np.ma.masked_invalid(data),
        cmap=cmap,
        norm=norm,
        **edge,
    )
    ax.set_xlim(-0.5, n_cols - 0.5)
    ax.set_ylim(n_rows - 0.5, -0.5)  # row 0 at the top, as in a printed matrix
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    _set_ticks(ax, n_rows, n_cols, x_labels, y_labels, show_x, show_y)
    if annotate:
        _annotate(ax, data, cmap, norm, fmt)
    return mesh


def _auto_annotate(annotate, shape) -> bool:
    if annotate is None:
        return max(shape) <= _ANNOTATE_MAX
    return bool(annotate)


def _colorbar(fig: Figure, mesh, axes, label: str | None, **kwargs):
    cbar = fig.colorbar(mesh, ax=axes, **kwargs)
    cbar.outline.set_visible(False)
    if label:
        cbar.set_label(label)
    return cbar
