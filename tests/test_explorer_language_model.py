"""The language-model explorer (course_lib.explorer, notebook 15): its numbers and its widget callbacks.

The numbers are checked against course_lib.gpt (``generate``, ``next_token_probs``) and against forward passes
of the model itself on a tiny GPT trained for a few seconds on a toy grammar; the callbacks are driven the
way a front end drives them (setting widget values), and what the widgets then hold is checked.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest
import torch
from test_explorer_lab import jupyterlab  # noqa: F401  (the JupyterLab server of the browser test, at the end)
from torch import nn

from course_lib.data import default_tokenizers
from course_lib.explorer import (
    LM_AXES,
    MEAN,
    LanguageModelExplorer,
    _png,
    analyze_language_model,
    causal_attention_figure,
)
from course_lib.gpt import (
    GPT,
    GPTConfig,
    decode_ids,
    encode_sentences,
    generate,
    make_batches,
    next_token_probs,
    train_language_model,
)
from course_lib.model import record_attention
from course_lib.tokenization import UNK_ID, Vocab

PNG = b"\x89PNG\r\n\x1a\n"
SUBJECTS = ["the cat", "the dog", "a small bird", "the big dog"]
VERBS = ["sees", "likes", "chases"]
OBJECTS = ["the ball", "a mouse", "the red car"]
PROMPT = "the cat"


@pytest.fixture(scope="module")
def tokenizer():
    return default_tokenizers()[1]  # the course's English tokenizer


@pytest.fixture(scope="module")
def vocab(tokenizer):
    return Vocab.build(tokenizer(f"{s} {v} {o}.") for s in SUBJECTS for v in VERBS for o in OBJECTS)


def _config(vocab: Vocab) -> GPTConfig:
    return GPTConfig(vocab_size=len(vocab), d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=24)


@pytest.fixture(scope="module")
def model(vocab, tokenizer):
    """A tiny GPT that has learnt the toy grammar (subject verb object .) well enough to end its sentences."""
    torch.manual_seed(0)
    gpt = GPT(_config(vocab))
    sentences = encode_sentences([tokenizer(f"{s} {v} {o}.") for s in SUBJECTS for v in VERBS for o in OBJECTS],
                                 vocab)
    train_language_model(gpt, make_batches(sentences, 12, seed=0), make_batches(sentences, 36), steps=80,
                         warmup=20, lr_factor=2.0, eval_every=80, log=None)
    return gpt.eval()


@pytest.fixture(scope="module")
def greedy(model, vocab, tokenizer):
    return analyze_language_model(model, vocab, tokenizer, PROMPT)


@pytest.fixture(scope="module")
def sampled(model, vocab, tokenizer):
    return analyze_language_model(model, vocab, tokenizer, PROMPT, greedy=False, temperature=1.5, top_k=4, seed=3)


def _prompt_ids(vocab, tokenizer, prompt):
    return torch.tensor([vocab.encode(tokenizer(prompt), add_bos=True)])  # (1, prompt_len)


def test_greedy_analysis_is_what_generate_writes(model, vocab, tokenizer, greedy):
    expected = generate(model, _prompt_ids(vocab, tokenizer, PROMPT), 30, greedy=True)  # (1, seq)
    assert greedy.ids == expected[0].tolist()
    assert greedy.prompt_tokens == tokenizer(PROMPT) and greedy.unknown == []
    assert greedy.tokens == ["<bos>", *greedy.prompt_tokens, *greedy.generated_tokens]
    assert [vocab.stoi[t] for t in greedy.tokens] == greedy.ids
    assert greedy.generated_tokens[-1] == "<eos>" and greedy.ended, "the trained toy model ends its sentence"
    assert greedy.text == decode_ids(expected, vocab)[0].replace(" .", ".")
    assert greedy.text.startswith("the cat ") and greedy.text.endswith(".")
    assert greedy.continuation == greedy.text.removeprefix("the cat ")
    assert (greedy.mode, greedy.settings, greedy.cache) == ("greedy", "greedy", "keys-values")
    assert greedy.temperature is greedy.top_k is greedy.seed is None
    assert len(greedy.steps) == len(greedy.generated_tokens) == greedy.next_token_probs.shape[0]
    assert greedy.next_token_probs.shape[1] == len(vocab)


def test_attention_maps_are_causal_distributions_of_the_whole_sentence(model, vocab, tokenizer, greedy):
    seq = len(greedy.ids)
    assert greedy.names() == ["layers.0.self_attn", "layers.1.self_attn"] and greedy.n_heads() == 4
    for name, stack in greedy.attention.items():
        assert stack.shape == (4, seq, seq), name
        assert np.allclose(stack.sum(axis=-1), 1.0, atol=1e-5), f"{name}: rows must be distributions"
        assert np.all(np.triu(stack, k=1) == 0.0), f"{name}: no word may read a later one"
    assert np.allclose(greedy.weights(1, None), greedy.attention["layers.1.self_attn"].mean(axis=0))
    assert np.array_equal(greedy.weights(0, 2), greedy.attention["layers.0.self_attn"][2])
    # Causality seen from outside: the prompt's rows are what a pass over the prompt alone records.
    prompt_ids = _prompt_ids(vocab, tokenizer, PROMPT)
    with torch.no_grad(), record_attention(model) as maps:
        model(prompt_ids)
    n = prompt_ids.size(1)
    for name, stack in greedy.attention.items():
        assert np.allclose(stack[:, :n, :n], maps[name][0].numpy(), atol=1e-6), name
    with pytest.raises(ValueError, match="layer"):
        greedy.weights(2, None)
    with pytest.raises(ValueError, match="head"):
        greedy.weights(0, 4)


@pytest.mark.parametrize("which", ["greedy", "sampled"])
def test_each_steps_candidates_are_next_token_probs_of_its_prefix(model, which, request):
    analysis = request.getfixturevalue(which)
    temperature, top_k = (1.0, None) if which == "greedy" else (1.5, 4)
    start = len(analysis.prompt_tokens) + 1
    ids = torch.tensor([analysis.ids])
    for step in analysis.steps:
        prefix = ids[:, : start + step.step - 1]  # (1, t): what was read before writing this step's token
        with torch.no_grad():
            expected = next_token_probs(model(prefix)[:, -1], temperature, top_k)[0]  # (vocab,)
        assert np.allclose(analysis.next_token_probs[step.step - 1], expected.numpy(), atol=1e-6)
        assert step.context == analysis.tokens[: prefix.size(1)]
        assert step.chosen == analysis.tokens[prefix.size(1)]
        assert step.probability == pytest.approx(float(expected[analysis.ids[prefix.size(1)]]), abs=1e-6)
        order = expected.argsort(descending=True, stable=True)[:5]
        assert [t for t, _ in step.candidates] == [analysis.itos[i] for i in order]
        assert [p for _, p in step.candidates] == pytest.approx(expected[order].tolist(), abs=1e-6)
        assert step.candidates == analysis.top_next_tokens(step.step)
        if which == "greedy":
            assert step.chosen == step.candidates[0][0], "greedy writes the most likely token"
        else:
            assert int((expected > 0).sum()) <= 4 and step.probability > 0, "top-k: drawn among the 4 likeliest"
    with pytest.raises(ValueError, match="step"):
        analysis.top_next_tokens(0)


def test_sampling_is_repeatable_with_its_seed(model, vocab, tokenizer, sampled):
    again = analyze_language_model(model, vocab, tokenizer, PROMPT, greedy=False, temperature=1.5, top_k=4, seed=3)
    assert again.ids == sampled.ids and np.array_equal(again.next_token_probs, sampled.next_token_probs)
    expected = generate(model, _prompt_ids(vocab, tokenizer, PROMPT), 30, temperature=1.5, top_k=4,
                        generator=torch.Generator().manual_seed(3))
    assert sampled.ids == expected[0].tolist()
    assert (sampled.mode, sampled.temperature, sampled.top_k, sampled.seed) == ("sampling", 1.5, 4, 3)
    assert sampled.settings == "sampling, temperature 1.5, top-k 4, seed 3"
    texts = {analyze_language_model(model, vocab, tokenizer, PROMPT, greedy=False, temperature=2.0, seed=seed).text
             for seed in range(8)}
    assert len(texts) > 1, "other seeds draw other sentences"


def test_unknown_words_are_named_and_read_as_unk(model, vocab, tokenizer):
    analysis = analyze_language_model(model, vocab, tokenizer, "the elephant sees")
    assert analysis.prompt_tokens == ["the", "elephant", "sees"] and analysis.unknown == ["elephant"]
    assert analysis.ids[:4] == [vocab.bos_id, vocab.stoi["the"], UNK_ID, vocab.stoi["sees"]]
    assert analysis.tokens[2] == "elephant", "the maps show the word typed"


def test_length_limit_and_empty_prompt(model, vocab, tokenizer):
    cut = analyze_language_model(model, vocab, tokenizer, PROMPT, max_new_tokens=2)
    assert len(cut.steps) == 2 and not cut.ended and "<eos>" not in cut.generated_tokens
    empty = analyze_language_model(model, vocab, tokenizer, "")
    assert empty.prompt_tokens == [] and empty.steps[0].context == ["<bos>"]
    assert empty.ids == generate(model, torch.tensor([[vocab.bos_id]]), 30, greedy=True)[0].tolist()


def test_bad_input_is_refused_with_a_reason(model, vocab, tokenizer):
    with pytest.raises(TypeError, match="prompt"):
        analyze_language_model(model, vocab, tokenizer, ["the cat"])
    with pytest.raises(ValueError, match="room for one more"):
        analyze_language_model(model, vocab, tokenizer, "the " * 23)
    with pytest.raises(ValueError, match="max_new_tokens"):
        analyze_language_model(model, vocab, tokenizer, PROMPT, max_new_tokens=0)
    with pytest.raises(ValueError, match="temperature"):
        analyze_language_model(model, vocab, tokenizer, PROMPT, greedy=False, temperature=0.0)
    with pytest.raises(ValueError, match="top_k"):
        analyze_language_model(model, vocab, tokenizer, PROMPT, greedy=False, top_k=len(vocab) + 1)
    with pytest.raises(ValueError, match="vocabulary has"):
        analyze_language_model(model, Vocab(["the", "cat"]), tokenizer, PROMPT)


def test_causal_attention_figure_names_axes_and_greys_words_not_written(greedy):
    ax = causal_attention_figure(greedy, layer=0, head=2).axes[0]
    assert (ax.get_ylabel(), ax.get_xlabel()) == tuple(f"{side}: {words}" for side, words in zip(
        ("rows", "columns"), LM_AXES, strict=True))
    assert ax.get_title() == "Self-attention, layer 1 of 2, head 3 of 4"
    assert [t.get_text() for t in ax.get_yticklabels()] == greedy.tokens
    assert [t.get_text() for t in ax.get_xticklabels()] == greedy.tokens
    ax = causal_attention_figure(greedy, title="the cat").axes[0]  # default: the last layer, mean of heads
    assert ax.get_title() == "the cat\nSelf-attention, layer 2 of 2, all heads (mean)"
    read = len(greedy.prompt_tokens) + 1  # step 1 has read <bos> and the prompt
    ax = causal_attention_figure(greedy, upto_step=1).axes[0]
    blank = [""] * (len(greedy.tokens) - read)
    assert [t.get_text() for t in ax.get_yticklabels()] == [*greedy.tokens[:read], *blank]
    assert [t.get_text() for t in ax.get_xticklabels()] == [*greedy.tokens[:read], *blank]
    assert any(t.get_text() == "not written yet" for t in ax.texts)
    for bad in ({"layer": 2}, {"upto_step": 0}, {"upto_step": len(greedy.steps) + 1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            causal_attention_figure(greedy, **bad)


# ---------------------------------------------------------------------------------------------------- the widget


@pytest.fixture()
def explorer(model, vocab, tokenizer):
    return LanguageModelExplorer(model, vocab, tokenizer, prompt=PROMPT)


def _controls(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _controls(child)


def test_every_control_has_a_tooltip(explorer):
    import ipywidgets as w

    kinds = (w.Text, w.Button, w.Dropdown, w.IntSlider, w.FloatSlider, w.Play, w.ToggleButtons, w.BoundedIntText)
    controls = [c for c in _controls(explorer.widget) if isinstance(c, kinds)]
    assert len(controls) == 12  # text box, button, greedy/sampling, temperature, top-k, seed, 2 menus per tab,
    # play, step slider
    for control in controls:
        assert control.tooltip and len(control.tooltip) > 20, control
        if isinstance(control, (w.Dropdown, w.Text)) and not isinstance(control, w.BoundedIntText):
            assert control.description == "", control  # else the tooltip would sit on the description only
    assert len(explorer.decoding.tooltips) == 2
    assert explorer.attention_image.tooltip is None and explorer.step_image.tooltip is None


def test_explorer_starts_with_its_prompt(explorer, greedy):
    assert {"course-attention-explorer", "course-language-model-explorer"} <= set(explorer.widget._dom_classes)
    assert explorer.analysis.ids == greedy.ids
    assert "Continuation (greedy):</b> " + greedy.continuation in explorer.summary.value
    assert "Whole sentence:</b> " + greedy.text in explorer.summary.value
    assert "ended the sentence" in explorer.summary.value
    assert [explorer.tabs.get_title(i) for i in range(2)] == ["Attention", "Step by step"]
    assert bytes(explorer.attention_image.value).startswith(PNG) and bytes(explorer.step_image.value).startswith(PNG)
    assert explorer.step.max == explorer.play.max == explorer.step.value == len(greedy.steps)
    for layer, head in ((explorer.layer, explorer.head), (explorer.step_layer, explorer.step_head)):
        assert list(layer.options) == [("layer 1 of 2", 0), ("layer 2 of 2 (last)", 1)] and layer.value == 1
        assert [label for label, _ in head.options] == ["all heads (mean)", *(f"head {h} of 4" for h in range(1, 5))]
        assert head.value == MEAN
    assert explorer.decoding.value == "greedy"
    assert explorer.temperature.disabled and explorer.top_k.disabled and explorer.seed.disabled
    assert "Rows:</b> word that reads" in explorer.reading.value
    assert bytes(explorer.attention_image.value) == _png(causal_attention_figure(greedy, 1, None))


def test_changing_prompt_and_settings_generates_again(explorer, model, vocab, tokenizer):
    explorer.prompt.value = "the elephant sees"
    assert explorer.analysis.prompt == "the elephant sees" and explorer.analysis.unknown == ["elephant"]
    assert "elephant" in explorer.summary.value and "&lt;unk&gt;" in explorer.summary.value
    assert explorer.step.max == len(explorer.analysis.steps) == explorer.step.value
    explorer.prompt.value = PROMPT
    greedy = explorer.analysis
    explorer.top_k.value, explorer.temperature.value, explorer.seed.value = 4, 1.5, 3  # greedy ignores them
    assert explorer.analysis is greedy, "nothing to generate again"
    explorer.decoding.value = "sampling"
    assert not (explorer.temperature.disabled or explorer.top_k.disabled or explorer.seed.disabled)
    expected = analyze_language_model(model, vocab, tokenizer, PROMPT, greedy=False, temperature=1.5, top_k=4, seed=3)
    assert explorer.analysis.ids == expected.ids
    assert "Continuation (sampling, temperature 1.5, top-k 4, seed 3)" in explorer.summary.value
    explorer.top_k.value = 0  # 0 = every word
    assert explorer.analysis.top_k is None and "every word" in explorer.summary.value
    explorer.seed.value = 4
    assert explorer.analysis.seed == 4 and "seed 4" in explorer.summary.value
    explorer.decoding.value = "greedy"
    assert explorer.temperature.disabled and explorer.analysis.mode == "greedy"


def test_an_error_clears_the_old_result_and_reads_as_one_line(explorer, model, vocab, tokenizer):
    explorer.prompt.value = "the " * 23
    assert explorer.analysis is None and "room for one more word" in explorer.error
    assert explorer.status.layout.display != "none" and explorer.results.layout.display == "none"
    assert "Could not continue “the the" in explorer.status.value and "<br" not in explorer.status.value
    assert bytes(explorer.attention_image.value) == bytes(explorer.step_image.value) == b""
    assert explorer.summary.value == explorer.step_info.value == ""
    assert "image/png" not in explorer._repr_mimebundle_()
    explorer.prompt.value = ""  # an empty prompt is fine: the model starts from <bos>
    assert explorer.error is None and explorer.analysis.prompt_tokens == []
    assert explorer.results.layout.display is None and bytes(explorer.attention_image.value).startswith(PNG)
    with pytest.raises(ValueError, match=r"starting prompt cannot be continued: .*room for one more"):
        LanguageModelExplorer(model, vocab, tokenizer, prompt="the " * 23)


def test_choosing_layer_and_head_redraws(explorer):
    images = {bytes(explorer.attention_image.value)}
    explorer.head.value = 2
    images.add(bytes(explorer.attention_image.value))
    explorer.layer.value = 0
    images.add(bytes(explorer.attention_image.value))
    assert len(images) == 3, "each choice must draw a different picture"
    assert bytes(explorer.attention_image.value) == _png(causal_attention_figure(explorer.analysis, 0, 2))
    explorer.prompt.value = "a small bird"
    assert (explorer.layer.value, explorer.head.value) == (0, 2), "a choice that still exists is kept"


def test_stepping_through_generation(explorer):
    analysis = explorer.analysis
    explorer.step.value = 1
    assert f"Step 1 of {len(analysis.steps)}" in explorer.step_info.value
    assert "Read so far: <code>&lt;bos&gt; the cat</code>" in explorer.step_info.value
    assert f"Greedy picks <b>{analysis.steps[0].chosen}</b>" in explorer.step_info.value
    first = bytes(explorer.step_image.value)
    assert first == _png(causal_attention_figure(analysis, 1, None, upto_step=1))
    explorer.step.value = 2
    assert f"Step 2 of {len(analysis.steps)}" in explorer.step_info.value and bytes(explorer.step_image.value) != first
    step_image = bytes(explorer.step_image.value)
    explorer.head.value = 1  # the Attention tab's choice does not change this tab
    assert bytes(explorer.step_image.value) == step_image
    explorer.step_layer.value, explorer.step_head.value = 0, 3
    assert bytes(explorer.step_image.value) == _png(causal_attention_figure(analysis, 0, 3, upto_step=2))


def test_display_bundle_has_widget_and_static_picture(explorer):
    bundle = explorer._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer.widget.model_id
    assert base64.b64decode(bundle["image/png"]).startswith(PNG)
    assert "Language-model explorer" in bundle["text/plain"]
    title = explorer.static_figure().axes[0].get_title()
    assert title.startswith(f"the cat\n→ {explorer.analysis.continuation} (greedy)\nSelf-attention, layer 2 of 2")


# ---------------------------------------------------------------------------------------------------- supplied parts


class ScaledNorm(nn.Module):
    """A norm that is not course_lib's: x / rms(x) times a learnt gain (RMSNorm)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.gain, self.eps = nn.Parameter(torch.ones(d_model)), eps

    def forward(self, x):
        return self.gain * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


