"""An interactive explorer of a trained translation model, built from ipywidgets.

Type a German sentence and see its tokens (unknown words marked), the greedy translation and the one
beam search returns; pick an attention kind (cross-attention, decoder or encoder self-attention), a layer
("layer 2 of 2 (last)") and a head ("head 3 of 4" or "all heads (mean)") and see the heatmap, its rows
and columns named in words ("rows: English word being written", "columns: German word read"); step
through the greedy decoding word by word (the prefix so far, the model's top next tokens with their
probabilities, and the attention rows up to that step, with its own choice of map); read every
beam-search hypothesis with its log-probability and length-normalised score. Every control has a
tooltip; a sentence that cannot be translated clears the old result and says why in one line.

Works with the shipped checkpoint or with any course ``Transformer`` and its vocabularies, e.g. the one
you trained in notebook 10::

    from course_lib.explorer import Explorer
    Explorer.from_checkpoint()                                   # data/checkpoints/toy_de_en.pt
    Explorer(model, src_vocab, tgt_vocab, Tokenizer("de"))       # your own model

The widgets run in JupyterLab, Jupyter Notebook, VS Code and Colab. Where no widget front end runs (a
notebook executed by nbval or nbclient, the course website, GitHub's viewer) the output shows a static
figure of the explorer's starting state instead: the explorer displays one output that carries both the
widget and that picture, and every front end picks what it can show.

The numbers come from :mod:`course_lib.decoding` (``greedy_decode``, ``beam_search``,
``sequence_log_probs``, ``length_penalty``) and :func:`course_lib.model.record_attention`; the pictures
from :func:`course_lib.plotting.plot_attention`. :func:`analyze` does all the computing and needs no
widgets; ``tests/test_explorer.py`` drives the callbacks without a browser.

The same look inside a decoder-only language model (notebook 15, :mod:`course_lib.gpt`)::

    from course_lib.explorer import LanguageModelExplorer
    LanguageModelExplorer(model, vocab, default_tokenizers()[1], prompt="the cat")

Type a prompt (or none), choose greedy or sampling (temperature, top-k, seed), read the continuation; pick a
layer and a head and see the causal self-attention map of the whole sentence (rows: the word that reads,
columns: the earlier words it reads; nothing above the diagonal); step through the generation with the
candidates of every step and their probabilities (:func:`course_lib.gpt.next_token_probs`). Built from the
same pieces as the translator's explorer (menus, map figure, static picture where widgets do not run);
:func:`analyze_language_model` does the computing, ``tests/test_explorer_language_model.py`` checks both.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import nn

from .decoding import beam_search, greedy_decode, length_penalty, output_lengths, sequence_log_probs
from .model import record_attention
from .plotting import plot_attention
from .tokenization import Tokenizer, Vocab, detokenize

DEFAULT_SENTENCE = "Die Katze schläft, weil der Hund den Ball gefunden hat."
SHIPPED_CHECKPOINT = Path(__file__).resolve().parent.parent / "data" / "checkpoints" / "toy_de_en.pt"
# Attention kinds as shown in the menu -> (part of the model, attention module name suffix).
KINDS = {
    "cross-attention": ("decoder", "cross_attn"),
    "decoder self-attention": ("decoder", "self_attn"),
    "encoder self-attention": ("encoder", "self_attn"),
}
MEAN = "mean of heads"  # the head menus' value for the mean over heads (shown as "all heads (mean)")
# What the rows and the columns of each kind of map are, in words (axis titles, tooltips, explanations).
AXES = {
    "cross-attention": ("English word being written", "German word read"),
    "decoder self-attention": ("English word being written", "earlier English word read"),
    "encoder self-attention": ("German word being updated", "German word read"),
}
# How to read each kind of map, for someone who does not read code (shown beside the map).
READING = {
    "cross-attention": "A bright cell: to write that English word, the model read mostly that German word. "
                       "Word order differs between the languages, so the bright cells need not form a diagonal.",
    "decoder self-attention": "How much each English word being written looks back at the English already "
                              "written (&lt;bos&gt; = start of sentence). Words not yet written cannot be read, "
                              "so the top right stays dark.",
    "encoder self-attention": "How much each German word gathers from the other German words, before any "
                              "English is written.",
}


@dataclass(frozen=True)
class Candidate:
    """One candidate translation.

    Attributes:
        method: ``"greedy"`` or ``"beam k"``.
        tokens: output tokens without specials.
        log_prob: summed log-probability of the output (``<eos>`` included) under the model.
        score: ``log_prob / length_penalty(length, alpha)``, the score beam search ranks by.
        length: output length in tokens, ``<eos>`` included.
        chosen: True for the hypothesis beam search returns (the best score); always True for greedy.
    """

    method: str
    tokens: list[str]
    log_prob: float
    score: float
    length: int
    chosen: bool


@dataclass
class Analysis:
    """Everything the explorer shows for one sentence (computed by :func:`analyze`).

    Attributes:
        sentence: the German input.
        src_tokens: its tokens followed by ``"<eos>"`` (the encoder's input, as words).
        unknown: tokens the source vocabulary does not know (the model reads them as ``<unk>``).
        out_tokens: the greedy output tokens ending with ``"<eos>"`` (unless the length limit cut it).
        candidates: the greedy output, then every beam hypothesis best score first.
        attention: ``{module name: (n_heads, q_len, k_len)}`` from one teacher-forced pass over the greedy
            output, e.g. ``"decoder.layers.1.cross_attn"``; row ``t`` of a decoder map is the attention used
            to predict ``out_tokens[t]``.
        next_token_probs: ``(out_len, tgt_vocab)``: the model's next-token distribution at every step.
        tgt_itos: the target vocabulary (id -> token) for reading ``next_token_probs``.
    """

    sentence: str
    src_tokens: list[str]
    unknown: list[str]
    out_tokens: list[str]
    candidates: list[Candidate]
    attention: dict[str, np.ndarray]
    next_token_probs: np.ndarray
    tgt_itos: list[str] = field(repr=False)

    @property
    def translation(self) -> str:
        """The greedy translation as one string."""
        return detokenize([t for t in self.out_tokens if t != "<eos>"])

    @property
    def decoder_input_tokens(self) -> list[str]:
        """``<bos>`` followed by the greedy output without its last token (what the decoder reads)."""
        return ["<bos>", *self.out_tokens[:-1]]

    def names(self, kind: str) -> list[str]:
        """Module names of one attention kind, first layer first.

        Args:
            kind: a key of :data:`KINDS`.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
        part, suffix = KINDS[kind]
        return _layer_order(n for n in self.attention if n.startswith(part + ".") and n.endswith(suffix))

    def n_heads(self) -> int:
        """Heads per attention layer."""
        return next(iter(self.attention.values())).shape[0]

    def weights(self, kind: str, layer: int, head: int | None) -> np.ndarray:
        """One attention map ``(q_len, k_len)``.

        Args:
            kind: a key of :data:`KINDS`.
            layer: layer index (0 = first).
            head: head index, or None for the mean over heads.
        """
        names = self.names(kind)
        if not 0 <= layer < len(names):
            raise ValueError(f"layer must be in [0, {len(names)}) for {kind}, got {layer}")
        return _pick_head(self.attention[names[layer]], head)

    def labels(self, kind: str) -> tuple[list[str], list[str]]:
        """``(row tokens, column tokens)`` of the maps of one kind."""
        if kind == "cross-attention":
            return self.out_tokens, self.src_tokens
        if kind == "decoder self-attention":
            return self.out_tokens, self.decoder_input_tokens
        if kind == "encoder self-attention":
            return self.src_tokens, self.src_tokens
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")

    def top_next_tokens(self, step: int, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` most likely next tokens at decoding step ``step`` (1 = the first output token).

        Args:
            step: 1 ... ``len(out_tokens)``.
            k: how many tokens.
        """
        if not 1 <= step <= len(self.out_tokens):
            raise ValueError(f"step must be in [1, {len(self.out_tokens)}], got {step}")
        return _top_tokens(self.next_token_probs[step - 1], self.tgt_itos, k)


def _layer_order(names) -> list[str]:
    """Module names sorted as a person counts layers: ``layers.2`` before ``layers.10``."""
    return sorted(names, key=lambda n: [int(p) if p.isdigit() else p for p in n.split(".")])


def _pick_head(stack: np.ndarray, head: int | None) -> np.ndarray:
    """One head's map ``(q_len, k_len)`` of a layer's ``(n_heads, q_len, k_len)``, or their mean (head None)."""
    if head is None:
        return stack.mean(axis=0)
    if not 0 <= head < stack.shape[0]:
        raise ValueError(f"head must be in [0, {stack.shape[0]}) or None for the mean, got {head}")
    return stack[head]


def _top_tokens(probs: np.ndarray, itos: list[str], k: int) -> list[tuple[str, float]]:
    """The ``k`` most likely tokens of a ``(vocab,)`` distribution with their probabilities, most likely first."""
    order = np.argsort(-probs, kind="stable")[:k]
    return [(itos[i], float(probs[i])) for i in order]


def analyze(
    model: nn.Module,
    sentence: str,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    tokenizer: Callable[[str], list[str]],
    beam_size: int = 4,
    length_penalty_alpha: float = 0.6,
) -> Analysis:
    """Translate one sentence greedily and by beam search and record every attention map.

    Args:
        model: a trained course ``Transformer`` (any device; put in eval mode here).
        sentence: the German sentence.
        src_vocab, tgt_vocab: the vocabularies the model was trained with.
        tokenizer: the source tokenizer used in training, e.g. ``Tokenizer("de")``.
        beam_size: hypotheses kept by beam search.
        length_penalty_alpha: GNMT alpha for the beam's length-normalised score.

    Returns:
        An :class:`Analysis`.
    """
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    tokens = tokenizer(sentence)
    if not tokens:
        raise ValueError("sentence has no tokens: type a German sentence")
    max_len = getattr(getattr(model, "config", None), "max_len", None)
    if max_len is not None and len(tokens) + 1 > max_len:
        raise ValueError(f"sentence has {len(tokens)} tokens; the model reads at most {max_len - 1}")
    device = next(model.parameters()).device
    src = torch.tensor([src_vocab.encode(tokens, add_eos=True)], device=device)  # (1, src_len)

    greedy = greedy_decode(model, src)  # (1, out_len)
    greedy = greedy[:, : int(output_lengths(greedy, tgt_vocab.pad_id).max())]  # drop trailing <pad>
    hypotheses, beam_scores = beam_search(model, src, beam_size, length_penalty_alpha, return_all=True)
    # hypotheses (1, k, out_len), beam_scores (1, k)

    candidates = []
    greedy_log_prob = float(sequence_log_probs(model, src, greedy, pad_id=tgt_vocab.pad_id)[0])
    greedy_length = int(output_lengths(greedy, tgt_vocab.pad_id)[0])
    candidates.append(Candidate("greedy", tgt_vocab.decode(greedy[0].tolist()), greedy_log_prob,
                                greedy_log_prob / float(length_penalty(torch.tensor(greedy_length), length_penalty_alpha)),
                                greedy_length, True))
    lengths = output_lengths(hypotheses[0], tgt_vocab.pad_id)  # (k,)
    normalised = beam_scores[0] / length_penalty(lengths, length_penalty_alpha)  # (k,)
    live = [i for i in range(hypotheses.size(1)) if bool(torch.isfinite(beam_scores[0, i]))]
    live.sort(key=lambda i: -float(normalised[i]))
    for rank, i in enumerate(live):
        candidates.append(Candidate(f"beam {beam_size}", tgt_vocab.decode(hypotheses[0, i].tolist()),
                                    float(beam_scores[0, i]), float(normalised[i]), int(lengths[i]), rank == 0))

    was_training = model.training
    model.eval()
    tgt_in = torch.cat([torch.full_like(greedy[:, :1], tgt_vocab.bos_id), greedy[:, :-1]], dim=1)  # (1, out_len)
    try:
        with torch.no_grad(), record_attention(model) as maps:
            logits = model(src, tgt_in)  # (1, out_len, tgt_vocab)
    finally:
        model.train(was_training)
    probs = logits.float().softmax(dim=-1)[0].cpu().numpy()  # (out_len, tgt_vocab)
    attention = {name: w[0].float().cpu().numpy() for name, w in maps.items()}  # (n_heads, q_len, k_len) each
    return Analysis(
        sentence=sentence,
        src_tokens=[*tokens, "<eos>"],
        unknown=sorted({t for t in tokens if t not in src_vocab.stoi}),
        out_tokens=tgt_vocab.decode(greedy[0].tolist(), strip_specials=False),
        candidates=candidates,
        attention=attention,
        next_token_probs=probs,
        tgt_itos=list(tgt_vocab.itos),
    )


def layer_name(layer: int, n_layers: int) -> str:
    """A layer as a person counts it: ``"layer 1 of 2"``, ``"layer 2 of 2 (last)"``.

    Args:
        layer: layer index, 0 = first.
        n_layers: layers of that kind.
    """
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer must be in [0, {n_layers}), got {layer}")
    return f"layer {layer + 1} of {n_layers}" + (" (last)" if layer == n_layers - 1 and n_layers > 1 else "")


def head_name(head: int | None, n_heads: int) -> str:
    """A head as a person counts it: ``"head 3 of 4"`` for index 2, ``"all heads (mean)"`` for None.

    Args:
        head: head index (0 = first), or None for the mean over heads.
        n_heads: heads per layer.
    """
    if head is None:
        return "all heads (mean)"
    if not 0 <= head < n_heads:
        raise ValueError(f"head must be in [0, {n_heads}) or None for the mean, got {head}")
    return f"head {head + 1} of {n_heads}"


_DPI = 72  # pixels per inch of the explorer's pictures: 12-point tick labels are 12 pixels high
_CELL = 0.25  # inches per row and column of a map: a 13-word sentence fits a laptop screen beside the controls
_NOT_YET = "#d9d9d9"  # grey over the rows (and columns) of words not written yet in the step-by-step view


def _figsize(n_rows: int, n_cols: int, rows: list[str], cols: list[str], title_lines: int = 1) -> tuple[float, float]:
    """Inches for one map: cells plus room for the tick labels, the axis titles, the colour bar and the title.

    The minimum height keeps the rotated row title ("rows: ...") as long as the map beside it.
    """
    width = _CELL * n_cols + 2.4 + 0.1 * max(map(len, rows), default=0)
    height = _CELL * n_rows + 1.0 + 0.3 * title_lines + 0.07 * max(map(len, cols), default=0)
    return min(max(width, 6.0), 12.0), min(max(height, 4.2), 10.0)


def attention_figure(analysis: Analysis, kind: str = "cross-attention", layer: int = -1, head: int | None = None,
                     upto_step: int | None = None, title: str | None = None) -> Figure:
    """Heatmap of one attention map of an analysed sentence, its rows and columns named in words.

    Args:
        analysis: from :func:`analyze`.
        kind: a key of :data:`KINDS`.
        layer: layer index; negative counts from the last layer.
        head: head index, or None for the mean over heads.
        upto_step: for decoder maps, the decoding step reached: the rows of later steps (and, for decoder
            self-attention, the columns of words not written yet) are greyed out and unlabelled, so the
            picture keeps its size while stepping.
        title: a first title line (e.g. the sentence) above the one naming the map.

    Returns:
        The Figure (drawn by :func:`course_lib.plotting.plot_attention`; axis titles from :data:`AXES`,
        e.g. "rows: English word being written", "columns: German word read").
    """
    n_layers = len(analysis.names(kind))
    if not -n_layers <= layer < n_layers:
        raise ValueError(f"layer must be in [{-n_layers}, {n_layers}) for {kind}, got {layer}")
    layer_index = layer % n_layers
    weights = analysis.weights(kind, layer_index, head)  # (q_len, k_len)
    rows, cols = analysis.labels(kind)
    reached = None
    if upto_step is not None and KINDS[kind][0] == "decoder":
        if not 1 <= upto_step <= weights.shape[0]:
            raise ValueError(f"upto_step must be in [1, {weights.shape[0]}], got {upto_step}")
        reached = upto_step
    name = f"{kind.capitalize()}, {layer_name(layer_index, n_layers).removesuffix(' (last)')}, " \
           f"{head_name(head, analysis.n_heads())}"
    # Decoder self-attention: column j is the word written at step j (column 0: <bos>), so its columns grey too.
    return _map_figure(weights, rows, cols, f"{title}\n{name}" if title else name, AXES[kind], reached,
                       grey_columns=kind == "decoder self-attention")


def _map_figure(weights: np.ndarray, rows: list[str], cols: list[str], title: str, axes: tuple[str, str],
                reached: int | None = None, grey_columns: bool = False) -> Figure:
    """One attention map as the explorers draw it: cells sized for the screen, the axes named in words, and
    optionally the rows (and columns) of the words not written yet greyed out and unlabelled.

    Args:
        weights: ``(n_rows, n_cols)``, each row a distribution.
        rows, cols: the row and column tokens.
        title: the title (lines separated by ``"\\n"``).
        axes: ``(row words, column words)`` for the axis titles "rows: ..." and "columns: ...".
        reached: rows from this index on are greyed out (None: every row shown).
        grey_columns: grey the columns from ``reached`` on too (a map of a sentence read by itself).
    """
    n_rows, n_cols = weights.shape
    if reached is None:
        reached = n_rows
    if reached < n_rows:
        weights = weights.copy()
        weights[reached:] = 0.0  # hidden under grey below
        rows = [*rows[:reached], *[""] * (n_rows - reached)]
        if grey_columns:
            cols = [*cols[:reached], *[""] * (n_cols - reached)]
    fig, ax = plt.subplots(figsize=_figsize(n_rows, n_cols, rows, cols, title.count("\n") + 1), layout="constrained")
    plot_attention(weights, query_tokens=rows, key_tokens=cols, title=title, ax=ax, annotate=False)
    row_words, col_words = axes
    ax.set_ylabel(f"rows: {row_words}")
    ax.set_xlabel(f"columns: {col_words}")
    if reached < n_rows:
        ax.axhspan(reached - 0.5, n_rows - 0.5, color=_NOT_YET, zorder=3)
        if grey_columns:
            ax.axvspan(reached - 0.5, n_cols - 0.5, color=_NOT_YET, zorder=3)
        ax.text((n_cols - 1) / 2, (reached + n_rows - 1) / 2, "not written yet", ha="center", va="center",
                color="#555555", zorder=4)
    return fig


def _png(fig: Figure, dpi: int = _DPI) -> bytes:
    """Render a Figure to PNG bytes and close it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def _candidates_html(analysis: Analysis) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(c.method)}{' ✓' if c.chosen and c.method != 'greedy' else ''}</td>"
        f"<td>{html.escape(' '.join(c.tokens))}</td><td>{c.log_prob:.3f}</td><td>{c.score:.3f}</td><td>{c.length}</td></tr>"
        for c in analysis.candidates
    )
    return ("<b>Candidates</b> (✓ = the hypothesis beam search returns; log p = how likely the model finds the "
            "whole output; the score divides it by a length penalty so longer outputs are not punished):"
            "<table class='course-candidates'><tr><th>method</th><th>output</th><th>log p</th>"
            f"<th>score (length-normalised)</th><th>tokens</th></tr>{rows}</table>")


def summary_html(analysis: Analysis) -> str:
    """HTML of the tokens, the greedy translation and the one beam search returns."""
    chips, unknown = _token_chips(analysis.src_tokens, analysis.unknown)
    beam = next((c for c in analysis.candidates if c.chosen and c.method != "greedy"), None)
    beam_line = (f"<br><b>Translation ({html.escape(beam.method)}):</b> {html.escape(detokenize(beam.tokens))} "
                 "<i>(every hypothesis: the Candidates tab)</i>" if beam is not None else "")
    return (f"<b>Tokens:</b> {chips}{unknown}<br><b>Translation (greedy):</b> {html.escape(analysis.translation)}"
            f"{beam_line}")


def step_html(analysis: Analysis, step: int, k: int = 5) -> str:
    """HTML of one decoding step: the prefix so far, the chosen token and the top ``k`` next tokens."""
    prefix = " ".join(analysis.out_tokens[: step - 1]) or "(nothing yet)"
    chosen = analysis.out_tokens[step - 1]
    return (f"<b>Step {step} of {len(analysis.out_tokens)}.</b> Written so far: <code>&lt;bos&gt; {html.escape(prefix)}</code>"
            f"<br>Greedy picks <b>{html.escape(chosen)}</b>. The model's top {k} next tokens:"
            f"{_top_table(analysis.top_next_tokens(step, k), chosen)}")


def _token_chips(tokens: list[str], unknown: list[str]) -> tuple[str, str]:
    """HTML of tokens as chips (unknown ones in red) and a line naming the unknown ones ("" when none)."""
    chips = " ".join(
        f"<code style='color:{'#c0392b' if t in unknown else 'inherit'}'>{html.escape(t)}</code>" for t in tokens
    )
    line = (f"<br>unknown to the model (read as <code>&lt;unk&gt;</code>): {html.escape(', '.join(unknown))}"
            if unknown else "")
    return chips, line


def _top_table(top: list[tuple[str, float]], chosen: str) -> str:
    """HTML table of candidate tokens and their probabilities, the chosen one in bold."""
    rows = "".join(
        f"<tr><td>{'<b>' if token == chosen else ''}{html.escape(token)}{'</b>' if token == chosen else ''}</td>"
        f"<td>{p:.3f}</td></tr>"
        for token, p in top
    )
    return f"<table class='course-step'><tr><th>token</th><th>probability</th></tr>{rows}</table>"


def _error_html(what: str, error: str) -> str:
    """One red line: ``⚠ <what>: <error>`` (both escaped)."""
    return f"<span style='color:#c0392b'>⚠ {html.escape(what)}: {html.escape(error)}</span>"


def one_line(error: BaseException, limit: int = 200) -> str:
    """An exception as one short line: its message (with the type when it is not a ValueError/TypeError)."""
    text = " ".join(str(error).split())
    if not isinstance(error, (ValueError, TypeError)) or not text:
        text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compact(text: str) -> str:
    """HTML at normal line spacing (an ipywidgets HTML widget spaces lines as far apart as its controls)."""
    return f"<div style='line-height:1.4'>{text}</div>"


_MENU_WIDTH = "260px"  # the layer and head menus (and the translator's kind menu)


def _caption(text: str, tooltip: str = ""):
    """A bold caption (an ipywidgets HTML) with an optional tooltip."""
    import ipywidgets as w

    title = f" title='{html.escape(tooltip, quote=True)}'" if tooltip else ""
    return w.HTML(f"<b{title}>{html.escape(text)}</b>")


def _layer_head_menus():
    """Empty ``(layer, head)`` dropdowns, filled by :func:`_fill_layer_head_menus`."""
    import ipywidgets as w

    # No descriptions: with one, ipywidgets shows the tooltip on the description only, not the menu.
    return (w.Dropdown(options=[], value=None, tooltip=TOOLTIPS["layer"], layout=w.Layout(width=_MENU_WIDTH)),
            w.Dropdown(options=[(head_name(None, 1), MEAN)], value=MEAN, tooltip=TOOLTIPS["head"],
                       layout=w.Layout(width=_MENU_WIDTH)))


def _fill_layer_head_menus(layer, head, n_layers: int, n_heads: int) -> None:
    """Layer and head choices ("layer 2 of 2 (last)", "all heads (mean)", "head 3 of 4"); a selection that still
    exists is kept, else the last layer and the mean over heads are chosen."""
    keep_layer = layer.value if layer.value in range(n_layers) else n_layers - 1  # default: the last layer
    keep_head = head.value if head.value in range(n_heads) else MEAN
    layer.options = [(layer_name(i, n_layers), i) for i in range(n_layers)]
    head.options = [(head_name(None, n_heads), MEAN), *((head_name(h, n_heads), h) for h in range(n_heads))]
    layer.value, head.value = keep_layer, keep_head


def _head_value(menu) -> int | None:
    """The head a head menu names: an index, or None for the mean over heads."""
    return None if menu.value == MEAN else int(menu.value)


def _beside(controls: list, picture):
    """Controls in a column left of the picture, so the picture starts right under the tab bar (and keeps its
    shape: not stretched to the column's height)."""
    import ipywidgets as w

    return w.HBox([w.VBox(controls, layout=w.Layout(width="280px", min_width="280px")), picture],
                  layout=w.Layout(align_items="flex-start"))


def _display_bundle(widget, static_figure: Callable[[], Figure] | None, text: str) -> dict:
    """The widget for front ends that run widgets, a PNG of ``static_figure()`` for all others (none when it is
    None), and ``text`` as the plain-text form."""
    bundle = dict(widget._repr_mimebundle_() or {})
    if static_figure is not None:
        bundle["image/png"] = base64.b64encode(_png(static_figure(), dpi=90)).decode("ascii")
    bundle["text/plain"] = text
    return bundle


# Tooltips (shown when the mouse rests on a control): what it does, in words.
TOOLTIPS = {
    "sentence": "Type a German sentence, then press Enter or click Translate",
    "translate": "Translate the sentence in the box and redraw everything below",
    "kind": "Which attention to show: cross-attention (English words reading the German sentence), decoder "
            "self-attention (English words reading the English already written) or encoder self-attention "
            "(German words reading each other)",
    "layer": "Which layer: the model stacks its layers, the last one is closest to the output",
    "head": "Each layer has several heads, each with its own attention pattern; 'all heads (mean)' averages them",
    "step_kind": "Which attention to show beside the steps: cross-attention (the English word being written "
                 "reading the German sentence) or decoder self-attention (reading the English already written)",
    "play": "Play the decoding: write the translation one word at a time",
    "step": "Decoding step: step 1 writes the first English word",
}


class Explorer:
    """The widget: type a sentence, read the translations, look at any attention map, step through decoding.

    Args:
        model: a trained course ``Transformer``.
        src_vocab, tgt_vocab: its vocabularies.
        tokenizer: the source tokenizer used in training (e.g. ``Tokenizer("de")``).
        sentence: the sentence shown at the start.
        beam_size: hypotheses kept by beam search.
        length_penalty_alpha: GNMT alpha of the beam's length-normalised score.

    Attributes (the widgets, for scripting and tests): ``sentence``, ``translate``, ``status``, ``summary``,
    ``results`` (everything computed for the sentence: hidden after an error), ``tabs``; in the *Attention*
    tab ``kind``, ``layer``, ``head``, ``reading``, ``attention_image``; in the *Step by step* tab ``play``,
    ``step``, ``step_kind``, ``step_layer``, ``step_head``, ``step_info``, ``step_image``; in the
    *Candidates* tab ``candidates``. ``widget`` is the whole box, ``analysis`` the current :class:`Analysis`
    (None after an error), ``error`` why the last sentence could not be translated in one line (None when it
    could) and ``exception`` the exception itself (for its traceback).
    """

    def __init__(self, model: nn.Module, src_vocab: Vocab, tgt_vocab: Vocab, tokenizer: Callable[[str], list[str]],
                 sentence: str = DEFAULT_SENTENCE, beam_size: int = 4, length_penalty_alpha: float = 0.6):
        import ipywidgets as w

        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {beam_size}")
        self.model, self.src_vocab, self.tgt_vocab, self.tokenizer = model, src_vocab, tgt_vocab, tokenizer
        self.beam_size, self.length_penalty_alpha = beam_size, length_penalty_alpha
        self.analysis: Analysis | None = None
        self.error: str | None = None  # why the last sentence could not be translated (None: it could)
        self.exception: BaseException | None = None
        self._refreshing = False

        def menus(kinds: list[str], kind_tooltip: str) -> tuple[w.Dropdown, w.Dropdown, w.Dropdown]:
            return (w.Dropdown(options=kinds, value=kinds[0], tooltip=kind_tooltip, layout=w.Layout(width=_MENU_WIDTH)),
                    *_layer_head_menus())

        self.sentence = w.Text(value=sentence, placeholder="a German sentence", continuous_update=False,
                               tooltip=TOOLTIPS["sentence"], layout=w.Layout(width="55%"))
        self.translate = w.Button(description="Translate", button_style="primary", tooltip=TOOLTIPS["translate"])
        self.status = w.HTML(layout=w.Layout(display="none"))  # shown only for an error
        self.summary = w.HTML()
        self.kind, self.layer, self.head = menus(list(KINDS), TOOLTIPS["kind"])
        self.reading = w.HTML(layout=w.Layout(width="270px"))
        # No tooltips on the pictures: JupyterLab's ipywidgets 8.1 fails to draw an Image that has one.
        self.attention_image = w.Image(format="png")
        self.play = w.Play(value=1, min=1, max=1, interval=900, show_repeat=False, tooltip=TOOLTIPS["play"])
        # A slider shows its tooltip on its description only, so it has one (unlike the menus).
        self.step = w.IntSlider(value=1, min=1, max=1, description="step", continuous_update=False,
                                tooltip=TOOLTIPS["step"], style={"description_width": "32px"},
                                layout=w.Layout(width="270px"))
        w.jslink((self.play, "value"), (self.step, "value"))
        self.step_kind, self.step_layer, self.step_head = menus(
            [k for k in KINDS if KINDS[k][0] == "decoder"], TOOLTIPS["step_kind"])
        self.step_info = w.HTML(layout=w.Layout(width="270px"))
        self.step_image = w.Image(format="png")
        self.candidates = w.HTML()

        attention_tab = _beside([_caption("Which attention map", TOOLTIPS["kind"]), self.kind, self.layer,
                                 self.head, self.reading], self.attention_image)
        step_tab = _beside([_caption("Decoding step", TOOLTIPS["step"]), self.play, self.step, self.step_info,
                            _caption("Map beside it", TOOLTIPS["step_kind"]), self.step_kind, self.step_layer,
                            self.step_head], self.step_image)
        self.tabs = w.Tab(children=[attention_tab, step_tab, self.candidates])
        for index, tab_title in enumerate(("Attention", "Step by step", "Candidates")):
            self.tabs.set_title(index, tab_title)
        self.results = w.VBox([self.summary, self.tabs])
        self.widget = w.VBox([w.HBox([_caption("German sentence:", TOOLTIPS["sentence"]), self.sentence,
                                      self.translate]), self.status, self.results])
        self.widget.add_class("course-attention-explorer")

        self.translate.on_click(self._on_translate)
        self.sentence.observe(self._on_translate, names="value")
        for control in (self.kind, self.layer, self.head):
            control.observe(self._on_view, names="value")
        for control in (self.step_kind, self.step_layer, self.step_head):
            control.observe(self._on_step_view, names="value")
        self.step.observe(self._on_step, names="value")
        self._on_translate()
        if self.analysis is None:
            raise ValueError(f"the starting sentence cannot be translated: {self.error}") from self.exception

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike | None = None, **kwargs) -> Explorer:
        """An explorer of a saved model (default: the checkpoint shipped in ``data/checkpoints``).

        Args:
            path: a checkpoint written by :func:`course_lib.checkpoint.save_checkpoint`.
            **kwargs: passed to :class:`Explorer` (``sentence``, ``beam_size``, ``length_penalty_alpha``).
        """
        from .checkpoint import load_checkpoint

        model, src_vocab, tgt_vocab, saved = load_checkpoint(SHIPPED_CHECKPOINT if path is None else path)
        language = (saved.get("train_config") or {}).get("src_lang", "de")
        return cls(model, src_vocab, tgt_vocab, Tokenizer(language), **kwargs)

    # --- callbacks -------------------------------------------------------------------------------------
    # Each callback is also called directly by the others; ``_refreshing`` keeps the ones triggered by
    # updating menus and sliders from redrawing while a refresh is under way.
    def _on_translate(self, *_) -> None:
        """Analyse the sentence in the text box and refresh everything (or clear it and say why not)."""
        sentence = self.sentence.value
        self.translate.description, self.translate.disabled = "Translating…", True
        try:
            analysis = analyze(self.model, sentence, self.src_vocab, self.tgt_vocab, self.tokenizer,
                               self.beam_size, self.length_penalty_alpha)
        except Exception as error:  # any failure becomes one line in the widget, not a hidden traceback
            self._fail(sentence, error)
            return
        finally:
            self.translate.description, self.translate.disabled = "Translate", False
        self.error = self.exception = None
        self.status.value, self.status.layout.display = "", "none"
        self.analysis = analysis
        self.summary.value = _compact(summary_html(analysis))
        self.candidates.value = _compact(_candidates_html(analysis))
        n_steps = len(analysis.out_tokens)
        self._refreshing = True
        try:
            for slider in (self.step, self.play):
                slider.max = n_steps  # first the limit, then the value (the slider clamps to the limit)
                slider.value = n_steps
            self._update_menus(self.kind, self.layer, self.head)
            self._update_menus(self.step_kind, self.step_layer, self.step_head)
        finally:
            self._refreshing = False
        self.results.layout.display = None
        self._draw_attention()
        self._draw_step()

    def _fail(self, sentence: str, error: Exception) -> None:
        """Say in one line why ``sentence`` was not translated, and clear the previous sentence's results."""
        self.analysis, self.exception, self.error = None, error, one_line(error)
        shown = f"“{sentence if len(sentence) <= 60 else sentence[:59] + '…'}”" if sentence.strip() else "an empty sentence"
        self.status.value = _error_html(f"Could not translate {shown}", self.error)
        self.status.layout.display = None
        self.results.layout.display = "none"  # no stale map that could pass for this sentence's
        self.summary.value = self.candidates.value = self.step_info.value = self.reading.value = ""
        self.attention_image.value = self.step_image.value = b""

    def _update_menus(self, kind, layer, head) -> None:
        """Layer and head choices for the chosen kind (keeps the selection when it still exists)."""
        _fill_layer_head_menus(layer, head, len(self.analysis.names(kind.value)), self.analysis.n_heads())

    def _view_changed(self, menus: tuple, redraw, change=None) -> None:
        """A tab's kind, layer or head menu changed: refresh that tab's layer and head menus when the kind
        changed (so they list what exists), then redraw its heatmap with ``redraw``.

        Args:
            menus: the tab's ``(kind, layer, head)`` dropdowns.
            redraw: the tab's drawing method.
            change: the traitlets change (None when called directly).
        """
        if self._refreshing or self.analysis is None:
            return
        kind, layer, head = menus
        if change is not None and change.get("owner") is kind:
            self._refreshing = True
            try:
                self._update_menus(kind, layer, head)
            finally:
                self._refreshing = False
        redraw()

    def _on_view(self, change=None) -> None:
        """The Attention tab's kind, layer or head changed: redraw its heatmap."""
        self._view_changed((self.kind, self.layer, self.head), self._draw_attention, change)

    def _on_step_view(self, change=None) -> None:
        """The Step-by-step tab's kind, layer or head changed: redraw its heatmap."""
        self._view_changed((self.step_kind, self.step_layer, self.step_head), self._draw_step, change)

    def _on_step(self, *_) -> None:
        """The step slider moved: redraw the step view."""
        if self._refreshing or self.analysis is None:
            return
        self._draw_step()

    def _draw_attention(self) -> None:
        kind = self.kind.value
        rows, cols = AXES[kind]
        self.reading.value = _compact(f"<b>Rows:</b> {rows}.<br><b>Columns:</b> {cols}.<br>{READING[kind]} Each row "
                                      "adds up to 1 (brighter = more attention); &lt;eos&gt; marks the end of a sentence.")
        self.attention_image.value = _png(attention_figure(self.analysis, kind, self.layer.value,
                                                           _head_value(self.head)))

    def _draw_step(self) -> None:
        """Step ``step``: the prefix, the top next tokens, and the chosen decoder map's rows up to that step."""
        step = min(max(self.step.value, 1), len(self.analysis.out_tokens))
        self.step_info.value = _compact(step_html(self.analysis, step))
        self.step_image.value = _png(attention_figure(self.analysis, self.step_kind.value, self.step_layer.value,
                                                      _head_value(self.step_head), upto_step=step))

    # --- display -----------------------------------------------------------------------------------------
    def static_figure(self) -> Figure:
        """A picture of the current state: the chosen attention heatmap titled with the translation."""
        if self.analysis is None:
            raise ValueError(f"nothing to show: the last sentence could not be translated ({self.error})")
        return attention_figure(self.analysis, self.kind.value, self.layer.value, _head_value(self.head),
                                title=f"{self.analysis.sentence}\n→ {self.analysis.translation}")

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The widget for front ends that run widgets, a PNG of the current state for all others."""
        return _display_bundle(self.widget, self.static_figure if self.analysis is not None else None,
                               "Attention explorer (interactive where widgets run: JupyterLab, VS Code, Colab; "
                               "elsewhere a picture of its starting state)")

    def show(self) -> None:
        """Display the explorer (same as ending a cell with it)."""
        from IPython.display import display

        display(self)


# ---------------------------------------------------------------------------------------------------- language model
# The same look inside for the decoder-only language model of notebook 15 (course_lib.gpt): one sentence, the
# prompt and what the model wrote after it, read by causal self-attention only.

# What the rows and the columns of a language model's map are, in words; and how to read it.
LM_AXES = ("word that reads", "earlier word read")
LM_READING = ("Each row is one word of the sentence reading the words up to itself: that row is what the model "
              "uses to choose the next word. Later words cannot be read, so everything above the diagonal stays "
              "dark. &lt;bos&gt; = start of sentence.")
LM_TOOLTIPS = {
    "prompt": "Type the start of an English sentence (or nothing), then press Enter or click Generate",
    "generate": "Continue the prompt with the model and redraw everything below",
    "decoding": "Greedy: always write the most likely next word. Sampling: draw the next word at random from "
                "the model's probabilities (temperature, top-k, seed)",
    "temperature": "Sampling temperature: below 1 makes likely words likelier, above 1 flattens the choice",
    "top_k": "Sampling: draw only from the k most likely words (0 = from every word)",
    "seed": "Seed of the random draws: the same seed draws the same sentence",
    "play": "Play the generation: write the continuation one word at a time",
    "step": "Generation step: step 1 writes the first word after the prompt",
}


@dataclass(frozen=True)
class GenerationStep:
    """One word written by the language model.

    Attributes:
        step: 1 = the first token after the prompt.
        context: the tokens read before choosing it: ``<bos>``, the prompt, the tokens of the earlier steps.
        chosen: the token written.
        probability: its probability in the distribution it was chosen from.
        candidates: the most likely tokens of that distribution with their probabilities, most likely first.
    """

    step: int
    context: list[str]
    chosen: str
    probability: float
    candidates: list[tuple[str, float]]


@dataclass
class LanguageModelAnalysis:
    """Everything the language-model explorer shows for one prompt (computed by :func:`analyze_language_model`).

    Attributes:
        prompt: the text typed.
        prompt_tokens: its tokens (as typed; unknown ones are read as ``<unk>``).
        unknown: prompt tokens the vocabulary does not know.
        generated_tokens: the tokens written after the prompt, ending with ``"<eos>"`` unless the limit cut it.
        ids: the whole sentence as ids: ``<bos>``, the prompt, the generated tokens (what ``generate`` returned).
        steps: one :class:`GenerationStep` per generated token.
        attention: ``{module name: (n_heads, seq, seq)}`` from one forward pass over the whole sentence, e.g.
            ``"layers.1.self_attn"``; row ``t`` is the attention of ``tokens[t]``, which predicts ``tokens[t + 1]``.
        next_token_probs: ``(n_steps, vocab)``: at every step the distribution the token was chosen from
            (:func:`course_lib.gpt.next_token_probs`; greedy: temperature 1, every word).
        mode: ``"greedy"`` or ``"sampling"``.
        temperature, top_k, seed: the sampling settings (None when greedy; top_k None: every word).
        cache: how ``generate`` ran its steps (``"keys-values"`` or ``"inputs"``; see :func:`course_lib.gpt.generate`).
        max_new_tokens: the limit on generated tokens.
        itos: the vocabulary (id -> token) for reading ``next_token_probs``.
    """

    prompt: str
    prompt_tokens: list[str]
    unknown: list[str]
    generated_tokens: list[str]
    ids: list[int]
    steps: list[GenerationStep]
    attention: dict[str, np.ndarray]
    next_token_probs: np.ndarray
    mode: str
    temperature: float | None
    top_k: int | None
    seed: int | None
    cache: str
    max_new_tokens: int
    itos: list[str] = field(repr=False)

    @property
    def tokens(self) -> list[str]:
        """The whole sentence as the maps label it: ``<bos>``, the prompt tokens, the generated tokens."""
        return ["<bos>", *self.prompt_tokens, *self.generated_tokens]

    @property
    def continuation(self) -> str:
        """What the model wrote after the prompt, as text."""
        return detokenize([t for t in self.generated_tokens if t != "<eos>"])

    @property
    def text(self) -> str:
        """The whole sentence (prompt and continuation) as text."""
        return detokenize([*self.prompt_tokens, *(t for t in self.generated_tokens if t != "<eos>")])

    @property
    def ended(self) -> bool:
        """True when the model ended the sentence (wrote ``<eos>``), False when the length limit stopped it."""
        return bool(self.generated_tokens) and self.generated_tokens[-1] == "<eos>"

    @property
    def settings(self) -> str:
        """The decoding settings in words: ``"greedy"`` or ``"sampling, temperature 0.8, top-k 10, seed 0"``."""
        if self.mode == "greedy":
            return "greedy"
        top_k = "every word" if self.top_k is None else f"top-k {self.top_k}"
        return f"sampling, temperature {self.temperature:g}, {top_k}, seed {self.seed}"

    def names(self) -> list[str]:
        """Self-attention module names, first layer first."""
        return _layer_order(self.attention)

    def n_heads(self) -> int:
        """Heads per attention layer."""
        return next(iter(self.attention.values())).shape[0]

    def weights(self, layer: int, head: int | None) -> np.ndarray:
        """One causal self-attention map ``(seq, seq)``.

        Args:
            layer: layer index (0 = first).
            head: head index, or None for the mean over heads.
        """
        names = self.names()
        if not 0 <= layer < len(names):
            raise ValueError(f"layer must be in [0, {len(names)}), got {layer}")
        return _pick_head(self.attention[names[layer]], head)

    def top_next_tokens(self, step: int, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` most likely tokens of the distribution step ``step`` chose from (1 = the first new token)."""
        if not 1 <= step <= len(self.steps):
            raise ValueError(f"step must be in [1, {len(self.steps)}], got {step}")
        return _top_tokens(self.next_token_probs[step - 1], self.itos, k)


def analyze_language_model(
    model: nn.Module,
    vocab: Vocab,
    tokenizer: Callable[[str], list[str]],
    prompt: str,
    *,
    max_new_tokens: int = 30,
    greedy: bool = True,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
    n_candidates: int = 5,
) -> LanguageModelAnalysis:
    """Continue a prompt with a language model and record what it read and what it could have written.

    Generation is :func:`course_lib.gpt.generate` (greedy, or sampling from a generator seeded with ``seed``);
    then one forward pass over the whole sentence under :func:`course_lib.model.record_attention` gives every
    self-attention map and, the model being causal, the next-token logits each step saw.

    Args:
        model: a :class:`course_lib.gpt.GPT` (course parts or supplied ones; any device; eval mode here, restored).
        vocab: the vocabulary it was trained with (as many tokens as the model predicts).
        tokenizer: the tokenizer used in training, e.g. ``course_lib.data.default_tokenizers()[1]``.
        prompt: the start of a sentence (may be empty: the model then starts from ``<bos>`` alone).
        max_new_tokens: most tokens to write (fewer if the model writes ``<eos>`` or reaches ``max_len``).
        greedy: always write the most likely token; else sample.
        temperature, top_k: the sampling distribution (:func:`course_lib.gpt.next_token_probs`; unused when greedy).
        seed: seed of the sampling generator (unused when greedy).
        n_candidates: candidates kept per step in :attr:`GenerationStep.candidates`.

    Returns:
        A :class:`LanguageModelAnalysis`.
    """
    from .gpt import generate, next_token_probs

    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    config = model.config
    if len(vocab) != config.vocab_size:
        raise ValueError(f"the vocabulary has {len(vocab)} tokens but the model predicts {config.vocab_size}")
    if not greedy:
        next_token_probs(torch.zeros(1, config.vocab_size), temperature, top_k)  # the settings' own errors, early
    tokens = tokenizer(prompt)
    if len(tokens) + 2 > config.max_len:
        raise ValueError(f"prompt has {len(tokens)} tokens; the model reads at most {config.max_len} with <bos>, so "
                         f"at most {config.max_len - 2} leave room for one more word")
    device = next(model.parameters()).device
    prompt_ids = torch.tensor([vocab.encode(tokens, add_bos=True)], device=device)  # (1, prompt_len)
    generator = None if greedy else torch.Generator(device=device).manual_seed(seed)
    stats: dict = {}
    ids = generate(model, prompt_ids, max_new_tokens, temperature=temperature, top_k=top_k, greedy=greedy,
                   generator=generator, stats=stats)  # (1, seq): one row stops right after <eos>, no padding
    start = prompt_ids.size(1)
    pads = (ids[0, start:] == config.pad_id).nonzero()
    if len(pads):
        raise ValueError(f"the model wrote <pad> at step {int(pads[0]) + 1} (an untrained model may): a sentence with "
                         "padding inside cannot be read back in one pass")

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), record_attention(model) as maps:
            logits = model(ids)  # (1, seq, vocab): position t predicts token t + 1
    finally:
        model.train(was_training)
    if not maps:
        raise ValueError("the model recorded no attention weights: its attention is neither course_lib's "
                         "MultiHeadAttention nor made recordable (course_lib.builders.recordable)")
    step_logits = logits[0, start - 1:-1].float()  # (n_steps, vocab): the logits each step chose from
    if greedy:
        probs = next_token_probs(step_logits)  # (n_steps, vocab): the model's own distribution
    else:
        probs = next_token_probs(step_logits, temperature, top_k)  # (n_steps, vocab): the one sampled from
    probs = probs.cpu().numpy()
    itos = list(vocab.itos)
    generated = [itos[i] for i in ids[0, start:].tolist()]
    context, steps = ["<bos>", *tokens], []
    for step, (token_id, token) in enumerate(zip(ids[0, start:].tolist(), generated, strict=True), start=1):
        steps.append(GenerationStep(step, list(context), token, float(probs[step - 1, token_id]),
                                    _top_tokens(probs[step - 1], itos, n_candidates)))
        context.append(token)
    return LanguageModelAnalysis(
        prompt=prompt,
        prompt_tokens=list(tokens),
        unknown=sorted({t for t in tokens if t not in vocab.stoi}),
        generated_tokens=generated,
        ids=ids[0].tolist(),
        steps=steps,
        attention={name: w[0].float().cpu().numpy() for name, w in maps.items()},  # (n_heads, seq, seq) each
        next_token_probs=probs,
        mode="greedy" if greedy else "sampling",
        temperature=None if greedy else float(temperature),
        top_k=None if greedy else top_k,
        seed=None if greedy else seed,
        cache=stats.get("mode", ""),
        max_new_tokens=max_new_tokens,
        itos=itos,
    )


def causal_attention_figure(analysis: LanguageModelAnalysis, layer: int = -1, head: int | None = None,
                            upto_step: int | None = None, title: str | None = None) -> Figure:
    """Heatmap of one causal self-attention map of a generated sentence: rows the word that reads, columns the
    earlier words it reads (the upper triangle is empty: no word reads a later one).

    Args:
        analysis: from :func:`analyze_language_model`.
        layer: layer index; negative counts from the last layer.
        head: head index, or None for the mean over heads.
        upto_step: the generation step reached (1 = the first new word): the rows and columns of the words not
            written yet are greyed out and unlabelled, so the picture keeps its size while stepping.
        title: a first title line (e.g. the prompt) above the one naming the map.

    Returns:
        The Figure (drawn by :func:`course_lib.plotting.plot_attention`; axis titles from :data:`LM_AXES`).
    """
    n_layers = len(analysis.names())
    if not -n_layers <= layer < n_layers:
        raise ValueError(f"layer must be in [{-n_layers}, {n_layers}), got {layer}")
    layer_index = layer % n_layers
    weights = analysis.weights(layer_index, head)  # (seq, seq)
    reached = None
    if upto_step is not None:
        if not 1 <= upto_step <= len(analysis.steps):
            raise ValueError(f"upto_step must be in [1, {len(analysis.steps)}], got {upto_step}")
        reached = len(analysis.steps[upto_step - 1].context)  # the rows read before writing that step's word
    name = f"Self-attention, {layer_name(layer_index, n_layers).removesuffix(' (last)')}, " \
           f"{head_name(head, analysis.n_heads())}"
    tokens = analysis.tokens
    return _map_figure(weights, tokens, tokens, f"{title}\n{name}" if title else name, LM_AXES, reached,
                       grey_columns=True)


def language_model_summary_html(analysis: LanguageModelAnalysis) -> str:
    """HTML of the prompt's tokens (unknown ones marked), the continuation, and the whole sentence."""
    chips, unknown = _token_chips(analysis.prompt_tokens, analysis.unknown)
    chips = chips or "<i>(none: the model starts from &lt;bos&gt; alone)</i>"
    n = len(analysis.steps)
    end = ("it ended the sentence (&lt;eos&gt;)" if analysis.ended else
           f"stopped by the limit after {n} token{'s' if n != 1 else ''}")
    return (f"<b>Prompt tokens:</b> {chips}{unknown}<br><b>Continuation ({html.escape(analysis.settings)}):</b> "
            f"{html.escape(analysis.continuation) or '<i>(nothing)</i>'} <i>({end})</i>"
            f"<br><b>Whole sentence:</b> {html.escape(analysis.text)}")


def language_model_step_html(analysis: LanguageModelAnalysis, step: int) -> str:
    """HTML of one generation step: what was read, the token written, the candidates with their probabilities."""
    if not 1 <= step <= len(analysis.steps):
        raise ValueError(f"step must be in [1, {len(analysis.steps)}], got {step}")
    s = analysis.steps[step - 1]
    verb = "Greedy picks" if analysis.mode == "greedy" else "Sampling drew"
    where = ("the model's probabilities" if analysis.mode == "greedy" else
             f"the probabilities it drew from ({html.escape(analysis.settings.removeprefix('sampling, '))})")
    missing = (f"<br><i>{html.escape(s.chosen)} is not among the top {len(s.candidates)}.</i>"
               if all(token != s.chosen for token, _ in s.candidates) else "")
    return (f"<b>Step {step} of {len(analysis.steps)}.</b> Read so far: <code>{html.escape(' '.join(s.context))}</code>"
            f"<br>{verb} <b>{html.escape(s.chosen)}</b> (probability {s.probability:.3f}). The top "
            f"{len(s.candidates)} next tokens, {where}:{_top_table(s.candidates, s.chosen)}{missing}")


class LanguageModelExplorer:
    """The widget for a language model: type a prompt, choose greedy or sampling, read the continuation, look at
    any self-attention map of the sentence, step through the generation with each step's candidates.

    Args:
        model: a :class:`course_lib.gpt.GPT` (course parts or supplied ones).
        vocab: its vocabulary.
        tokenizer: the tokenizer used in training (``course_lib.data.default_tokenizers()[1]``, English).
        prompt: the prompt shown at the start (may be empty).
        max_new_tokens: most tokens written per prompt.
        greedy, temperature, top_k, seed: the decoding settings at the start (see :func:`analyze_language_model`).
        n_candidates: candidates shown per step.

    Attributes (the widgets, for scripting and tests): ``prompt``, ``generate``, ``decoding`` ("greedy" or
    "sampling"), ``temperature``, ``top_k`` (0 = every word), ``seed``, ``status``, ``summary``, ``results``
    (hidden after an error), ``tabs``; in the *Attention* tab ``layer``, ``head``, ``reading``,
    ``attention_image``; in the *Step by step* tab ``play``, ``step``, ``step_info``, ``step_layer``,
    ``step_head``, ``step_image``. ``widget`` is the whole box, ``analysis`` the current
    :class:`LanguageModelAnalysis` (None after an error), ``error`` why the last prompt could not be continued
    in one line (None when it could) and ``exception`` the exception itself.
    """

    def __init__(self, model: nn.Module, vocab: Vocab, tokenizer: Callable[[str], list[str]], prompt: str = "", *,
                 max_new_tokens: int = 30, greedy: bool = True, temperature: float = 1.0, top_k: int | None = None,
                 seed: int = 0, n_candidates: int = 5):
        import ipywidgets as w

        self.model, self.vocab, self.tokenizer = model, vocab, tokenizer
        self.max_new_tokens, self.n_candidates = max_new_tokens, n_candidates
        self.analysis: LanguageModelAnalysis | None = None
        self.error: str | None = None
        self.exception: BaseException | None = None
        self._refreshing = False

        self.prompt = w.Text(value=prompt, placeholder="the start of an English sentence (or nothing)",
                             continuous_update=False, tooltip=LM_TOOLTIPS["prompt"], layout=w.Layout(width="55%"))
        self.generate = w.Button(description="Generate", button_style="primary", tooltip=LM_TOOLTIPS["generate"])
        self.decoding = w.ToggleButtons(options=["greedy", "sampling"], value="greedy" if greedy else "sampling",
                                        tooltip=LM_TOOLTIPS["decoding"],
                                        tooltips=["Always write the most likely next word",
                                                  "Draw the next word at random from the model's probabilities"],
                                        style={"button_width": "80px"})
        # Sliders and the seed box show their tooltip on their description only, so they have one.
        label = {"description_width": "initial"}  # the whole word "temperature", not "temperat…"
        self.temperature = w.FloatSlider(value=temperature, min=0.1, max=max(2.0, temperature), step=0.1,
                                         readout_format=".1f", description="temperature", continuous_update=False,
                                         tooltip=LM_TOOLTIPS["temperature"], style=label,
                                         layout=w.Layout(width="270px"))
        top_k_max = min(len(vocab), max(50, top_k or 0))
        self.top_k = w.IntSlider(value=top_k or 0, min=0, max=top_k_max, description="top-k (0 = all)",
                                 continuous_update=False, tooltip=LM_TOOLTIPS["top_k"], style=label,
                                 layout=w.Layout(width="270px"))
        self.seed = w.BoundedIntText(value=seed, min=0, max=2**31 - 1, description="seed", tooltip=LM_TOOLTIPS["seed"],
                                     style={"description_width": "40px"}, layout=w.Layout(width="150px"))
        self.status = w.HTML(layout=w.Layout(display="none"))  # shown only for an error
        self.summary = w.HTML()
        self.layer, self.head = _layer_head_menus()
        self.reading = w.HTML(layout=w.Layout(width="270px"))
        self.attention_image = w.Image(format="png")  # no tooltip: JupyterLab's ipywidgets 8.1 would not draw it
        self.play = w.Play(value=1, min=1, max=1, interval=900, show_repeat=False, tooltip=LM_TOOLTIPS["play"])
        self.step = w.IntSlider(value=1, min=1, max=1, description="step", continuous_update=False,
                                tooltip=LM_TOOLTIPS["step"], style={"description_width": "32px"},
                                layout=w.Layout(width="270px"))
        w.jslink((self.play, "value"), (self.step, "value"))
        self.step_info = w.HTML(layout=w.Layout(width="270px"))
        self.step_layer, self.step_head = _layer_head_menus()
        self.step_image = w.Image(format="png")

        attention_tab = _beside([_caption("Which attention map", TOOLTIPS["layer"]), self.layer, self.head,
                                 self.reading], self.attention_image)
        step_tab = _beside([_caption("Generation step", LM_TOOLTIPS["step"]), self.play, self.step, self.step_info,
                            _caption("Map beside it", TOOLTIPS["layer"]), self.step_layer, self.step_head],
                           self.step_image)
        self.tabs = w.Tab(children=[attention_tab, step_tab])
        for index, tab_title in enumerate(("Attention", "Step by step")):
            self.tabs.set_title(index, tab_title)
        self.results = w.VBox([self.summary, self.tabs])
        settings = w.HBox([self.decoding, self.temperature, self.top_k, self.seed],
                          layout=w.Layout(flex_flow="row wrap", align_items="center"))
        self.widget = w.VBox([w.HBox([_caption("Prompt:", LM_TOOLTIPS["prompt"]), self.prompt, self.generate]),
                              settings, self.status, self.results])
        self.widget.add_class("course-attention-explorer")
        self.widget.add_class("course-language-model-explorer")

        self.generate.on_click(self._on_generate)
        self.prompt.observe(self._on_generate, names="value")
        for control in (self.decoding, self.temperature, self.top_k, self.seed):
            control.observe(self._on_settings, names="value")
        for control in (self.layer, self.head):
            control.observe(self._on_view, names="value")
        for control in (self.step_layer, self.step_head):
            control.observe(self._on_step_view, names="value")
        self.step.observe(self._on_step_view, names="value")
        self._enable_sampling_controls()
        self._on_generate()
        if self.analysis is None:
            raise ValueError(f"the starting prompt cannot be continued: {self.error}") from self.exception

    # --- callbacks -------------------------------------------------------------------------------------
    def _on_settings(self, change=None) -> None:
        """Greedy/sampling, temperature, top-k or seed changed: generate again with the new settings (greedy
        decoding ignores the sampling settings: nothing to redo when one of those changes)."""
        self._enable_sampling_controls()
        if change is not None and change.get("owner") is not self.decoding and self.decoding.value == "greedy":
            return
        self._on_generate()

    def _enable_sampling_controls(self) -> None:
        for control in (self.temperature, self.top_k, self.seed):
            control.disabled = self.decoding.value == "greedy"  # greedy ignores them

    def _on_generate(self, *_) -> None:
        """Continue the prompt in the text box and refresh everything (or clear it and say why not)."""
        prompt = self.prompt.value
        self.generate.description, self.generate.disabled = "Generating…", True
        try:
            analysis = analyze_language_model(
                self.model, self.vocab, self.tokenizer, prompt, max_new_tokens=self.max_new_tokens,
                greedy=self.decoding.value == "greedy", temperature=self.temperature.value,
                top_k=self.top_k.value or None, seed=self.seed.value, n_candidates=self.n_candidates)
        except Exception as error:  # any failure becomes one line in the widget, not a hidden traceback
            self._fail(prompt, error)
            return
        finally:
            self.generate.description, self.generate.disabled = "Generate", False
        self.error = self.exception = None
        self.status.value, self.status.layout.display = "", "none"
        self.analysis = analysis
        self.summary.value = _compact(language_model_summary_html(analysis))
        self._refreshing = True
        try:
            for slider in (self.step, self.play):
                slider.max = len(analysis.steps)  # first the limit, then the value (the slider clamps to the limit)
                slider.value = len(analysis.steps)
            for layer, head in ((self.layer, self.head), (self.step_layer, self.step_head)):
                _fill_layer_head_menus(layer, head, len(analysis.names()), analysis.n_heads())
        finally:
            self._refreshing = False
        self.results.layout.display = None
        self._draw_attention()
        self._draw_step()

    def _fail(self, prompt: str, error: Exception) -> None:
        """Say in one line why ``prompt`` was not continued, and clear the previous prompt's results."""
        self.analysis, self.exception, self.error = None, error, one_line(error)
        shown = f"“{prompt if len(prompt) <= 60 else prompt[:59] + '…'}”" if prompt.strip() else "an empty prompt"
        self.status.value = _error_html(f"Could not continue {shown}", self.error)
        self.status.layout.display = None
        self.results.layout.display = "none"  # no stale map that could pass for this prompt's
        self.summary.value = self.step_info.value = self.reading.value = ""
        self.attention_image.value = self.step_image.value = b""

    def _on_view(self, *_) -> None:
        """The Attention tab's layer or head changed: redraw its heatmap."""
        if not self._refreshing and self.analysis is not None:
            self._draw_attention()

    def _on_step_view(self, *_) -> None:
        """The step slider or the Step-by-step tab's layer or head changed: redraw that tab."""
        if not self._refreshing and self.analysis is not None:
            self._draw_step()

    def _draw_attention(self) -> None:
        rows, cols = LM_AXES
        self.reading.value = _compact(f"<b>Rows:</b> {rows}.<br><b>Columns:</b> {cols}.<br>{LM_READING} Each row "
                                      "adds up to 1 (brighter = more attention); &lt;eos&gt; marks the end of a sentence.")
        self.attention_image.value = _png(causal_attention_figure(self.analysis, self.layer.value,
                                                                  _head_value(self.head)))

    def _draw_step(self) -> None:
        """Step ``step``: what was read, the candidates, and the map's rows and columns up to that step."""
        step = min(max(self.step.value, 1), len(self.analysis.steps))
        self.step_info.value = _compact(language_model_step_html(self.analysis, step))
        self.step_image.value = _png(causal_attention_figure(self.analysis, self.step_layer.value,
                                                             _head_value(self.step_head), upto_step=step))

    # --- display -----------------------------------------------------------------------------------------
    def static_figure(self) -> Figure:
        """A picture of the current state: the chosen self-attention heatmap titled with prompt and continuation."""
        if self.analysis is None:
            raise ValueError(f"nothing to show: the last prompt could not be continued ({self.error})")
        a = self.analysis
        return causal_attention_figure(a, self.layer.value, _head_value(self.head),
                                       title=f"{a.prompt.strip() or '(no prompt)'}\n→ {a.continuation} ({a.settings})")

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The widget for front ends that run widgets, a PNG of the current state for all others."""
        return _display_bundle(self.widget, self.static_figure if self.analysis is not None else None,
                               "Language-model explorer (interactive where widgets run: JupyterLab, VS Code, Colab; "
                               "elsewhere a picture of its starting state)")

    def show(self) -> None:
        """Display the explorer (same as ending a cell with it)."""
        from IPython.display import display

        display(self)
