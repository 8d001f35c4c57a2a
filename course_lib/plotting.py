"""Every figure of the course, drawn with one consistent look that stays readable on a projector.

Rules shared by all helpers:

- Each helper **returns** the matplotlib ``Figure`` and never calls ``plt.show()``; a notebook cell
  that draws ends with ``plt.show()``. Figures are created through ``pyplot`` (so Jupyter shows them)
  with the constrained layout, so labels and colour bars never overlap.
- Inputs may be torch tensors (detached and moved to the CPU automatically), NumPy arrays or lists.
  Shapes follow the course conventions: attention weights ``(batch, n_heads, q_len, k_len)``, bool
  masks with **True = may attend**, the positional table ``(max_len, d_model)``.
- Three colour maps only: :data:`SEQUENTIAL_CMAP` for weights and probabilities (0 = dark),
  :data:`DIVERGING_CMAP` centred at 0 with symmetric limits for signed values (positional
  encodings, embeddings, similarities), and the two colours of :data:`MASK_COLORS` for masks
  ("blocked" grey, "may attend" teal). NaN cells are drawn in :data:`NAN_COLOR`.
- Fonts: :func:`use_course_style` (call it once in a notebook's import cell; importing this module
  changes nothing) sets titles 18 pt, axis labels 15 pt, tick labels 13 pt. The helpers also work
  without it: every figure they return has at least 16 pt titles, 14 pt labels and 12 pt ticks.
- Everything is deterministic: the same input draws the same pixels.

Checked in ``tests/test_plotting.py`` (labels, colour limits, errors, fonts, and a PNG of every figure).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm, Colormap, ListedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

__all__ = [
    "DIVERGING_CMAP",
    "FONT_SIZES",
    "MASK_COLORS",
    "MASK_LABELS",
    "NAN_COLOR",
    "PALETTE",
    "SEQUENTIAL_CMAP",
    "plot_attention",
    "plot_attention_heads",
    "plot_attention_layers",
    "plot_bar",
    "plot_distribution",
    "plot_embeddings_2d",
    "plot_heatmap",
    "plot_history",
    "plot_label_smoothing",
    "plot_lines",
    "plot_lr_schedule",
    "plot_mask",
    "plot_masks_side_by_side",
    "plot_one_hot_vs_dense",
    "plot_parameter_counts",
    "plot_pe_waves",
    "plot_positional_encoding",
    "plot_similarity",
    "use_course_style",
]

SEQUENTIAL_CMAP = "viridis"  # weights, probabilities, counts: perceptually uniform, colour-blind safe
DIVERGING_CMAP = "RdBu_r"  # signed values: blue < 0 < red, always with symmetric limits
MASK_COLORS = ("#d9d9d9", "#2a788e")  # (blocked, may attend): light grey and viridis teal
MASK_LABELS = ("blocked", "may attend")  # False, True
NAN_COLOR = "#f4a3c0"  # pink: NaN cells stand out (the fully-masked-row trap of notebook 06)
PALETTE = (  # line and bar colours, in order: seaborn's "colorblind" palette
    "#0173b2",
    "#de8f05",
    "#029e73",
    "#d55e00",
    "#cc78bc",
    "#ca9161",
    "#fbafe4",
    "#949494",
    "#ece133",
    "#56b4e9",
)
FIGSIZE = (8.0, 6.0)

FONT_SIZES = {"title": 18, "label": 15, "tick": 13, "legend": 13, "annotation": 12}  # set by use_course_style
_MIN_SIZES = {"suptitle": 18, "title": 16, "label": 14, "tick": 12, "legend": 12}  # guaranteed by every helper
_CELL = 0.55  # inches per heatmap cell when tokens label the axes
_ANNOTATE_MAX = 12  # auto-annotate heatmaps with at most this many rows and columns


# ----------------------------------------------------------------------------------------------
# Style
# ----------------------------------------------------------------------------------------------


def use_course_style() -> None:
    """Apply the course look: seaborn "whitegrid" with the "talk" context and projector-sized fonts.

    Call once in each notebook's import cell. It changes matplotlib's global settings (rcParams);
    importing ``course_lib.plotting`` alone does not.
    """
    rc = {
        "figure.figsize": FIGSIZE,
        "figure.dpi": 100,
        "savefig.dpi": 150,
        "savefig.bbox": "tight",
        "font.size": FONT_SIZES["label"],
        "axes.titlesize": FONT_SIZES["title"],
        "figure.titlesize": FONT_SIZES["title"] + 2,
        "axes.labelsize": FONT_SIZES["label"],
        "figure.labelsize": FONT_SIZES["label"],
        "xtick.labelsize": FONT_SIZES["tick"],
        "ytick.labelsize": FONT_SIZES["tick"],
        "legend.fontsize": FONT_SIZES["legend"],
        "legend.title_fontsize": FONT_SIZES["legend"],
        "axes.titlepad": 10.0,
        "image.cmap": SEQUENTIAL_CMAP,
    }
    import seaborn as sns  # imported here: seaborn (and pandas) load only when the style is applied

    sns.set_theme(context="talk", style="whitegrid", palette="colorblind", rc=rc)


def _points(size) -> float:
    return mpl.font_manager.FontProperties(size=size).get_size_in_points()


def _at_least(text, minimum: float, only_if_set: bool = True) -> None:
    if text is None or (only_if_set and not text.get_text()):
        return
    if text.get_fontsize() < minimum:
        text.set_fontsize(minimum)


def _ensure_readable(fig: Figure, axes: Sequence[Axes] | None = None) -> Figure:
    """Raise any title, label, tick label or legend text below the projector minimum; return ``fig``."""
    for ax in fig.axes if axes is None else axes:
        for title in (ax.title, ax._left_title, ax._right_title):
            _at_least(title, _MIN_SIZES["title"])
        for axis in (ax.xaxis, ax.yaxis):
            _at_least(axis.label, _MIN_SIZES["label"])
            _at_least(axis.get_offset_text(), _MIN_SIZES["tick"], only_if_set=False)  # e.g. "1e-3", filled at draw
            # The helpers never set tick sizes themselves, so the labels have the rcParams size.
            if _points(mpl.rcParams[f"{axis.axis_name}tick.labelsize"]) < _MIN_SIZES["tick"]:
                ax.tick_params(axis=axis.axis_name, which="both", labelsize=_MIN_SIZES["tick"])
        legend = ax.get_legend()
        if legend is not None:
            _legend_readable(legend)
    for legend in fig.legends:
        _legend_readable(legend)
    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        _at_least(getattr(fig, name, None), _MIN_SIZES["suptitle" if name == "_suptitle" else "label"])
    return fig


def _legend_readable(legend) -> None:
    for text in legend.get_texts():
        _at_least(text, _MIN_SIZES["legend"])
    _at_least(legend.get_title(), _MIN_SIZES["legend"])


# ----------------------------------------------------------------------------------------------
# Input checks and conversions
# ----------------------------------------------------------------------------------------------


def _to_numpy(x, name: str) -> np.ndarray:
    """Tensor (any device, with or without grad), array or list -> NumPy array."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.is_floating_point() and x.dtype not in (torch.float32, torch.float64):
            x = x.float()  # bfloat16 / float16 have no NumPy equivalent here
        return x.numpy()
    try:
        return np.asarray(x)
    except Exception as err:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} must be a tensor or an array, got {type(x).__name__}") from err


