"""The attention explorer (course_lib.explorer): its numbers and its widget callbacks, without a browser.

The numbers are checked against course_lib.decoding on the shipped checkpoint; the callbacks are driven
the way a front end drives them (setting widget values), and what the widgets then hold is checked.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest
import torch

from course_lib.checkpoint import load_checkpoint
from course_lib.decoding import beam_search, greedy_decode, length_penalty, output_lengths, sequence_log_probs
from course_lib.explorer import (
    KINDS,
    MEAN,
    SHIPPED_CHECKPOINT,
    Explorer,
    _png,
    analyze,
    attention_figure,
    head_name,
    layer_name,
    one_line,
)
from course_lib.tokenization import Tokenizer

PNG = b"\x89PNG\r\n\x1a\n"
SENTENCE = "Der kleine Hund sieht die Katze nicht."


@pytest.fixture(scope="module")
def trained():
    model, src_vocab, tgt_vocab, _ = load_checkpoint(SHIPPED_CHECKPOINT)
    return model, src_vocab, tgt_vocab, Tokenizer("de")


@pytest.fixture(scope="module")
def analysis(trained):
    return analyze(*trained[:1], SENTENCE, *trained[1:], beam_size=4)


@pytest.fixture()
def explorer(trained):
    return Explorer(*trained, sentence=SENTENCE)


def _src(trained, sentence):
    _, src_vocab, _, tokenizer = trained
    return torch.tensor([src_vocab.encode(tokenizer(sentence), add_eos=True)])  # (1, src_len)


def test_beam_search_return_all_ranks_hypotheses_and_contains_the_choice(trained):
    model = trained[0]
    src = _src(trained, SENTENCE)
    chosen, chosen_log_prob = beam_search(model, src, beam_size=4)
    hypotheses, scores = beam_search(model, src, beam_size=4, return_all=True)
    assert hypotheses.shape[:2] == (1, 4) and scores.shape == (1, 4)
    assert torch.all(scores[0, :-1] >= scores[0, 1:]), "hypotheses must be ranked by log-probability"
    best = int((scores[0] / length_penalty(output_lengths(hypotheses[0]), 0.6)).argmax())
    n = chosen.size(1)
    assert hypotheses[0, best, :n].tolist() == chosen[0].tolist()
    assert float(scores[0, best]) == pytest.approx(float(chosen_log_prob[0]))
    one, _ = beam_search(model, src, beam_size=1, return_all=True)
    greedy = greedy_decode(model, src)
    assert one[0, 0, : greedy.size(1)].tolist() == greedy[0].tolist()
    with pytest.raises(ValueError, match="return_all"):
        beam_search(model, src, return_all=True, return_attention=True)


def test_analysis_matches_the_decoders(trained, analysis):
    model, _, tgt_vocab, tokenizer = trained
    src = _src(trained, SENTENCE)
    greedy = greedy_decode(model, src)
    assert analysis.src_tokens == [*tokenizer(SENTENCE), "<eos>"]
    assert analysis.out_tokens == tgt_vocab.decode(greedy[0].tolist(), strip_specials=False)
    assert analysis.out_tokens[-1] == "<eos>"
    greedy_candidate, *beam = analysis.candidates
    assert greedy_candidate.method == "greedy" and greedy_candidate.tokens == tgt_vocab.decode(greedy[0].tolist())
    assert greedy_candidate.log_prob == pytest.approx(float(sequence_log_probs(model, src, greedy)[0]), abs=1e-4)
    assert len(beam) == 4 and [c.chosen for c in beam] == [True, False, False, False]
    assert [c.score for c in beam] == sorted((c.score for c in beam), reverse=True)
    chosen, chosen_log_prob = beam_search(model, src, beam_size=4)
    assert beam[0].tokens == tgt_vocab.decode(chosen[0].tolist())
    assert beam[0].log_prob == pytest.approx(float(chosen_log_prob[0]), abs=1e-4)
    for c in beam:  # each beam log-probability is the model's probability of that output
        ids = torch.tensor([tgt_vocab.encode(c.tokens, add_eos=True)])
        assert c.log_prob == pytest.approx(float(sequence_log_probs(model, src, ids)[0]), abs=1e-3)
        assert c.score == pytest.approx(c.log_prob / ((5 + c.length) / 6) ** 0.6, rel=1e-5)
    assert analysis.translation.startswith("The small dog")


def test_analysis_attention_and_steps_are_consistent(analysis):
    out_len, src_len = len(analysis.out_tokens), len(analysis.src_tokens)
    assert len(analysis.names("cross-attention")) == 2 and len(analysis.names("encoder self-attention")) == 2
    assert analysis.weights("cross-attention", 1, 0).shape == (out_len, src_len)
    assert analysis.weights("decoder self-attention", 0, None).shape == (out_len, out_len)
    assert analysis.weights("encoder self-attention", 0, 3).shape == (src_len, src_len)
    for name, stack in analysis.attention.items():
        assert np.allclose(stack.sum(axis=-1), 1.0, atol=1e-4), f"{name}: rows must be distributions"
    decoder_self = analysis.weights("decoder self-attention", 1, 2)
    assert np.allclose(np.triu(decoder_self, k=1), 0.0), "decoder self-attention must not look ahead"
    mean = analysis.weights("cross-attention", 0, None)
    assert np.allclose(mean, analysis.attention["decoder.layers.0.cross_attn"].mean(axis=0))
    # Teacher forcing on greedy's own output reproduces greedy's choice at every step.
    for step, token in enumerate(analysis.out_tokens, start=1):
        top_token, top_p = analysis.top_next_tokens(step, k=1)[0]
        assert top_token == token and 0.0 < top_p <= 1.0
    rows, cols = analysis.labels("decoder self-attention")
    assert cols[0] == "<bos>" and rows == analysis.out_tokens
    with pytest.raises(ValueError, match="kind"):
        analysis.names("no such attention")
    with pytest.raises(ValueError, match="layer"):
        analysis.weights("cross-attention", 2, None)
    with pytest.raises(ValueError, match="head"):
        analysis.weights("cross-attention", 0, 4)
    with pytest.raises(ValueError, match="step"):
        analysis.top_next_tokens(0)


def test_analyze_rejects_bad_input(trained):
    model, src_vocab, tgt_vocab, tokenizer = trained
    with pytest.raises(ValueError, match="no tokens"):
        analyze(model, "   ", src_vocab, tgt_vocab, tokenizer)
    with pytest.raises(TypeError, match="sentence"):
        analyze(model, ["Der Hund."], src_vocab, tgt_vocab, tokenizer)
    with pytest.raises(ValueError, match="at most"):
        analyze(model, "Hund " * 200, src_vocab, tgt_vocab, tokenizer)


def test_attention_figure_names_its_axes_and_layers_in_words(analysis):
    """Someone who does not read code learns from the picture what its rows and columns are."""
    words = {
        "cross-attention": ("rows: English word being written", "columns: German word read"),
        "decoder self-attention": ("rows: English word being written", "columns: earlier English word read"),
        "encoder self-attention": ("rows: German word being updated", "columns: German word read"),
    }
    for kind, (rows, cols) in words.items():
        ax = attention_figure(analysis, kind, layer=0, head=2).axes[0]
        assert (ax.get_ylabel(), ax.get_xlabel()) == (rows, cols), kind
        assert ax.get_title() == f"{kind.capitalize()}, layer 1 of 2, head 3 of 4"
    ax = attention_figure(analysis, "cross-attention").axes[0]  # the default: the last layer, mean of heads
    assert ax.get_title() == "Cross-attention, layer 2 of 2, all heads (mean)"
    assert [t.get_text() for t in ax.get_yticklabels()] == analysis.out_tokens
    assert [t.get_text() for t in ax.get_xticklabels()] == analysis.src_tokens
    with pytest.raises(ValueError, match="layer"):
        attention_figure(analysis, "cross-attention", layer=2)


def test_layer_and_head_names_count_from_one():
    assert [layer_name(i, 2) for i in range(2)] == ["layer 1 of 2", "layer 2 of 2 (last)"]
    assert layer_name(0, 1) == "layer 1 of 1"
    assert head_name(None, 4) == "all heads (mean)" and head_name(2, 4) == "head 3 of 4"
    with pytest.raises(ValueError, match="layer"):
        layer_name(2, 2)
    with pytest.raises(ValueError, match="head"):
        head_name(4, 4)


def test_attention_figure_greys_the_steps_not_reached(analysis):
    out_tokens = analysis.out_tokens
    ax = attention_figure(analysis, "cross-attention", layer=-1, head=None, upto_step=3).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [*out_tokens[:3], *[""] * (len(out_tokens) - 3)]
    assert [t.get_text() for t in ax.get_xticklabels()] == analysis.src_tokens  # the German is all read already
    assert any(t.get_text() == "not written yet" for t in ax.texts)
    ax = attention_figure(analysis, "decoder self-attention", upto_step=3).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()][:4] == ["<bos>", *out_tokens[:2], ""]
    full = attention_figure(analysis, "encoder self-attention", upto_step=3).axes[0]  # no decoding steps: all rows
    assert [t.get_text() for t in full.get_yticklabels()] == analysis.src_tokens
    with pytest.raises(ValueError, match="upto_step"):
        attention_figure(analysis, "cross-attention", upto_step=0)


def _controls(widget):
    """Every widget inside ``widget`` (depth first)."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _controls(child)


