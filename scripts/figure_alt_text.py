"""Alternative text for the figures the notebooks store, written for the course website (``make site``).

A figure output carries no description of its own, so the website would otherwise label every picture
with its file name (a hash). This module reads the cell that drew the figure instead: the course's
plotting helpers (``course_lib.plotting``, ``course_lib.diagrams``) say what kind of picture it is, and
their ``title=``, ``xlabel=``, ``ylabel=`` arguments and the names of the plotted series say what it
shows. A helper called without ``title=`` draws its default title, which is read from the helper's
own source. A figure whose cell gives no such clue is described by the notebook section it stands in.

``scripts/build_site.py`` stores the result in the staged copy of each notebook (myst-nb's cell
metadata ``mystnb.image.alt``); ``tests/test_site.py`` checks in the browser that no figure is left
without a meaningful text.

Usage (prints every figure's text):
    python -m scripts.figure_alt_text notebooks/*.ipynb
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
FIGURE_MIME_TYPES = ("image/png", "image/svg+xml", "image/jpeg")

# What kind of picture each drawing helper makes, in a few words a screen-reader user can picture.
KINDS = {
    "plot_attention": "Heatmap of attention weights (rows: queries, columns: keys)",
    "plot_attention_heads": "Heatmaps of attention weights, one per head",
    "plot_attention_layers": "Heatmaps of attention weights, one row of heads per layer",
    "plot_label_smoothing": "Chart of label-smoothed target probabilities",
    "plot_parameter_counts": "Horizontal bar chart of parameter counts",
    "plot_bar": "Bar chart",
    "plot_one_hot_vs_dense": "Two heatmaps: one-hot rows next to dense vectors",
    "plot_embeddings_2d": "Scatter plot of labelled points",
    "plot_distribution": "Histograms",
    "plot_heatmap": "Heatmap",
    "plot_positional_encoding": "Heatmap of a positional-encoding table (rows: positions, columns: dimensions)",
    "plot_similarity": "Heatmap of similarities",
    "plot_pe_waves": "Curves of positional-encoding dimensions over positions",
    "plot_lines": "Line chart",
    "plot_lr_schedule": "Line chart of the learning rate per step",
    "plot_history": "Training curves per epoch",
    "plot_mask": "Mask picture (teal: may attend, grey: blocked)",
    "plot_masks_side_by_side": "Mask pictures side by side (teal: may attend, grey: blocked)",
    "draw_architecture": "Diagram of the Transformer: the encoder (reads German) and the decoder (writes English) "
                         "as columns of boxes, each box marked with the notebook that builds it",
    "draw_ownership": "Diagram of the Transformer's boxes, coloured by whose code runs in each (green: yours, grey: course_lib)",
    "Explorer": "Still picture of the attention explorer (run the notebook in Jupyter to use it interactively)",
}
# Arguments that name what is plotted: a constant dict passed there has the series (or panel) names as keys.
SERIES_ARGUMENT = {"plot_lines": 1, "plot_distribution": 0, "plot_masks_side_by_side": 0, "plot_bar": 0}
HELPER_SOURCES = ("course_lib/plotting/*.py", "course_lib/diagrams.py")


@cache
def default_titles() -> dict[str, str]:
    """``{helper name: the title it draws when called without title=}``, read from the helpers' source."""
    titles = {}
    for pattern in HELPER_SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if not isinstance(node, ast.FunctionDef) or node.name not in KINDS:
                    continue
                arguments = node.args.args + node.args.kwonlyargs
                defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + node.args.defaults
                defaults += node.args.kw_defaults
                for argument, default in zip(arguments, defaults, strict=True):
                    if argument.arg == "title" and isinstance(default, ast.Constant) and isinstance(default.value, str):
                        titles[node.name] = default.value
    return titles


def _text(node: ast.AST | None) -> str | None:
    """The string an argument holds when it can be read without running the cell (f-string gaps become …)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [v.value if isinstance(v, ast.Constant) else "…" for v in node.values]
        return "".join(str(p) for p in parts)
    return None


def _name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


class _Events(ast.NodeVisitor):
    """The drawing calls of a cell in source order, with ``"show"`` wherever ``plt.show()`` ends a figure."""

    def __init__(self):
        self.events: list[ast.Call | str] = []

    def visit_FunctionDef(self, node):  # a helper defined in the cell draws only when called
        pass

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)  # arguments run first
        name = _name(node)
        if name == "show":
            self.events.append("show")
        elif name in KINDS or name in ("suptitle", "set_title"):
            self.events.append(node)


def _figures(source: str) -> list[list[ast.Call]]:
    """The drawing calls of each figure the cell shows, in order (empty when the cell cannot be read)."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    visitor = _Events()
    visitor.visit(tree)
    figures, current = [], []
    for event in [*visitor.events, "show"]:
        if event == "show":
            if any(_name(call) in KINDS for call in current):
                figures.append(current)
            current = []
        else:
            current.append(event)
    return figures