def _squeeze_leading(a: np.ndarray, ndim: int) -> np.ndarray:
    while a.ndim > ndim and a.shape[0] == 1:
        a = a[0]
    return a


def _as_array(x, name: str, ndim: int, shape_doc: str) -> np.ndarray:
    """Convert and check the number of dimensions (leading size-1 dimensions are dropped)."""
    a = _squeeze_leading(_to_numpy(x, name), ndim)
    if a.ndim != ndim:
        raise ValueError(f"{name} must have shape {shape_doc}, got {tuple(a.shape)}")
    if a.size == 0:
        raise ValueError(f"{name} is empty: shape {tuple(a.shape)}")
    return a


def _as_float(x, name: str, ndim: int, shape_doc: str) -> np.ndarray:
    a = _as_array(x, name, ndim, shape_doc)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number):
        raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}")
    return a.astype(np.float64)


def _labels(labels, n: int, name: str, owner: str, unit: str) -> list[str] | None:
    """Labels as strings, checked against the ``n`` ``unit`` (e.g. "rows (queries)") of ``owner``."""
    if labels is None:
        return None
    labels = [str(t) for t in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} label(s) but {owner} has {n} {unit}")
    return labels


def _select_batch(a: np.ndarray, name: str, batch_index: int) -> np.ndarray:
    if not -a.shape[0] <= batch_index < a.shape[0]:
        raise ValueError(f"batch_index={batch_index} is out of range: {name} has a batch of {a.shape[0]}")
    return a[batch_index]