@pytest.mark.parametrize("source", ["layer_norm", "student folder"])
def test_a_gpt_built_from_supplied_parts_works_too(source, vocab, tokenizer):
    if source == "layer_norm":
        parts = {"layer_norm": ScaledNorm}
    else:
        from pathlib import Path

        from course_lib.student.package import load_my_parts

        parts = load_my_parts(Path(__file__).resolve().parent.parent / "notebooks")
        assert "multi_head_attention" in parts
    torch.manual_seed(1)
    model = GPT(_config(vocab), parts).eval()
    assert model.parts
    # course_lib's layers with a supplied norm cache keys and values; the student's attention, its inputs
    expected_cache = "keys-values" if source == "layer_norm" else "inputs"
    for greedy in (True, False):
        analysis = analyze_language_model(model, vocab, tokenizer, PROMPT, max_new_tokens=8, greedy=greedy, seed=2)
        expected = generate(model, _prompt_ids(vocab, tokenizer, PROMPT), 8, greedy=greedy,
                            generator=torch.Generator().manual_seed(2))
        assert analysis.ids == expected[0].tolist() and analysis.cache == expected_cache
        assert analysis.names() == ["layers.0.self_attn", "layers.1.self_attn"]
        for stack in analysis.attention.values():
            assert stack.shape == (4, len(analysis.ids), len(analysis.ids))
            assert np.allclose(stack.sum(axis=-1), 1.0, atol=1e-5) and np.all(np.triu(stack, k=1) == 0.0)
    explorer = LanguageModelExplorer(model, vocab, tokenizer, prompt=PROMPT, max_new_tokens=8)
    assert explorer.analysis.ids == analyze_language_model(model, vocab, tokenizer, PROMPT, max_new_tokens=8).ids
    explorer.head.value = 0
    assert bytes(explorer.attention_image.value).startswith(PNG)


