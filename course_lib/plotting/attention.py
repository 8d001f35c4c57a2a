"""Attention maps: one map (:func:`plot_attention`), every head of one layer, every layer and head.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from course_lib.plotting.base import _clip, _cmap, _colorbar, _draw_heatmap, _longest
from course_lib.plotting.heatmaps import plot_heatmap
from course_lib.plotting.inputs import _as_float, _head_stack, _labels
from course_lib.plotting.style import SEQUENTIAL_CMAP, _ensure_readable

DECODER_ROWS_LABEL = "decoder position: reads → predicts"


def decoder_row_labels(input_tokens, predicted_tokens) -> list[str]:
    """Row labels of a decoder attention map, the same in every notebook: ``"reads → predicts"``.

    Row ``t`` of a decoder's self- or cross-attention belongs to the position that reads token ``t`` of the
    decoder input (``<bos> y1 ... yn``) and predicts token ``t`` of the output (``y1 ... yn <eos>``), so a
    label names both, e.g. ``"<bos> → The"``, ``"has → seen"``.

    Args:
        input_tokens: the decoder input tokens, one per row.
        predicted_tokens: the tokens the rows predict (the labels in training, the output in decoding).

    Returns:
        One label per row.

    Raises:
        ValueError: if the two lists have different lengths.
    """
    inputs, outputs = [str(t) for t in input_tokens], [str(t) for t in predicted_tokens]
    if len(inputs) != len(outputs):
        raise ValueError(f"input_tokens has {len(inputs)} tokens but predicted_tokens has {len(outputs)}; "
                         "both need one token per decoder position")
    return [f"{i} → {o}" for i, o in zip(inputs, outputs, strict=True)]


def _query_labels(query_tokens, predicted_tokens) -> tuple[list[str] | None, str]:
    """Row labels and the axis label: decoder rows read "input → prediction" when predictions are given."""
    if predicted_tokens is None:
        return query_tokens, "query"
    if query_tokens is None:
        raise ValueError("predicted_tokens needs query_tokens (the decoder input tokens) as well")
    return decoder_row_labels(query_tokens, predicted_tokens), DECODER_ROWS_LABEL


def plot_attention(
    weights, query_tokens=None, key_tokens=None, title="Attention weights", ax=None, annotate=None,
    predicted_tokens=None,
) -> Figure:
    """One attention-weight matrix: rows are queries, columns are keys, colours from 0 to 1.

    Args:
        weights: ``(q_len, k_len)``, each row a softmax distribution (leading size-1 dimensions
            are dropped; pick one head of a batch with ``weights[0, head]``).
        query_tokens: ``q_len`` tokens for the rows (None shows indices); for a decoder, its input tokens.
        key_tokens: ``k_len`` tokens for the columns (None shows indices).
        title: figure title.
        ax: draw into this Axes instead of a new figure.
        annotate: write the weights in the cells; None = only for at most 12 x 12 matrices.
        predicted_tokens: for decoder attention, the ``q_len`` tokens the rows predict; the rows are then
            labelled ``"reads → predicts"`` (:func:`decoder_row_labels`), the course's one convention.

    Returns:
        The Figure.
    """
    data = _as_float(weights, "weights", 2, "(q_len, k_len); select one head with weights[batch, head]")
    _labels(query_tokens, data.shape[0], "query_tokens", "weights", "rows (queries)")
    _labels(key_tokens, data.shape[1], "key_tokens", "weights", "columns (keys)")
    _labels(predicted_tokens, data.shape[0], "predicted_tokens", "weights", "rows (queries)")
    query_tokens, row_axis = _query_labels(query_tokens, predicted_tokens)
    return plot_heatmap(
        data,
        key_tokens,
        query_tokens,
        title=title,
        xlabel="key",
        ylabel=row_axis,
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
    predicted_tokens=None,
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
        predicted_tokens: for decoder attention, the ``q_len`` tokens the rows predict; with ``query_tokens``
            the decoder input, rows are labelled ``"reads → predicts"`` (:func:`decoder_row_labels`).

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
    _labels(query_tokens, q_len, "query_tokens", "each map", "rows (queries)")
    _labels(predicted_tokens, q_len, "predicted_tokens", "each map", "rows (queries)")
    query_tokens, row_axis = _query_labels(query_tokens, predicted_tokens)
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
    fig.supylabel(row_axis)
    return _ensure_readable(fig)