def test_every_control_has_a_tooltip_on_itself(explorer):
    import ipywidgets as w

    controls = [c for c in _controls(explorer.widget) if isinstance(c, (w.Text, w.Button, w.Dropdown, w.IntSlider, w.Play))]
    assert len(controls) == 10  # text box, button, 3 menus per tab, play, step slider
    for control in controls:
        assert control.tooltip and len(control.tooltip) > 20, control
        if not isinstance(control, (w.Button, w.IntSlider)):
            # With a description, ipywidgets puts the tooltip on the description only, not on the control
            # (a slider shows it nowhere else, so it keeps its description).
            assert control.description == "", control
    # ipywidgets 8.1's front end cannot draw an Image with a tooltip (no description to test): none there.
    assert explorer.attention_image.tooltip is None and explorer.step_image.tooltip is None


def test_explorer_starts_with_its_sentence(explorer):
    assert "course-attention-explorer" in explorer.widget._dom_classes
    assert explorer.analysis.sentence == SENTENCE
    assert "Translation (greedy):</b> The small dog" in explorer.summary.value
    assert "Translation (beam 4):</b> The small dog" in explorer.summary.value
    assert "beam 4 ✓" in explorer.candidates.value and "score (length-normalised)" in explorer.candidates.value
    assert [explorer.tabs.get_title(i) for i in range(3)] == ["Attention", "Step by step", "Candidates"]
    assert bytes(explorer.attention_image.value).startswith(PNG) and bytes(explorer.step_image.value).startswith(PNG)
    assert explorer.step.max == explorer.play.max == explorer.step.value == len(explorer.analysis.out_tokens)
    for kind, layer, head in ((explorer.kind, explorer.layer, explorer.head),
                              (explorer.step_kind, explorer.step_layer, explorer.step_head)):
        assert kind.value == "cross-attention"
        assert list(layer.options) == [("layer 1 of 2", 0), ("layer 2 of 2 (last)", 1)]
        assert layer.value == 1 and layer.label == "layer 2 of 2 (last)", "the default is the last layer"
        assert [label for label, _ in head.options] == ["all heads (mean)", *(f"head {h} of 4" for h in range(1, 5))]
        assert head.value == MEAN and head.label == "all heads (mean)"
    assert list(explorer.step_kind.options) == ["cross-attention", "decoder self-attention"]  # decoding steps only
    assert "Rows:</b> English word being written" in explorer.reading.value
    assert "Columns:</b> German word read" in explorer.reading.value