def _head_stack(weights, name: str, batch_index: int) -> np.ndarray:
    """(n_heads, q_len, k_len), or (batch, n_heads, q_len, k_len) with ``batch_index`` -> (n_heads, q, k)."""
    a = _to_numpy(weights, name)
    if a.ndim == 4:
        a = _select_batch(a, name, batch_index)
    return _as_float(a, name, 3, "(n_heads, q_len, k_len) or (batch, n_heads, q_len, k_len)")


def _mask_2d(mask, name: str, batch_index: int = 0) -> np.ndarray:
    """A bool mask (k_len,), (q_len, k_len), (batch, q_len, k_len) or (batch, heads, q_len, k_len) -> 2-D."""
    a = _to_numpy(mask, name)
    if a.dtype != bool:
        raise TypeError(
            f"{name} must be a bool mask (True = may attend), got dtype {a.dtype}; "
            "convert a PyTorch mask (True = blocked) with ~mask"
        )
    if a.ndim >= 3:
        a = _select_batch(a, name, batch_index)
    if a.ndim == 3:
        a = a[0]  # masks broadcast over heads: the head dimension has size 1 (or identical heads)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.size == 0:
        raise ValueError(f"{name} must have shape (q_len, k_len), (batch, 1, q_len, k_len) or similar, got {a.shape}")
    return a


def _broadcast_mask(m: np.ndarray, shape: tuple[int, int], name: str) -> np.ndarray:
    try:
        return np.broadcast_to(m, shape)
    except ValueError as err:
        raise ValueError(
            f"{name} of shape {m.shape} does not fit the tokens: expected (q_len, k_len) = {shape}"
        ) from err


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


def plot_attention(
    weights, query_tokens=None, key_tokens=None, title="Attention weights", ax=None, annotate=None
) -> Figure:
    """One attention-weight matrix: rows are queries, columns are keys, colours from 0 to 1.

    Args:
        weights: ``(q_len, k_len)``, each row a softmax distribution (leading size-1 dimensions
            are dropped; pick one head of a batch with ``weights[0, head]``).
        query_tokens: ``q_len`` tokens for the rows (None shows indices).
        key_tokens: ``k_len`` tokens for the columns (None shows indices).
        title: figure title.
        ax: draw into this Axes instead of a new figure.
        annotate: write the weights in the cells; None = only for at most 12 x 12 matrices.

    Returns:
        The Figure.
    """
    data = _as_float(weights, "weights", 2, "(q_len, k_len); select one head with weights[batch, head]")
    _labels(query_tokens, data.shape[0], "query_tokens", "weights", "rows (queries)")
    _labels(key_tokens, data.shape[1], "key_tokens", "weights", "columns (keys)")
    return plot_heatmap(
        data,
        key_tokens,
        query_tokens,
        title=title,
        xlabel="key",
        ylabel="query",
        vmin=0.0,
        vmax=1.0,
        annotate=annotate,
        colorbar_label="attention weight",
        ax=ax,
    )


