"""course_lib.plotting: every helper returns a labelled, readable Figure from tensors or arrays and says clearly
when shapes and labels disagree."""

import matplotlib

matplotlib.use("Agg")  # before pyplot: no windows, same pixels everywhere

import importlib

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from course_lib import plotting as P
from course_lib.embeddings import sinusoidal_table
from course_lib.masks import causal_mask, combine_masks, padding_mask

SRC = ["<bos>", "Ein", "Mann", "isst", ".", "<eos>"]  # 6 keys
TGT = ["<bos>", "A", "man", "eats"]  # 4 queries
TOKENS = ["<bos>", "ein", "Hund", "<eos>", "<pad>"]  # 5, self-attention
SPEC_MIN = {"title": 16, "label": 13, "tick": 11}  # the course brief's projector minimums


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _weights(*shape):
    g = torch.Generator().manual_seed(0)
    return torch.softmax(torch.randn(*shape, generator=g), dim=-1)


def _history():
    return [
        {
            "epoch": e,
            "train_loss": 4 / e,
            "valid_loss": 4.2 / e,
            "train_ppl": float(np.exp(4 / e)),
            "valid_ppl": float(np.exp(4.2 / e)),
            "valid_bleu": 10.0 * e,
        }
        for e in range(1, 5)
    ]


def _cases(convert):
    """name -> a zero-argument call drawing one figure; ``convert`` turns each tensor input into the tested type."""
    pe = convert(sinusoidal_table(20, 16))
    ids = torch.tensor([[1, 5, 6, 2, 0]])
    pm, cm = padding_mask(ids), causal_mask(5)
    g = torch.Generator().manual_seed(1)
    return {
        "heatmap": lambda: P.plot_heatmap(
            convert(torch.randn(3, 4, generator=g)),
            list("abcd"),
            list("xyz"),
            title="t",
            center=0.0,
            annotate=True,
            colorbar_label="value",
        ),
        "positional_encoding": lambda: P.plot_positional_encoding(pe),
        "pe_waves": lambda: P.plot_pe_waves(pe, dims=(0, 1, 4, 5)),
        "similarity": lambda: P.plot_similarity(convert(sinusoidal_table(8, 16) @ sinusoidal_table(8, 16).T), "sim"),
        "attention": lambda: P.plot_attention(convert(_weights(4, 6)), TGT, SRC),
        "attention_heads": lambda: P.plot_attention_heads(convert(_weights(1, 4, 4, 6)), TGT, SRC),
        "attention_layers": lambda: P.plot_attention_layers(
            {f"layer {i}": convert(_weights(2, 2, 4, 6)) for i in range(2)}, TGT, SRC
        ),
        "mask": lambda: P.plot_mask(convert(cm), TOKENS, TOKENS),
        "masks_side_by_side": lambda: P.plot_masks_side_by_side(
            {"padding": convert(pm), "causal": convert(cm), "both": convert(combine_masks(pm, cm))}, TOKENS
        ),
        "embeddings_2d": lambda: P.plot_embeddings_2d(
            convert(torch.randn(4, 2, generator=g)), list("abcd"), groups=["x", "x", "y", "y"]
        ),
        "distribution": lambda: P.plot_distribution(
            {"before": convert(torch.randn(500, generator=g) * 3 + 1), "after": convert(torch.randn(500, generator=g))},
            "acts",
        ),
        "lines": lambda: P.plot_lines(
            convert(torch.tensor([8, 16, 32, 64])),
            {"plain": convert(torch.tensor([0.5, 0.7, 0.8, 0.9])), "scaled": [0.3] * 4},
            "saturation",
            "d_k",
            "max weight",
            logx=True,
        ),
        "lr_schedule": lambda: P.plot_lr_schedule(
            convert(torch.arange(1, 101)), convert(torch.cat([torch.linspace(0, 1, 10), torch.ones(90)])), 10
        ),
        "history": lambda: P.plot_history(_history()),
        "label_smoothing_1d": lambda: P.plot_label_smoothing(
            convert(torch.tensor([0.025, 0.9, 0.025, 0.025, 0.025])), list("abcde")
        ),
        "label_smoothing_2d": lambda: P.plot_label_smoothing(
            convert(torch.full((2, 5), 0.02)), list("abcde"), ["a", "b"]
        ),
        "parameter_counts": lambda: P.plot_parameter_counts({"embedding": 64000, "attention": 16640, "norm": 128}),
        "bar": lambda: P.plot_bar({"greedy": convert(torch.tensor(31.2)), "beam": 33.9}, "BLEU", "BLEU"),
        "one_hot_vs_dense": lambda: P.plot_one_hot_vs_dense(
            convert(torch.eye(6)[:3]), convert(torch.randn(3, 4, generator=g)), ["a", "b", "c"]
        ),
    }


