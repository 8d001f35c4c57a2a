"""Masks drawn in two colours ("blocked" and "may attend"): one mask or several side by side.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure

from course_lib.plotting.attention import _grid_figure
from course_lib.plotting.base import _draw_heatmap, _heatmap_figsize, _new_axes, _root_figure
from course_lib.plotting.inputs import _broadcast_mask, _labels, _mask_2d
from course_lib.plotting.style import MASK_COLORS, MASK_LABELS, _ensure_readable

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