def test_typing_a_sentence_retranslates(explorer, trained):
    explorer.sentence.value = "Der Mann sieht den Elefanten."
    assert explorer.analysis.sentence == "Der Mann sieht den Elefanten."
    assert explorer.analysis.unknown == ["Elefanten"]
    assert "Elefanten" in explorer.summary.value and "&lt;unk&gt;" in explorer.summary.value
    assert explorer.step.max == len(explorer.analysis.out_tokens) == explorer.step.value
    explorer.sentence.value = ""  # an error: one line, and nothing left of the previous sentence
    assert explorer.analysis is None and "no tokens" in explorer.error
    assert explorer.status.layout.display != "none" and explorer.results.layout.display == "none"
    assert "Could not translate an empty sentence: sentence has no tokens" in explorer.status.value
    assert "<br" not in explorer.status.value and "\n" not in explorer.status.value
    assert bytes(explorer.attention_image.value) == bytes(explorer.step_image.value) == b""
    assert explorer.summary.value == explorer.candidates.value == explorer.step_info.value == ""
    assert "image/png" not in explorer._repr_mimebundle_()  # no picture of an old sentence either
    explorer.sentence.value = SENTENCE
    explorer.translate.click()
    assert explorer.status.value == "" and explorer.status.layout.display == "none"
    assert explorer.results.layout.display is None and explorer.analysis.sentence == SENTENCE
    assert bytes(explorer.attention_image.value).startswith(PNG)
    with pytest.raises(ValueError, match="starting sentence cannot be translated: sentence has no tokens"):
        Explorer(*trained, sentence="")