def test_a_model_on_another_device_is_analysed_as_on_the_cpu(model, vocab, tokenizer, greedy):
    """The prompt's ids are made on the model's device (tests/emulated_device.py: mixing devices raises).
    Sampling is not checked here: the emulated device has no random generator of its own (a GPU has)."""
    import copy

    from emulated_device import OTHER, EmulatedDevice

    with EmulatedDevice():
        moved = copy.deepcopy(model).to(OTHER)
        analysis = analyze_language_model(moved, vocab, tokenizer, PROMPT)
    assert analysis.ids == greedy.ids
    assert np.allclose(analysis.next_token_probs, greedy.next_token_probs, atol=1e-6)
    for name, stack in greedy.attention.items():
        assert np.allclose(analysis.attention[name], stack, atol=1e-6), name


# ---------------------------------------------------------------------------------------------------- in a browser

LAB_CELL = """import torch
from course_lib.data import default_tokenizers
from course_lib.explorer import LanguageModelExplorer
from course_lib.gpt import GPT, GPTConfig, encode_sentences, make_batches, train_language_model
from course_lib.tokenization import Vocab

tokenizer = default_tokenizers()[1]
sentences = [tokenizer(f"{s} {v} {o}.") for s in ("the cat", "the dog", "a small bird")
             for v in ("sees", "likes") for o in ("the ball", "a mouse")]
vocab = Vocab.build(sentences)
torch.manual_seed(0)
model = GPT(GPTConfig(vocab_size=len(vocab), d_model=32, n_heads=4, d_ff=64, max_len=24))
batches = make_batches(encode_sentences(sentences, vocab), 12, seed=0)
train_language_model(model, batches, batches, steps=60, warmup=20, lr_factor=2.0, eval_every=60, log=None)
LanguageModelExplorer(model, vocab, tokenizer, prompt="the cat")"""


