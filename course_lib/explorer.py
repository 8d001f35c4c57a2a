"""An interactive explorer of a trained translation model, built from ipywidgets.

Type a German sentence and see its tokens (unknown words marked), the greedy translation, the greedy
output and every beam-search hypothesis with its log-probability and length-normalised score; pick an
attention kind (cross-attention, decoder or encoder self-attention), a layer and a head (or their mean)
and see the heatmap; step through the greedy decoding token by token (the prefix so far, the model's
top next tokens with their probabilities, and the attention rows up to that step).

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
MEAN = "mean of heads"


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
        names = [n for n in self.attention if n.startswith(part + ".") and n.endswith(suffix)]
        return sorted(names, key=lambda n: [int(p) if p.isdigit() else p for p in n.split(".")])

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
        stack = self.attention[names[layer]]  # (n_heads, q_len, k_len)
        if head is None:
            return stack.mean(axis=0)
        if not 0 <= head < stack.shape[0]:
            raise ValueError(f"head must be in [0, {stack.shape[0]}) or None for the mean, got {head}")
        return stack[head]

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
        probs = self.next_token_probs[step - 1]  # (vocab,)
        order = np.argsort(-probs, kind="stable")[:k]
        return [(self.tgt_itos[i], float(probs[i])) for i in order]


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


def attention_figure(analysis: Analysis, kind: str = "cross-attention", layer: int = -1, head: int | None = None,
                     upto_step: int | None = None, title: str | None = None) -> Figure:
    """Heatmap of one attention map of an analysed sentence.

    Args:
        analysis: from :func:`analyze`.
        kind: a key of :data:`KINDS`.
        layer: layer index; negative counts from the last layer.
        head: head index, or None for the mean over heads.
        upto_step: for decoder maps, show only the rows of the first ``upto_step`` decoding steps.
        title: a first title line (e.g. the sentence) above the one naming the map.

    Returns:
        The Figure (from :func:`course_lib.plotting.plot_attention`).
    """
    n_layers = len(analysis.names(kind))
    layer_index = layer + n_layers if layer < 0 else layer
    weights = analysis.weights(kind, layer_index, head)  # (q_len, k_len)
    rows, cols = analysis.labels(kind)
    if upto_step is not None and KINDS[kind][0] == "decoder":
        weights, rows = weights[:upto_step], rows[:upto_step]
    which = MEAN if head is None else f"head {head}"
    name = f"{kind.capitalize()}, layer {layer_index}, {which}"
    return plot_attention(weights, query_tokens=rows, key_tokens=cols, title=f"{title}\n{name}" if title else name)


def _png(fig: Figure) -> bytes:
    """Render a Figure to PNG bytes and close it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def _candidates_html(analysis: Analysis) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(c.method)}{' ✓' if c.chosen and c.method != 'greedy' else ''}</td>"
        f"<td>{html.escape(' '.join(c.tokens))}</td><td>{c.log_prob:.3f}</td><td>{c.score:.3f}</td><td>{c.length}</td></tr>"
        for c in analysis.candidates
    )
    return ("<table class='course-candidates'><tr><th>method</th><th>output</th><th>log p</th>"
            f"<th>score (length-normalised)</th><th>tokens</th></tr>{rows}</table>")


def summary_html(analysis: Analysis) -> str:
    """HTML of the tokens, the translation and the candidates of an analysed sentence."""
    chips = " ".join(
        f"<code style='color:{'#c0392b' if t in analysis.unknown else 'inherit'}'>{html.escape(t)}</code>"
        for t in analysis.src_tokens
    )
    unknown = (f"<br>unknown to the model (read as <code>&lt;unk&gt;</code>): {html.escape(', '.join(analysis.unknown))}"
               if analysis.unknown else "")
    return (f"<b>Tokens:</b> {chips}{unknown}<br><b>Translation (greedy):</b> {html.escape(analysis.translation)}"
            f"<br><b>Candidates</b> (✓ = the hypothesis beam search returns):{_candidates_html(analysis)}")


def step_html(analysis: Analysis, step: int, k: int = 5) -> str:
    """HTML of one decoding step: the prefix so far, the chosen token and the top ``k`` next tokens."""
    prefix = " ".join(analysis.out_tokens[: step - 1]) or "(nothing yet)"
    chosen = analysis.out_tokens[step - 1]
    top = "".join(
        f"<tr><td>{'<b>' if token == chosen else ''}{html.escape(token)}{'</b>' if token == chosen else ''}</td>"
        f"<td>{p:.3f}</td></tr>"
        for token, p in analysis.top_next_tokens(step, k)
    )
    return (f"<b>Step {step} of {len(analysis.out_tokens)}.</b> Written so far: <code>&lt;bos&gt; {html.escape(prefix)}</code>"
            f"<br>Greedy picks <b>{html.escape(chosen)}</b>. The model's top {k} next tokens:"
            f"<table class='course-step'><tr><th>token</th><th>probability</th></tr>{top}</table>")