CONVERTERS = {"tensor": lambda t: t, "numpy": lambda t: t.numpy() if isinstance(t, torch.Tensor) else t}
NAMES = list(_cases(CONVERTERS["tensor"]))


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def _colorbars(fig):
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


def _assert_readable(fig):
    for ax in fig.axes:
        if ax.get_title():
            assert ax.title.get_fontsize() >= SPEC_MIN["title"], ax.get_title()
        for label in (ax.xaxis.label, ax.yaxis.label):
            if label.get_text():
                assert label.get_fontsize() >= SPEC_MIN["label"], label.get_text()
        for tick in ax.get_xticklabels() + ax.get_yticklabels():
            if tick.get_text() and tick.get_visible():
                assert tick.get_fontsize() >= SPEC_MIN["tick"], tick.get_text()
    if fig._suptitle is not None:
        assert fig._suptitle.get_fontsize() >= SPEC_MIN["title"]


# ---------------------------------------------------------------------------------------------------------------------
# Every helper
# ---------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(CONVERTERS))
@pytest.mark.parametrize("name", NAMES)
def test_every_helper_returns_a_readable_figure_and_draws_it(name, kind, tmp_path, monkeypatch):
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("helpers must not call plt.show()"))
    fig = _cases(CONVERTERS[kind])[name]()
    assert isinstance(fig, Figure)
    assert fig.axes, "the figure has no axes"
    _assert_readable(fig)
    if kind == "numpy":  # render once per helper (the input type does not change the drawing code)
        path = tmp_path / f"{name}.png"
        fig.savefig(path, dpi=40)
        assert path.stat().st_size > 1000
        _assert_readable(fig)  # again after drawing: ticks placed by locators now exist


def test_course_style_fonts_are_projector_sized():
    with matplotlib.rc_context():
        P.use_course_style()
        rc = matplotlib.rcParams
        assert rc["axes.titlesize"] >= SPEC_MIN["title"]
        assert rc["axes.labelsize"] >= SPEC_MIN["label"]
        assert rc["xtick.labelsize"] >= SPEC_MIN["tick"] and rc["ytick.labelsize"] >= SPEC_MIN["tick"]
        assert rc["axes.grid"]  # whitegrid
        _assert_readable(P.plot_attention(_weights(4, 6), TGT, SRC))


def test_importing_the_module_does_not_change_the_style():
    with matplotlib.rc_context():
        before = dict(matplotlib.rcParams)
        importlib.reload(P)
        assert dict(matplotlib.rcParams) == before


def test_same_input_draws_the_same_pixels():
    def pixels():
        fig = P.plot_attention_heads(_weights(2, 4, 6), TGT, SRC)
        fig.canvas.draw()
        return np.asarray(fig.canvas.buffer_rgba()).copy()

    assert np.array_equal(pixels(), pixels())


def test_tensor_inputs_with_grad_and_half_precision_are_accepted():
    w = _weights(4, 6).requires_grad_()
    assert isinstance(P.plot_attention(w, TGT, SRC), Figure)
    assert isinstance(P.plot_attention(w.detach().bfloat16(), TGT, SRC), Figure)


# ---------------------------------------------------------------------------------------------------------------------
# Clear errors when shapes and labels disagree
# ---------------------------------------------------------------------------------------------------------------------