def _panel_size(shape: tuple[int, int]) -> tuple[float, float]:
    """Inches for one heatmap panel of ``shape = (rows, cols)`` cells inside a grid."""
    return _clip(0.36 * shape[1] + 0.6, 2.4, 5.5), _clip(0.36 * shape[0] + 0.6, 2.2, 5.5)


def _grid_columns(n_panels: int, shape: tuple[int, int], y_labels, max_width: float = 14.0) -> int:
    """As many columns as fit in ``max_width`` inches, then balanced (4 panels -> 2 x 2, not 3 + 1)."""
    fit = int((max_width - 2.2 - 0.11 * _longest(y_labels)) // _panel_size(shape)[0])
    ncols = max(1, min(n_panels, fit, 4))
    return math.ceil(n_panels / math.ceil(n_panels / ncols))


def _grid_figure(nrows: int, ncols: int, shape: tuple[int, int], x_labels, y_labels):
    """A figure of ``nrows x ncols`` heatmap panels sized for ``shape = (rows, cols)`` cells each."""
    panel_w, panel_h = _panel_size(shape)
    width = ncols * panel_w + 0.11 * _longest(y_labels) + 2.2
    height = nrows * panel_h + 0.08 * _longest(x_labels) + 1.4
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(_clip(width, 6, 18), _clip(height, 4, 16)), layout="constrained", squeeze=False
    )
    return fig, axes


def _draw_panels(axes, stacks, x_labels, y_labels, cmap, norm):
    """Draw each matrix of ``stacks`` into the panels row by row; remove unused panels; return used axes."""
    ncols = axes.shape[1]
    used = []
    for index, ax in enumerate(axes.flat):
        if index >= len(stacks):
            ax.remove()
            continue
        col = index % ncols
        bottom = index + ncols >= len(stacks)  # nothing drawn below this panel
        mesh = _draw_heatmap(ax, stacks[index], cmap, norm, x_labels, y_labels, show_x=bottom, show_y=col == 0)
        used.append(ax)
    return used, mesh


def plot_attention_heads(
    weights, query_tokens=None, key_tokens=None, title="Attention weights per head", ncols=None, batch_index=0
) -> Figure:
    """A grid with one heatmap per head, one shared colour scale (0 to 1) and one colour bar.

    Args:
        weights: ``(n_heads, q_len, k_len)``, or ``(batch, n_heads, q_len, k_len)`` (``batch_index`` is drawn).
        query_tokens: ``q_len`` tokens (rows); shown on the first column.
        key_tokens: ``k_len`` tokens (columns); shown on the bottom row.
        title: figure title.
        ncols: panels per row (default: as many as fit in 14 inches, at most 4, balanced across rows).
        batch_index: which batch element to draw from 4-D weights.

    Returns:
        The Figure.
    """
    stack = _head_stack(weights, "weights", batch_index)
    n_heads, q_len, k_len = stack.shape
    y_labels = _labels(query_tokens, q_len, "query_tokens", "weights", "rows (queries)")
    x_labels = _labels(key_tokens, k_len, "key_tokens", "weights", "columns (keys)")
    ncols = _grid_columns(n_heads, (q_len, k_len), y_labels) if ncols is None else ncols
    if ncols < 1:
        raise ValueError(f"ncols must be >= 1, got {ncols}")
    nrows = math.ceil(n_heads / ncols)
    fig, axes = _grid_figure(nrows, ncols, (q_len, k_len), x_labels, y_labels)
    used, mesh = _draw_panels(axes, list(stack), x_labels, y_labels, _cmap(SEQUENTIAL_CMAP), Normalize(0, 1))
    for head, ax in enumerate(used):
        ax.set_title(f"head {head}")
    _colorbar(fig, mesh, used, "attention weight", shrink=0.9)
    fig.suptitle(title)
    fig.supxlabel("key")
    fig.supylabel("query")
    return _ensure_readable(fig)