class Explorer:
    """The widget: type a sentence, read the candidates, look at any attention map, step through decoding.

    Args:
        model: a trained course ``Transformer``.
        src_vocab, tgt_vocab: its vocabularies.
        tokenizer: the source tokenizer used in training (e.g. ``Tokenizer("de")``).
        sentence: the sentence shown at the start.
        beam_size: hypotheses kept by beam search.
        length_penalty_alpha: GNMT alpha of the beam's length-normalised score.

    Attributes (the widgets, for scripting and tests): ``sentence``, ``translate``, ``summary``, ``kind``,
    ``layer``, ``head``, ``attention_image``, ``step``, ``play``, ``step_info``, ``step_image``, ``status``;
    ``widget`` is the whole box, ``analysis`` the current :class:`Analysis` and ``error`` why the last
    sentence could not be translated (None when it could).
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
        self._refreshing = False

        self.sentence = w.Text(value=sentence, description="German:", continuous_update=False,
                               layout=w.Layout(width="70%"))
        self.translate = w.Button(description="Translate", button_style="primary")
        self.status = w.HTML()
        self.summary = w.HTML()
        self.kind = w.Dropdown(options=list(KINDS), value="cross-attention", description="attention:")
        self.layer = w.Dropdown(options=[], value=None, description="layer:")  # the last layer once translated
        self.head = w.Dropdown(options=[MEAN], value=MEAN, description="head:")
        self.attention_image = w.Image(format="png", layout=w.Layout(max_width="760px"))
        self.step = w.IntSlider(value=1, min=1, max=1, description="step:", continuous_update=False)
        self.play = w.Play(value=1, min=1, max=1, interval=900, description="play")
        w.jslink((self.play, "value"), (self.step, "value"))
        self.step_info = w.HTML()
        self.step_image = w.Image(format="png", layout=w.Layout(max_width="760px"))

        attention_tab = w.VBox([w.HBox([self.kind, self.layer, self.head]), self.attention_image])
        step_tab = w.VBox([w.HBox([self.play, self.step]), self.step_info, self.step_image])
        tabs = w.Tab(children=[attention_tab, step_tab])
        tabs.set_title(0, "Attention")
        tabs.set_title(1, "Step by step")
        self.widget = w.VBox([w.HBox([self.sentence, self.translate]), self.status, self.summary, tabs])
        self.widget.add_class("course-attention-explorer")

        self.translate.on_click(self._on_translate)
        self.sentence.observe(self._on_translate, names="value")
        for control in (self.kind, self.layer, self.head):
            control.observe(self._on_view, names="value")
        self.step.observe(self._on_step, names="value")
        self._on_translate()
        if self.analysis is None:
            raise ValueError(f"the starting sentence cannot be translated: {self.error}")

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
        """Analyse the sentence in the text box and refresh everything."""
        try:
            analysis = analyze(self.model, self.sentence.value, self.src_vocab, self.tgt_vocab, self.tokenizer,
                               self.beam_size, self.length_penalty_alpha)
        except (ValueError, TypeError) as error:
            self.error = str(error)
            self.status.value = f"<span style='color:#c0392b'>{html.escape(self.error)}</span>"
            return
        self.error = None
        self.status.value = ""
        self.analysis = analysis
        self.summary.value = summary_html(analysis)
        n_steps = len(analysis.out_tokens)
        self._refreshing = True
        try:
            for slider in (self.step, self.play):
                slider.max = n_steps  # first the limit, then the value (the slider clamps to the limit)
                slider.value = n_steps
            self._update_menus()
        finally:
            self._refreshing = False
        self._draw_attention()
        self._draw_step()

    def _update_menus(self) -> None:
        """Layer and head choices for the current kind (keeps the selection when it still exists)."""
        n_layers = len(self.analysis.names(self.kind.value))
        heads = [MEAN, *range(self.analysis.n_heads())]
        layer = self.layer.value if self.layer.value in range(n_layers) else n_layers - 1
        head = self.head.value if self.head.value in heads else MEAN
        self.layer.options, self.head.options = list(range(n_layers)), heads
        self.layer.value, self.head.value = layer, head

    def _on_view(self, change=None) -> None:
        """The kind, layer or head changed: redraw the heatmap and the step view."""
        if self._refreshing or self.analysis is None:
            return
        if change is not None and change.get("owner") is self.kind:
            self._refreshing = True
            try:
                self._update_menus()
            finally:
                self._refreshing = False
        self._draw_attention()
        self._draw_step()

    def _on_step(self, *_) -> None:
        """The step slider moved: redraw the step view."""
        if self._refreshing or self.analysis is None:
            return
        self._draw_step()

    def _head(self) -> int | None:
        return None if self.head.value == MEAN else int(self.head.value)

    def _draw_attention(self) -> None:
        self.attention_image.value = _png(attention_figure(self.analysis, self.kind.value, self.layer.value, self._head()))

    def _draw_step(self) -> None:
        """Step ``step``: the prefix, the top next tokens, and the decoder attention rows up to that step
        (the chosen decoder kind, layer and head; cross-attention of the last layer when the encoder is chosen)."""
        step = min(max(self.step.value, 1), len(self.analysis.out_tokens))
        self.step_info.value = step_html(self.analysis, step)
        if KINDS[self.kind.value][0] == "decoder":
            kind, layer = self.kind.value, self.layer.value
        else:
            kind, layer = "cross-attention", -1
        self.step_image.value = _png(attention_figure(self.analysis, kind, layer, self._head(), upto_step=step))

    # --- display -----------------------------------------------------------------------------------------
    def static_figure(self) -> Figure:
        """A picture of the current state: the chosen attention heatmap titled with the translation."""
        return attention_figure(self.analysis, self.kind.value, self.layer.value, self._head(),
                                title=f"{self.analysis.sentence}\n→ {self.analysis.translation}")

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The widget for front ends that run widgets, a PNG of the current state for all others."""
        bundle = dict(self.widget._repr_mimebundle_() or {})
        bundle["image/png"] = base64.b64encode(_png(self.static_figure())).decode("ascii")
        bundle["text/plain"] = ("Attention explorer (interactive where widgets run: JupyterLab, VS Code, Colab; "
                                "elsewhere a picture of its starting state)")
        return bundle

    def show(self) -> None:
        """Display the explorer (same as ending a cell with it)."""
        from IPython.display import display

        display(self)