ERRORS = [  # (the argument the message must name, a call with a mismatch)
    ("query_tokens", lambda: P.plot_attention(_weights(4, 6), TGT[:3], SRC)),
    ("key_tokens", lambda: P.plot_attention(_weights(4, 6), TGT, SRC[:5])),
    ("x_labels", lambda: P.plot_heatmap(np.zeros((2, 3)), x_labels=["a", "b"])),
    ("y_labels", lambda: P.plot_heatmap(np.zeros((2, 3)), y_labels=["a"])),
    ("weights", lambda: P.plot_attention(_weights(2, 2, 4, 6), TGT, SRC)),
    ("labels", lambda: P.plot_similarity(np.eye(3), "s", labels=["a", "b"])),
    ("query_tokens", lambda: P.plot_attention_heads(_weights(2, 4, 6), [*TGT, "x"], SRC)),
    ("key_tokens", lambda: P.plot_attention_layers({"l0": _weights(2, 4, 6)}, TGT, SRC[:2])),
    ("maps['l1']", lambda: P.plot_attention_layers({"l0": _weights(2, 4, 6), "l1": _weights(2, 4, 4)}, TGT, SRC)),
    ("heads", lambda: P.plot_attention_layers({"l0": _weights(2, 4, 6)}, TGT, SRC, heads=(0, 2))),
    ("batch_index", lambda: P.plot_attention_heads(_weights(1, 2, 4, 6), TGT, SRC, batch_index=3)),
    ("key_tokens", lambda: P.plot_mask(causal_mask(4), TGT, SRC)),
    ("masks['causal']", lambda: P.plot_masks_side_by_side({"causal": causal_mask(4)}, TOKENS)),
    ("points", lambda: P.plot_embeddings_2d(np.zeros((3, 3)), list("abc"))),
    ("labels", lambda: P.plot_embeddings_2d(np.zeros((3, 2)), list("ab"))),
    ("ys['b']", lambda: P.plot_lines([1, 2, 3], {"a": [1, 2, 3], "b": [1, 2]})),
    ("dims", lambda: P.plot_pe_waves(sinusoidal_table(10, 8), dims=(0, 8))),
    ("tokens", lambda: P.plot_label_smoothing(torch.full((5,), 0.2), list("abc"))),
    ("steps", lambda: P.plot_lr_schedule([1, 2], [0.1, 0.2, 0.3])),
    ("values['empty']", lambda: P.plot_distribution({"empty": np.array([np.nan])})),
    ("dense", lambda: P.plot_one_hot_vs_dense(np.eye(3), np.zeros((2, 4)))),
]


@pytest.mark.parametrize(("argument", "call"), ERRORS, ids=[f"{i}-{arg}" for i, (arg, _) in enumerate(ERRORS)])
def test_mismatched_shapes_raise_a_value_error_naming_the_argument(argument, call):
    with pytest.raises(ValueError) as info:
        call()
    assert argument in str(info.value)


def test_a_non_bool_mask_is_refused_with_the_polarity_hint():
    with pytest.raises(TypeError, match="True = may attend"):
        P.plot_mask(causal_mask(3).float())


# ---------------------------------------------------------------------------------------------------------------------
# Each helper draws what it promises
# ---------------------------------------------------------------------------------------------------------------------


def _ticks(ax, axis="x"):
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in labels]


def test_attention_rows_are_queries_columns_are_keys_with_a_0_to_1_colour_bar():
    fig = P.plot_attention(_weights(4, 6), TGT, SRC, title="cross")
    (ax,) = _panels(fig)
    assert _ticks(ax, "x") == SRC and _ticks(ax, "y") == TGT
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("key", "query", "cross")
    assert ax.collections[0].get_clim() == (0.0, 1.0)
    (cbar,) = _colorbars(fig)
    assert cbar.get_ylabel() == "attention weight"
    assert len(ax.texts) == 4 * 6  # small matrix: annotated automatically
    assert ax.texts[1].get_text() == f"{_weights(4, 6)[0, 1].item():.2f}"


def test_attention_without_annotation_and_into_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    assert P.plot_attention(_weights(4, 6), TGT, SRC, ax=right, annotate=False) is fig
    assert not right.texts and not left.collections


def test_heatmap_centre_gives_symmetric_diverging_limits():
    fig = P.plot_heatmap(np.array([[-1.0, 3.0], [0.5, 2.0]]), center=0.0)
    mesh = _panels(fig)[0].collections[0]
    assert mesh.get_clim() == (-3.0, 3.0)
    assert mesh.cmap.name.startswith(P.DIVERGING_CMAP)


def test_positional_encoding_is_position_by_dimension_with_symmetric_diverging_colours():
    pe = sinusoidal_table(30, 16)
    ax = _panels(P.plot_positional_encoding(pe))[0]
    mesh = ax.collections[0]
    vmin, vmax = mesh.get_clim()
    assert vmin == -vmax and vmax == pytest.approx(float(pe.abs().max()))
    assert mesh.cmap.name.startswith(P.DIVERGING_CMAP)
    assert mesh.get_array().shape == (30, 16)
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("position", "embedding dimension")