def _row_names(names: list[str]) -> list[str]:
    """``["decoder.layers.0.cross_attn", "decoder.layers.1.cross_attn"]`` -> ``["layer 0", "layer 1"]``."""
    matches = [re.fullmatch(r"(.*)layers\.(\d+)(.*)", name) for name in names]
    if all(matches) and len({(m.group(1), m.group(3)) for m in matches}) == 1:
        return [f"layer {m.group(2)}" for m in matches]
    return names


def plot_attention_layers(
    maps: Mapping,
    query_tokens=None,
    key_tokens=None,
    title="Attention per layer and head",
    batch_index=0,
    select=None,
    heads=None,
) -> Figure:
    """A grid of layers (rows) x heads (columns), e.g. the cross-attention of a trained model.

    Args:
        maps: ``{layer name: weights}`` with weights ``(n_heads, q_len, k_len)`` or
            ``(batch, n_heads, q_len, k_len)``, e.g. from ``course_lib.model.record_attention``.
            All layers must have the same shape. Names label the rows; module names that differ only in
            the layer number (``"decoder.layers.1.cross_attn"``) are shortened to ``"layer 1"``.
        query_tokens: ``q_len`` tokens (rows of each panel), e.g. the target tokens for cross-attention.
        key_tokens: ``k_len`` tokens (columns), e.g. the source tokens for cross-attention.
        title: figure title.
        batch_index: which batch element to draw from 4-D weights.
        select: keep only the layers whose name contains this text (e.g. ``"cross_attn"``).
        heads: head indices to show (columns), e.g. ``(0, 2)``; None = all heads.

    Returns:
        The Figure (shared 0-1 colour scale, one colour bar).
    """
    names = [name for name in maps if select is None or select in name]
    if not names:
        raise ValueError(f"maps has no layers{'' if select is None else f' whose name contains {select!r}'}")
    stacks = {name: _head_stack(maps[name], f"maps[{name!r}]", batch_index) for name in names}
    shape = stacks[names[0]].shape
    for name, stack in stacks.items():
        if stack.shape != shape:
            raise ValueError(
                f"maps[{name!r}] has shape {stack.shape} but maps[{names[0]!r}] has {shape}; "
                "draw self- and cross-attention separately (see select=)"
            )
    n_heads, q_len, k_len = shape
    heads = list(range(n_heads)) if heads is None else list(heads)
    if not heads or any(not 0 <= h < n_heads for h in heads):
        raise ValueError(f"heads must be head indices in [0, {n_heads}), got {heads}")
    y_labels = _labels(query_tokens, q_len, "query_tokens", "each map", "rows (queries)")
    x_labels = _labels(key_tokens, k_len, "key_tokens", "each map", "columns (keys)")
    fig, axes = _grid_figure(len(names), len(heads), (q_len, k_len), x_labels, y_labels)
    panels = [stacks[name][h] for name in names for h in heads]
    used, mesh = _draw_panels(axes, panels, x_labels, y_labels, _cmap(SEQUENTIAL_CMAP), Normalize(0, 1))
    for col, head in enumerate(heads):
        axes[0, col].set_title(f"head {head}")
    for row, name in enumerate(_row_names(names)):
        axes[row, 0].set_ylabel(name, fontweight="bold")
    _colorbar(fig, mesh, used, "attention weight", shrink=0.9)
    fig.suptitle(title)
    fig.supxlabel("key")
    fig.supylabel("query")
    return _ensure_readable(fig)


# ----------------------------------------------------------------------------------------------
# Masks
# ----------------------------------------------------------------------------------------------


def _mask_style() -> tuple[ListedColormap, BoundaryNorm]:
    return ListedColormap(list(MASK_COLORS)), BoundaryNorm([-0.5, 0.5, 1.5], 2)


def _mask_colorbar(fig: Figure, mesh, axes, **kwargs):
    cbar = fig.colorbar(mesh, ax=axes, ticks=[0, 1], **kwargs)
    cbar.ax.set_yticklabels(list(MASK_LABELS))
    cbar.ax.minorticks_off()
    cbar.ax.tick_params(which="both", length=0)
    cbar.outline.set_visible(False)
    return cbar


