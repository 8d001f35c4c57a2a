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

Modules (every public name is imported here: ``from course_lib.plotting import X`` works)::

    style          colour maps, palette, font sizes, use_course_style, readability checks
    inputs         tensors/arrays to NumPy, shape and label checks (private helpers)
    base           figure and heatmap building blocks (private helpers)
    heatmaps       plot_heatmap, plot_positional_encoding, plot_similarity
    attention      plot_attention, plot_attention_heads, plot_attention_layers, decoder_row_labels
    masks          plot_mask, plot_masks_side_by_side
    distributions  plot_embeddings_2d, plot_distribution
    lines          plot_pe_waves, plot_lines, plot_lr_schedule, plot_history
    bars           plot_label_smoothing, plot_parameter_counts, plot_bar, plot_one_hot_vs_dense

Checked in ``tests/test_plotting.py`` (labels, colour limits, errors, fonts, and a PNG of every figure).
"""

from __future__ import annotations

from course_lib.plotting.attention import (
    decoder_row_labels,
    plot_attention,
    plot_attention_heads,
    plot_attention_layers,
)
from course_lib.plotting.bars import (
    plot_bar,
    plot_label_smoothing,
    plot_one_hot_vs_dense,
    plot_parameter_counts,
)
from course_lib.plotting.distributions import (
    plot_distribution,
    plot_embeddings_2d,
)
from course_lib.plotting.heatmaps import (
    plot_heatmap,
    plot_positional_encoding,
    plot_similarity,
)
from course_lib.plotting.lines import (
    plot_history,
    plot_lines,
    plot_lr_schedule,
    plot_pe_waves,
)
from course_lib.plotting.masks import (
    plot_mask,
    plot_masks_side_by_side,
)
from course_lib.plotting.style import (
    DIVERGING_CMAP,
    FONT_SIZES,
    MASK_COLORS,
    MASK_LABELS,
    NAN_COLOR,
    PALETTE,
    SEQUENTIAL_CMAP,
    use_course_style,
)

__all__ = [
    "DIVERGING_CMAP",
    "FONT_SIZES",
    "MASK_COLORS",
    "MASK_LABELS",
    "NAN_COLOR",
    "PALETTE",
    "SEQUENTIAL_CMAP",
    "decoder_row_labels",
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