def test_similarity_uses_the_diverging_map_only_for_signed_values():
    signed = _panels(P.plot_similarity(np.array([[1.0, -0.5], [-0.5, 1.0]]), "s"))[0].collections[0]
    assert signed.get_clim() == (-1.0, 1.0)
    positive = _panels(P.plot_similarity(np.array([[2.0, 1.0], [1.0, 2.0]]), "s"))[0].collections[0]
    assert positive.cmap.name.startswith(P.SEQUENTIAL_CMAP)


def test_pe_waves_legend_names_sine_and_cosine_dimensions():
    fig = P.plot_pe_waves(sinusoidal_table(40, 16), dims=(0, 1, 4, 5), max_pos=25)
    ax = _panels(fig)[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "dim 0 (sin)",
        "dim 1 (cos)",
        "dim 4 (sin)",
        "dim 5 (cos)",
    ]
    assert all(len(line.get_xdata()) == 25 for line in ax.get_lines())


def test_attention_heads_share_one_colour_scale_and_one_colour_bar():
    fig = P.plot_attention_heads(_weights(3, 4, 6), TGT, SRC)
    panels = _panels(fig)
    assert [ax.get_title() for ax in panels] == ["head 0", "head 1", "head 2"]
    assert all(ax.collections[0].get_clim() == (0.0, 1.0) for ax in panels)
    assert len(_colorbars(fig)) == 1
    assert _ticks(panels[0], "y") == TGT and _ticks(panels[-1], "x") == SRC


def test_attention_layers_grid_is_layers_by_heads_and_can_select_by_name():
    maps = {
        f"decoder.layers.{i}.{kind}": _weights(1, 2, 4, 6 if kind == "cross_attn" else 4)
        for i in range(3)
        for kind in ("self_attn", "cross_attn")
    }
    fig = P.plot_attention_layers(maps, TGT, SRC, select="cross_attn")
    panels = _panels(fig)
    assert len(panels) == 3 * 2
    assert [panels[i].get_ylabel() for i in (0, 2, 4)] == ["layer 0", "layer 1", "layer 2"]  # shortened names
    assert [ax.get_title() for ax in panels[:2]] == ["head 0", "head 1"]
    assert len(_colorbars(fig)) == 1
    np.testing.assert_allclose(panels[3].collections[0].get_array(), maps["decoder.layers.1.cross_attn"][0, 1])
    assert len(_panels(P.plot_attention_layers(maps, TGT, SRC, select="cross_attn", heads=(1,)))) == 3
    mixed = {"enc": _weights(2, 4, 6), "dec": _weights(2, 4, 6)}
    assert [ax.get_ylabel() for ax in _panels(P.plot_attention_layers(mixed, TGT, SRC))[::2]] == ["enc", "dec"]


def test_mask_has_exactly_two_colours_labelled_blocked_and_may_attend():
    mask = causal_mask(5)
    fig = P.plot_mask(mask[None, None], TOKENS, TOKENS)  # 4-D: mask[0, 0] is drawn
    ax = _panels(fig)[0]
    mesh = ax.collections[0]
    assert mesh.cmap.N == 2
    np.testing.assert_array_equal(mesh.get_array(), mask.numpy().astype(float))
    assert mesh.cmap(mesh.norm(1.0)) == to_rgba(P.MASK_COLORS[1])  # True = may attend
    assert mesh.cmap(mesh.norm(0.0)) == to_rgba(P.MASK_COLORS[0])
    (cbar,) = _colorbars(fig)
    assert _ticks(cbar, "y") == ["blocked", "may attend"]
    assert _ticks(ax, "x") == TOKENS and _ticks(ax, "y") == TOKENS


def test_padding_mask_is_repeated_for_every_query():
    pm = padding_mask(torch.tensor([[1, 5, 6, 2, 0]]))  # (1, 1, 1, 5)
    mesh = _panels(P.plot_mask(pm, TOKENS, TOKENS))[0].collections[0]
    assert mesh.get_array().shape == (5, 5)
    assert mesh.get_array()[:, -1].sum() == 0  # the <pad> column is blocked for every query


