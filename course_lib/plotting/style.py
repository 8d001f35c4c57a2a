"""The course look: colour maps, palette, font sizes, :func:`use_course_style`, and the checks that
make every returned figure readable on a projector.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

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