def plot_mask(mask, query_tokens=None, key_tokens=None, title="Attention mask", ax=None, batch_index=0) -> Figure:
    """A boolean mask as a picture: teal = may attend (True), grey = blocked (False).

    Args:
        mask: bool, True = may attend. ``(q_len, k_len)``; ``(batch, q_len, k_len)`` and
            ``(batch, n_heads, q_len, k_len)`` draw ``mask[batch_index]`` / ``mask[batch_index, 0]``;
            ``(k_len,)`` is one row. A mask with one row (a padding mask ``(batch, 1, 1, k_len)``)
            is repeated for every query when ``query_tokens`` are given.
        query_tokens: tokens for the rows (queries).
        key_tokens: tokens for the columns (keys).
        title: figure title.
        ax: draw into this Axes instead of a new figure.
        batch_index: which batch element of a 3-D or 4-D mask to draw.

    Returns:
        The Figure, with a two-colour bar labelled "blocked" / "may attend".
    """
    m = _mask_2d(mask, "mask", batch_index)
    if query_tokens is not None and m.shape[0] == 1:
        m = np.broadcast_to(m, (len(query_tokens), m.shape[1]))
    y_labels = _labels(query_tokens, m.shape[0], "query_tokens", "mask", "rows (queries)")
    x_labels = _labels(key_tokens, m.shape[1], "key_tokens", "mask", "columns (keys)")
    if ax is None:
        fig, ax = _new_axes(_heatmap_figsize(*m.shape, x_labels, y_labels))
    else:
        fig = _root_figure(ax)
    cmap, norm = _mask_style()
    mesh = _draw_heatmap(ax, m.astype(float), cmap, norm, x_labels, y_labels, cell_lines=max(m.shape) <= 40)
    cbar = _mask_colorbar(fig, mesh, ax, shrink=0.5)
    ax.set(title=title or "", xlabel="key", ylabel="query")
    return _ensure_readable(fig, [ax, cbar.ax])


def plot_masks_side_by_side(masks: Mapping, tokens, query_tokens=None, title=None, batch_index=0) -> Figure:
    """Several masks next to each other (e.g. padding | causal | combined), one shared legend.

    Args:
        masks: ``{name: bool mask}``; each is reduced as in :func:`plot_mask` and broadcast to
            ``(q_len, k_len)``, so a padding mask ``(batch, 1, 1, k_len)`` shows as full rows.
        tokens: the ``k_len`` key tokens (also the queries unless ``query_tokens`` is given).
        query_tokens: ``q_len`` query tokens, for masks whose queries differ from the keys.
        title: figure title.
        batch_index: which batch element of 3-D or 4-D masks to draw.

    Returns:
        The Figure.
    """
    if not masks:
        raise ValueError("masks is empty: pass {name: mask}")
    x_labels = [str(t) for t in tokens]
    y_labels = x_labels if query_tokens is None else [str(t) for t in query_tokens]
    shape = (len(y_labels), len(x_labels))
    grids = [
        _broadcast_mask(_mask_2d(m, f"masks[{name!r}]", batch_index), shape, f"masks[{name!r}]")
        for name, m in masks.items()
    ]
    fig, axes = _grid_figure(1, len(grids), shape, x_labels, y_labels)
    cmap, norm = _mask_style()
    for col, (ax, name, grid) in enumerate(zip(axes[0], masks, grids, strict=True)):
        mesh = _draw_heatmap(
            ax, grid.astype(float), cmap, norm, x_labels, y_labels, show_y=col == 0, cell_lines=max(shape) <= 40
        )
        ax.set_title(str(name))
        ax.set_xlabel("key")
    axes[0, 0].set_ylabel("query")
    _mask_colorbar(fig, mesh, list(axes[0]), shrink=0.6)
    if title:
        fig.suptitle(title)
    return _ensure_readable(fig)


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


def _plain_numbers(axis, ticks=None) -> None:
    """Label a log axis with plain numbers (8, 16, 0.01) instead of powers of ten; optionally at ``ticks``."""
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