@pytest.mark.slow
@pytest.mark.parametrize("jupyterlab", [LAB_CELL], indirect=True, ids=["language model"])
def test_language_model_explorer_renders_and_responds_in_jupyterlab(jupyterlab):  # noqa: F811 (the fixture)
    """As tests/test_explorer_lab.py for the translator: the widget (not the static picture) appears in
    JupyterLab, fits a laptop screen in both tabs, every control has a tooltip, and the kernel answers a
    changed head and a switch to sampling."""
    from chromium import headless_chromium
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    from test_explorer_lab import _STATE, _UNEXPLAINED, WINDOW, _wait_for, check_the_heatmaps_fit, run_the_cell

    base, token = jupyterlab
    with headless_chromium(*WINDOW) as driver:
        run_the_cell(driver, base, token)
        _wait_for(lambda: driver.execute_script(_STATE), 180, "the explorer widget to appear")
        state = _wait_for(lambda: (s := driver.execute_script(_STATE)) and len(s["images"]) >= 2
                          and all(w > 0 for w, _ in s["images"][:1]) and s, 60, "the heatmap image to load")
        assert state["tabs"][:2] == ["Attention", "Step by step"], state["tabs"]
        assert "Continuation (greedy)" in state["summary"] and "Whole sentence" in state["summary"], \
            state["summary"][:500]
        assert "rows: word that reads" in state["summary"].replace("Rows:", "rows:"), state["summary"][:800]
        assert any("all heads (mean)" in options and "head 4 of 4" in options for options in state["selects"])
        assert any("layer 2 of 2 (last)" in options for options in state["selects"]), state["selects"]
        assert state["fallback_png"] == 0, "JupyterLab showed the static picture instead of the widget"
        assert driver.execute_script(_UNEXPLAINED) == [], "controls without a tooltip"
        check_the_heatmaps_fit(driver, "language_model_explorer_in_jupyterlab")

        before = state["first_image"]
        head_menu = next(s for s in driver.find_elements(By.CSS_SELECTOR, ".course-attention-explorer select")
                         if s.is_displayed() and "all heads (mean)" in s.text.replace("\xa0", " "))
        Select(head_menu).select_by_visible_text("head 2 of 4")
        _wait_for(lambda: driver.execute_script(_STATE)["first_image"] != before, 60,
                  "the heatmap to change after choosing head 2")
        next(e for e in driver.find_elements(By.CSS_SELECTOR, ".course-attention-explorer button")
             if e.text == "sampling").click()
        _wait_for(lambda: "Continuation (sampling, temperature 1, every word, seed 0)"
                  in driver.execute_script(_STATE)["summary"], 60, "the sentence to be sampled")