def test_masks_side_by_side_one_panel_per_mask_and_one_legend():
    pm, cm = padding_mask(torch.tensor([[1, 5, 6, 2, 0]])), causal_mask(5)
    fig = P.plot_masks_side_by_side({"padding": pm, "causal": cm, "combined": combine_masks(pm, cm)}, TOKENS)
    panels = _panels(fig)
    assert [ax.get_title() for ax in panels] == ["padding", "causal", "combined"]
    np.testing.assert_array_equal(panels[2].collections[0].get_array(), combine_masks(pm, cm)[0, 0].numpy())
    assert len(_colorbars(fig)) == 1


def test_embeddings_label_every_point():
    ax = _panels(P.plot_embeddings_2d(np.arange(8.0).reshape(4, 2), ["eins", "zwei", "Hund", "Katze"]))[0]
    assert [t.get_text() for t in ax.texts] == ["eins", "zwei", "Hund", "Katze"]


def test_distribution_uses_shared_bins_and_reports_mean_and_std():
    ax = _panels(P.plot_distribution({"a": np.zeros(10), "b": np.ones(10) * 2}, xlabel="x"))[0]
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == ["a (mean 0.00, std 0.00)", "b (mean 2.00, std 0.00)"]
    assert ax.get_ylabel() == "density"


def test_lines_one_entry_per_series():
    fig = P.plot_lines(None, {"with residual": [1.0, 0.9, 0.8], "without": [1.0, 0.1, 0.01]}, logy=True)
    ax = _panels(fig)[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["with residual", "without"]
    assert ax.get_yscale() == "log"
    np.testing.assert_array_equal(ax.get_lines()[0].get_xdata(), [0, 1, 2])


def test_lr_schedule_marks_the_end_of_warm_up():
    steps = np.arange(1, 201)
    lrs = np.minimum(steps / 50, (50 / steps) ** 0.5) * 1e-3
    ax = _panels(P.plot_lr_schedule(steps, lrs, warmup_steps=50))[0]
    vertical = [line for line in ax.get_lines() if list(line.get_xdata()) == [50, 50]]
    assert len(vertical) == 1
    assert any("warm-up" in t.get_text() for t in ax.get_legend().get_texts())


def test_history_draws_one_panel_per_available_metric():
    fig = P.plot_history(_history())
    assert [ax.get_title() for ax in _panels(fig)] == ["Loss", "Perplexity", "BLEU"]
    loss = _panels(fig)[0]
    assert [t.get_text() for t in loss.get_legend().get_texts()] == ["train", "valid"]
    np.testing.assert_array_equal(loss.get_lines()[0].get_xdata(), [1, 2, 3, 4])


def test_history_handles_missing_keys_empty_history_and_redrawing():
    partial = [{"epoch": 1, "train_loss": torch.tensor(3.0)}, {"epoch": 2, "train_loss": 2.0, "valid_loss": None}]
    fig = P.plot_history(partial)
    assert [ax.get_title() for ax in _panels(fig)] == ["Loss"]
    assert [t.get_text() for t in _panels(fig)[0].get_legend().get_texts()] == ["train"]
    assert isinstance(P.plot_history([]), Figure)
    again = P.plot_history(_history(), fig=fig)  # live update: same figure, redrawn
    assert again is fig and len(_panels(fig)) == 3


def test_label_smoothing_bars_and_heatmap():
    dist = torch.tensor([0.025, 0.9, 0.025, 0.025, 0.025])
    ax = _panels(P.plot_label_smoothing(dist, list("abcde")))[0]
    assert _ticks(ax, "x") == list("abcde")
    assert [p.get_height() for p in ax.patches] == pytest.approx(dist.tolist())
    ax = _panels(P.plot_label_smoothing(torch.stack([dist, dist.flip(0)]), list("abcde"), ["b", "d"]))[0]
    assert _ticks(ax, "y") == ["b", "d"] and ax.collections[0].get_clim() == (0.0, 1.0)


def test_parameter_counts_write_numbers_and_total():
    fig = P.plot_parameter_counts({"embedding": 64000, "attention": 16000}, "Encoder")
    ax = _panels(fig)[0]
    assert ax.get_title() == "Encoder (total 80,000)"
    assert [t.get_text().strip() for t in ax.texts] == ["64,000 (80.0%)", "16,000 (20.0%)"]
    assert _ticks(ax, "y") == ["embedding", "attention"]


def test_bar_writes_each_value():
    ax = _panels(P.plot_bar({"plain": 0.4123, "bucketed": 0.05}, "Padding", "fraction"))[0]
    assert [t.get_text() for t in ax.texts] == ["0.412", "0.050"]
    assert _ticks(ax, "x") == ["plain", "bucketed"]
    ax = _panels(P.plot_bar({"greedy": 31.24, "beam": 33.87}, fmt=".1f"))[0]
    assert [t.get_text() for t in ax.texts] == ["31.2", "33.9"]


def test_one_hot_vs_dense_shows_the_same_tokens_in_both_panels():
    fig = P.plot_one_hot_vs_dense(np.eye(5)[[1, 3]], np.array([[0.5, -1.0], [2.0, 0.0]]), ["a", "b"])
    one_hot, dense = _panels(fig)
    assert _ticks(one_hot, "y") == ["a", "b"]
    assert dense.collections[0].get_clim() == (-2.0, 2.0)


def test_heatmap_annotations_follow_the_format():
    ax = _panels(P.plot_heatmap(np.array([[1, 20], [300, 4]]), annotate=True, fmt="d"))[0]
    assert [t.get_text() for t in ax.texts] == ["1", "20", "300", "4"]


def test_plotting_package_modules_read_in_one_sitting_and_export_every_helper():
    from pathlib import Path

    for path in Path(P.__file__).parent.glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) < 400, f"{path.name} is too long to read at once"
    for name in P.__all__:
        assert getattr(P, name) is not None


