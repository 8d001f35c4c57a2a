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
from course_lib.explorer import KINDS, MEAN, SHIPPED_CHECKPOINT, Explorer, analyze, attention_figure
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


def test_attention_figure_limits_rows_to_the_step(analysis):
    fig = attention_figure(analysis, "cross-attention", layer=-1, head=None, upto_step=3)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == analysis.out_tokens[:3]
    assert "layer 1, mean of heads" in ax.get_title()


def test_explorer_starts_with_its_sentence(explorer):
    assert "course-attention-explorer" in explorer.widget._dom_classes
    assert explorer.analysis.sentence == SENTENCE
    assert "The small dog" in explorer.summary.value and "beam 4" in explorer.summary.value
    assert bytes(explorer.attention_image.value).startswith(PNG) and bytes(explorer.step_image.value).startswith(PNG)
    assert explorer.step.max == explorer.play.max == explorer.step.value == len(explorer.analysis.out_tokens)
    assert list(explorer.layer.options) == [0, 1] and explorer.layer.value == 1
    assert list(explorer.head.options) == [MEAN, 0, 1, 2, 3] and explorer.head.value == MEAN


def test_typing_a_sentence_retranslates(explorer, trained):
    explorer.sentence.value = "Der Mann sieht den Elefanten."
    assert explorer.analysis.sentence == "Der Mann sieht den Elefanten."
    assert explorer.analysis.unknown == ["Elefanten"]
    assert "Elefanten" in explorer.summary.value and "&lt;unk&gt;" in explorer.summary.value
    assert explorer.step.max == len(explorer.analysis.out_tokens) == explorer.step.value
    before = explorer.analysis
    explorer.sentence.value = ""  # an error is shown; the last analysis stays
    assert "no tokens" in explorer.status.value and "no tokens" in explorer.error and explorer.analysis is before
    explorer.sentence.value = SENTENCE
    explorer.translate.click()
    assert explorer.status.value == "" and explorer.analysis.sentence == SENTENCE
    with pytest.raises(ValueError, match="starting sentence cannot be translated: sentence has no tokens"):
        Explorer(*trained, sentence="")


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
    for kind in KINDS:
        explorer.kind.value = kind
        assert list(explorer.layer.options) == list(range(len(explorer.analysis.names(kind))))


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