NUMBERS = {2: "Two", 3: "Three", 4: "Four"}


def _lower(text: str) -> str:
    return text[0].lower() + text[1:]


def _join(items: Iterable[str]) -> str:
    items = [f"“{item}”" for item in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def describe(calls: list[ast.Call]) -> str:
    """One sentence or two about the figure drawn by ``calls`` (the helper calls of one figure)."""
    helpers = [call for call in calls if _name(call) in KINDS]
    first = _name(helpers[0])
    suptitle = next((_text(call.args[0]) for call in calls if _name(call) == "suptitle" and call.args), None)
    titles = [_text(_keyword(call, "title")) or default_titles().get(_name(call)) for call in helpers]
    titles += [_text(call.args[0]) for call in calls if _name(call) == "set_title" and call.args]
    # drop matplotlib's math markers, and titles that are mostly computed (they read "…: padded to …")
    titles = [re.sub(r"\$([^$]*)\$", r"\1", t) for t in titles if t and not t.startswith("…")]
    if len(helpers) == 1:
        kind = KINDS[first]
    elif len({_name(call) for call in helpers}) == 1:
        kind = f"{NUMBERS.get(len(helpers), len(helpers))} panels side by side, each a {_lower(KINDS[first])}"
    else:
        kinds = ", ".join(_lower(KINDS[_name(call)]) for call in helpers)
        kind = f"{NUMBERS.get(len(helpers), len(helpers))} panels side by side: {kinds}"
    if suptitle:
        text = f"{kind}, titled “{suptitle}”" + (f"; panels {_join(titles)}" if titles else "")
    elif len(titles) == 1:
        text = f"{kind}, titled “{titles[0]}”"
    elif titles:
        text = f"{kind}; panels {_join(titles)}"
    else:
        text = kind
    details = []
    highlight = _text(_keyword(helpers[0], "highlight"))
    if first == "draw_architecture" and highlight:
        details.append(f"the parts built in notebook {highlight} are highlighted")
    position = SERIES_ARGUMENT.get(first)
    series = helpers[0].args[position] if position is not None and len(helpers[0].args) > position else None
    if isinstance(series, ast.Dict) and all(_text(k) for k in series.keys):
        details.append(("masks " if "mask" in first else "series ") + _join(_text(k) for k in series.keys))
    xlabel, ylabel = (_text(_keyword(helpers[0], axis)) for axis in ("xlabel", "ylabel"))
    if ylabel and xlabel:
        details.append(f"{ylabel} against {xlabel}")
    elif xlabel or ylabel:
        details.append(f"horizontal axis: {xlabel}" if xlabel else f"vertical axis: {ylabel}")
    return text + "".join(f"; {detail}" for detail in details) + "."


def _headings(markdown: str) -> list[tuple[int, str]]:
    found, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if match:
            found.append((len(match.group(1)), re.sub(r"[*_`]", "", match.group(2))))
    return found


def figure_count(cell) -> int:
    """How many figures (image outputs) a code cell stores."""
    return sum(
        1 for output in cell.get("outputs", [])
        if output.get("output_type") in ("display_data", "execute_result")
        and any(mime in output.get("data", {}) for mime in FIGURE_MIME_TYPES)
    )


def alt_texts(nb) -> dict[int, list[str]]:
    """``{cell index: one text per figure the cell stores}`` for every code cell that stores a figure.

    Args:
        nb: the notebook (nbformat v4 node).
    """
    notebook_title, section, texts = "this notebook", None, {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for level, heading in _headings(cell.source):
                if level == 1 and notebook_title == "this notebook":
                    notebook_title = f"notebook {heading}"
                else:
                    section = heading
            continue
        count = figure_count(cell) if cell.cell_type == "code" else 0
        if not count:
            continue
        figures = _figures(cell.source)
        where = f"section “{section}” of {notebook_title}" if section else notebook_title
        if len(figures) == count:
            texts[index] = [describe(calls) for calls in figures]
        else:  # drawn in a way this module cannot read: say where the figure stands
            texts[index] = [f"Figure{f' {i + 1} of {count}' if count > 1 else ''} in {where}." for i in range(count)]
    return texts


def main(argv: list[str] | None = None) -> int:
    for path in argv if argv is not None else sys.argv[1:]:
        for index, texts in alt_texts(nbformat.read(path, as_version=4)).items():
            for text in texts:
                print(f"{Path(path).name} cell {index}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