def test_log_axis_over_less_than_a_decade_gets_several_round_ticks():
    """A per-batch loss between 0.9 and 7 on a log axis: the default log ticks would label only "1"."""
    steps = np.arange(1, 501)
    loss = 0.95 + 6 * np.exp(-steps / 60)
    fig = P.plot_lines(steps, {"loss": loss}, logy=True)
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]
    assert labels == ["1", "2", "3", "5"], labels
    plt.close(fig)


def test_decoder_rows_read_input_arrow_prediction_in_every_helper():
    """Notebooks 09 and 11 label decoder rows the same way: the token a position reads -> the one it predicts."""
    inputs, outputs, src = ["<bos>", "The", "dog"], ["The", "dog", "<eos>"], ["Der", "Hund", "<eos>"]
    assert P.decoder_row_labels(inputs, outputs) == ["<bos> → The", "The → dog", "dog → <eos>"]
    weights = torch.full((1, 2, 3, 3), 1 / 3)
    fig = P.plot_attention(weights[0, 0], query_tokens=inputs, key_tokens=src, predicted_tokens=outputs)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["<bos> → The", "The → dog", "dog → <eos>"]
    assert ax.get_ylabel() == "decoder position: reads → predicts"
    plt.close(fig)
    fig = P.plot_attention_layers({"decoder.layers.0.cross_attn": weights}, query_tokens=inputs, key_tokens=src,
                                  predicted_tokens=outputs)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["<bos> → The", "The → dog", "dog → <eos>"]
    assert fig.get_supylabel() == "decoder position: reads → predicts"
    plt.close(fig)
    with pytest.raises(ValueError, match="predicted_tokens has 2 label"):
        P.plot_attention(weights[0, 0], query_tokens=inputs, predicted_tokens=outputs[:2])
    with pytest.raises(ValueError, match="needs query_tokens"):
        P.plot_attention(weights[0, 0], predicted_tokens=outputs)


def test_ownership_map_greens_the_saved_parts_only():
    """draw_ownership: with every building notebook the student's, the boxes of saved parts are green and the
    glue course_lib builds around them (the shift right, the output layer) stays grey."""
    from matplotlib.colors import to_hex

    from course_lib import diagrams

    fig = diagrams.draw_ownership({f"{n:02d}" for n in range(2, 10)})
    boxes = fig.axes[0].patches[len(diagrams._STACKS):len(diagrams._STACKS) + len(diagrams._BOXES)]
    colour = {label: to_hex(patch.get_facecolor()) for (label, *_), patch in zip(diagrams._BOXES, boxes, strict=True)}
    assert colour["Linear → softmax over English words"] == "#e5e7e9"
    assert colour["English tokens → ids (shifted right)"] == "#e5e7e9"
    assert colour["Feed-forward"] == "#abebc6" and colour["+ positional encoding"] == "#abebc6"
    plt.close(fig)