def test_an_exception_clears_the_old_result_and_reads_as_one_line(trained):
    """E.g. a tokenizer that refuses words the vocabulary lacks: the widget says so in one line."""
    model, src_vocab, tgt_vocab, tokenizer = trained

    def strict(sentence):
        tokens = tokenizer(sentence)
        missing = [t for t in tokens if t not in src_vocab.stoi]
        if missing:
            raise KeyError(", ".join(missing))
        return tokens

    explorer = Explorer(model, src_vocab, tgt_vocab, strict, sentence=SENTENCE)
    explorer.sentence.value = "Der Mann sieht den Elefanten."
    assert explorer.analysis is None and isinstance(explorer.exception, KeyError)
    assert explorer.error == "KeyError: 'Elefanten'"
    assert "Could not translate “Der Mann sieht den Elefanten.”: KeyError: &#x27;Elefanten&#x27;" in explorer.status.value
    assert explorer.results.layout.display == "none" and bytes(explorer.attention_image.value) == b""
    assert explorer.translate.description == "Translate" and not explorer.translate.disabled
    assert one_line(RuntimeError("first line\n   second line")) == "RuntimeError: first line second line"
    assert one_line(ValueError("x" * 500)).endswith("…") and len(one_line(ValueError("x" * 500))) == 200


def test_choosing_kind_layer_and_head_redraws(explorer):
    images = {bytes(explorer.attention_image.value)}
    explorer.head.value = 2
    images.add(bytes(explorer.attention_image.value))
    explorer.layer.value = 0
    images.add(bytes(explorer.attention_image.value))
    explorer.kind.value = "encoder self-attention"
    images.add(bytes(explorer.attention_image.value))
    assert len(images) == 4, "each choice must draw a different picture"
    assert explorer.layer.value == 0 and explorer.head.value == 2, "a choice that still exists is kept"
    assert bytes(explorer.attention_image.value) == _png(attention_figure(explorer.analysis, "encoder self-attention", 0, 2))
    assert "Rows:</b> German word being updated" in explorer.reading.value
    for kind in KINDS:
        explorer.kind.value = kind
        assert [value for _, value in explorer.layer.options] == list(range(len(explorer.analysis.names(kind))))


def test_stepping_through_decoding(explorer):
    out_tokens = explorer.analysis.out_tokens
    explorer.step.value = 1
    assert "Step 1 of" in explorer.step_info.value and "(nothing yet)" in explorer.step_info.value
    first = bytes(explorer.step_image.value)
    explorer.step.value = 3
    assert f"Step 3 of {len(out_tokens)}" in explorer.step_info.value
    assert f"Greedy picks <b>{out_tokens[2]}</b>" in explorer.step_info.value
    assert " ".join(out_tokens[:2]) in explorer.step_info.value
    assert bytes(explorer.step_image.value) != first


def test_step_by_step_has_its_own_map_choice(explorer):
    analysis = explorer.analysis
    explorer.step.value = 3
    assert bytes(explorer.step_image.value) == _png(attention_figure(analysis, "cross-attention", 1, None, upto_step=3))
    step_image = bytes(explorer.step_image.value)
    explorer.head.value, explorer.layer.value = 1, 0  # the Attention tab's choice does not change this tab
    assert bytes(explorer.step_image.value) == step_image
    explorer.step_kind.value, explorer.step_layer.value, explorer.step_head.value = "decoder self-attention", 0, 2
    assert explorer.step_head.label == "head 3 of 4" and explorer.step_layer.label == "layer 1 of 2"
    assert bytes(explorer.step_image.value) == _png(attention_figure(analysis, "decoder self-attention", 0, 2,
                                                                     upto_step=3))


def test_display_bundle_has_widget_and_static_picture(explorer):
    bundle = explorer._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer.widget.model_id
    assert base64.b64decode(bundle["image/png"]).startswith(PNG)
    assert "Attention explorer" in bundle["text/plain"]


def test_notebook_11_stores_the_widget_and_its_static_picture():
    """Where no widget front end runs (nbval, the website, GitHub) the stored picture is what readers see."""
    import json
    from pathlib import Path

    notebook = Path(__file__).resolve().parent.parent / "notebooks" / "11_decoding_and_attention.ipynb"
    cells = [c for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code" and "Explorer(" in "".join(c["source"])]
    assert len(cells) == 1, "notebook 11 must create the explorer in exactly one cell"
    (output,) = cells[0]["outputs"]
    assert {"application/vnd.jupyter.widget-view+json", "image/png", "text/plain"} <= set(output["data"])
    assert base64.b64decode(output["data"]["image/png"]).startswith(PNG)
