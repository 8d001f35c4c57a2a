"""The course map: the encoder-decoder Transformer drawn as boxes, each labelled with its notebook.

``draw_architecture(highlight="04")`` returns a matplotlib Figure of the whole model with the
parts a notebook builds highlighted, so every notebook can show where its piece sits.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch

# (label, notebook, x, y, width, height); coordinates in a 10 x 12 canvas.
_BOXES = [
    ("German tokens → ids", "01", 0.6, 0.4, 3.8, 0.8),
    ("English tokens → ids (shifted right)", "01 09", 5.6, 0.4, 3.8, 0.8),
    ("Token embedding × √d_model", "02", 0.6, 1.6, 3.8, 0.8),
    ("Token embedding × √d_model", "02", 5.6, 1.6, 3.8, 0.8),
    ("+ positional encoding", "03", 0.6, 2.8, 3.8, 0.8),
    ("+ positional encoding", "03", 5.6, 2.8, 3.8, 0.8),
    ("Multi-head self-attention\n(padding mask)", "04 05 06", 0.9, 4.2, 3.2, 1.1),
    ("Add & LayerNorm", "07", 0.9, 5.5, 3.2, 0.6),
    ("Feed-forward", "07", 0.9, 6.3, 3.2, 0.6),
    ("Add & LayerNorm", "07", 0.9, 7.1, 3.2, 0.6),
    ("Masked multi-head self-attention\n(causal + padding mask)", "04 05 06", 5.9, 4.2, 3.2, 1.1),
    ("Add & LayerNorm", "07", 5.9, 5.5, 3.2, 0.6),
    ("Cross-attention\n(queries: English, keys: German)", "04 05 09", 5.9, 6.3, 3.2, 1.0),
    ("Add & LayerNorm", "07", 5.9, 7.5, 3.2, 0.6),
    ("Feed-forward + Add & LayerNorm", "07", 5.9, 8.3, 3.2, 0.6),
    ("Linear → softmax over English words", "09 10", 5.6, 9.9, 3.8, 0.8),
    ("Greedy / beam search → translation", "11", 5.6, 11.0, 3.8, 0.8),
]
# Boxes that course_lib builds around the student's parts (the batching's shift right, the Transformer
# class's output nn.Linear), never a part the student saves, although notebook 09 teaches them.
_COURSE_GLUE = {"English tokens → ids (shifted right)", "Linear → softmax over English words"}
_STACKS = [("Encoder layer × N   (08)", "08", 0.6, 4.0, 3.8, 3.9), ("Decoder layer × N   (09)", "09", 5.6, 4.0, 3.8, 5.1)]
_ARROWS = [
    ((2.5, 1.2), (2.5, 1.6)), ((2.5, 2.4), (2.5, 2.8)), ((2.5, 3.6), (2.5, 4.2)),
    ((7.5, 1.2), (7.5, 1.6)), ((7.5, 2.4), (7.5, 2.8)), ((7.5, 3.6), (7.5, 4.2)),
    ((4.4, 7.4), (5.9, 6.8)),  # memory flows into the decoder's cross-attention
    ((9.0, 9.1), (9.0, 9.9)), ((7.5, 10.7), (7.5, 11.0)),
]


def _draw(box_style, stack_style, memory_label: bool = True):
    """The model's boxes, stacks, arrows and headings on a new Figure.

    Args:
        box_style: ``(label, notebooks) -> (linewidth, edgecolor, facecolor, bold)`` for each box.
        stack_style: ``notebooks -> (linewidth, edgecolor, facecolor)`` for each layer stack.
        memory_label: write "memory" on the arrow from the encoder to the decoder.

    Returns:
        ``(fig, ax)``.
    """
    fig, ax = plt.subplots(figsize=(10, 11))
    ax.set_xlim(0, 10)
    ax.set_ylim(12.2, 0)  # top to bottom: input at the top
    ax.axis("off")
    for label, notebook, x, y, w, h in _STACKS:
        linewidth, edgecolor, facecolor = stack_style(notebook)
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", linewidth=linewidth,
                                    edgecolor=edgecolor, facecolor=facecolor))
        ax.text(x + 0.1, y + h + 0.3, label, ha="left", va="center", fontsize=12, style="italic")
    for label, notebook, x, y, w, h in _BOXES:
        linewidth, edgecolor, facecolor, bold = box_style(label, notebook)
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.04", linewidth=linewidth,
                                    edgecolor=edgecolor, facecolor=facecolor))
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=11, weight="bold" if bold else None)
        ax.text(x + w - 0.05, y + 0.05, notebook, ha="right", va="top", fontsize=8, color="#7f8c8d")
    for start, end in _ARROWS:
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, color="#34495e"))
    ax.text(2.5, 0.0, "Encoder: reads German", ha="center", fontsize=14, weight="bold")
    ax.text(7.5, 0.0, "Decoder: writes English", ha="center", fontsize=14, weight="bold")
    if memory_label:
        ax.text(5.15, 7.0, "memory", ha="center", fontsize=10, style="italic", rotation=-30)
    return fig, ax


def draw_architecture(highlight: str | None = None, title: str = "The Transformer you will build",
                      gpt_note: bool = False):
    """Draw the model as boxes; boxes whose notebook numbers include ``highlight`` are coloured.

    Args:
        highlight: a notebook number such as ``"04"``, or None to colour nothing.
        title: the figure title.
        gpt_note: outline the cross-attention with a dashed line and note that the decoder without it is the
            block of a GPT (notebook 15); notebook 00's map.

    Returns:
        The matplotlib Figure.
    """
    def on(notebook: str) -> bool:
        return highlight is not None and highlight in notebook.split()

    fig, ax = _draw(
        lambda _, n: (2, "#c0392b", "#f5b7b1", True) if on(n) else (1, "#34495e", "white", False),
        lambda n: (2.5, "#c0392b", "#fdf2e9") if on(n) else (1.5, "#7f8c8d", "#f4f6f6"))
    if gpt_note:
        _, _, x, y, w, h = next(box for box in _BOXES if box[0].startswith("Cross-attention"))
        ax.add_patch(FancyBboxPatch((x - 0.12, y - 0.12), w + 0.24, h + 0.24, boxstyle="round,pad=0.04",
                                    linewidth=1.5, linestyle="--", edgecolor="#8e44ad", facecolor="none"))
        ax.text(0.6, 9.5, "Without the encoder and this cross-attention\n(with its Add & LayerNorm), the decoder\nlayer is a GPT block (notebook 15)",
                ha="left", va="center", fontsize=11, color="#8e44ad", style="italic")
        ax.add_patch(FancyArrowPatch((4.2, 9.1), (x - 0.15, y + h / 2), arrowstyle="-|>", mutation_scale=12,
                                     color="#8e44ad", linestyle="--"))
    any_on = highlight is not None and any(highlight in box[1].split() for box in _BOXES + _STACKS)
    ax.set_title(title + (f" (notebook {highlight} in red)" if any_on else ""), fontsize=16, pad=20)
    fig.tight_layout()
    return fig


def draw_ownership(yours: set[str], title: str = "Whose code runs in your Transformer"):
    """Draw the model with every box coloured by whose code runs in it: green yours, grey course_lib.

    Args:
        yours: notebook numbers (``"02"`` ... ``"09"``) whose parts are all the student's own; a box is
            yours when every building notebook it lists (02-09) is in this set, except the shift right and
            the output layer, which course_lib builds around the parts (not saved parts). The drawing is the
            translator's: notebook 15's part (a GPT's block, not in the translator) has no box, and a
            ``"15"`` in ``yours`` changes nothing.
        title: the figure title.

    Returns:
        The matplotlib Figure.
    """
    def owned(notebooks: str, label: str = "") -> bool:
        if label in _COURSE_GLUE:
            return False
        building = [n for n in notebooks.split() if "02" <= n <= "09"]
        return bool(building) and all(n in yours for n in building)

    fig, ax = _draw(
        lambda label, n: (2, "#1e8449", "#abebc6", True) if owned(n, label) else (1, "#7f8c8d", "#e5e7e9", False),
        lambda n: (1.5, "#1e8449", "#eafaf1") if owned(n) else (1.5, "#7f8c8d", "#f4f6f6"),
        memory_label=False)
    ax.legend(handles=[Patch(facecolor="#abebc6", edgecolor="#1e8449", label="your code (my_transformer)"),
                       Patch(facecolor="#e5e7e9", edgecolor="#7f8c8d", label="course_lib")],
              loc="lower left", fontsize=11, frameon=False)
    ax.set_title(title, fontsize=16, pad=20)
    fig.tight_layout()
    return fig
