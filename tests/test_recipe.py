"""The recipe that scales (course_lib.recipe): the toy size keeps the course defaults, bigger models get
smaller peaks and longer warm-ups, explicit flags win, and models from d_model 64 to 512 with 2 to 6
layers, post-norm and pre-norm, learn under it instead of stalling."""

import math

import pytest
import torch
from test_training import VOCAB, copy_batches

from course_lib import train as train_cli
from course_lib.losses import LabelSmoothingLoss
from course_lib.model import Transformer, TransformerConfig
from course_lib.recipe import (
    ANCHOR_PEAK_LR,
    choose_recipe,
    noam_factor,
    peak_lr_for,
    singleton_share,
    warmup_for,
)
from course_lib.schedule import noam_lr
from course_lib.training import TrainConfig, evaluate_loss, train


def short_pairs(n=200, singletons=False):
    """Token pairs with a small repeated vocabulary (toy-like), or with many words seen once (real-text-like)."""
    words = ["der", "hund", "die", "katze", "sieht", "."]
    pairs = []
    for i in range(n):
        src = [words[i % 6], words[(i + 1) % 6], words[(i + 2) % 6]] + ([f"wort{i}"] if singletons else [])
        pairs.append((src, [w.upper() for w in src]))
    return pairs


def test_the_toy_size_keeps_the_course_defaults():
    defaults = TrainConfig()
    recipe = choose_recipe(64, 2, short_pairs(), epochs=100, time_budget=120.0)
    assert recipe.warmup_steps == defaults.warmup_steps
    assert recipe.lr_factor == pytest.approx(defaults.lr_factor)
    assert recipe.peak_lr == pytest.approx(noam_lr(defaults.warmup_steps, 64, defaults.warmup_steps))
    assert recipe.dropout == TransformerConfig().dropout and recipe.min_freq == 1
    assert recipe.tie_embeddings == TransformerConfig().tie_embeddings is False
    assert recipe.lr_decay == defaults.lr_decay == "inverse_sqrt"  # a time budget: the Noam decay, as before
    mean_target = 4.0  # 3 words + <eos>
    assert recipe.batch_tokens == round(defaults.batch_size * mean_target)  # 128 sentences on average


def test_bigger_models_get_smaller_peaks_and_longer_warmups():
    assert peak_lr_for(256, 3) == pytest.approx(ANCHOR_PEAK_LR / 4 * 1.5**-0.5)
    assert 1.75e-3 < peak_lr_for(256, 3) < 1.85e-3  # the 1.8e-3 measured on Multi30k
    assert 6e-4 < peak_lr_for(512, 6) < 7e-4  # near the paper's base model (7.0e-4)
    peaks = [peak_lr_for(d, 2) for d in (64, 128, 256, 512)]
    assert peaks == sorted(peaks, reverse=True)
    assert peak_lr_for(512, 6) < peak_lr_for(512, 2)
    assert peak_lr_for(32, 1) == pytest.approx(ANCHOR_PEAK_LR)  # never above the toy rate
    assert warmup_for(256, 3) == round(200 * math.sqrt(4 * 1.5)) == 490
    assert warmup_for(256, 3, expected_steps=1000) == 250  # at most a quarter of the run
    assert warmup_for(256, 3, expected_steps=40) == 50  # at least 50
    recipe = choose_recipe(256, 3, short_pairs(), epochs=100)
    assert recipe.dropout == 0.1 and recipe.tie_embeddings
    assert choose_recipe(128, 2, short_pairs()).tie_embeddings and not choose_recipe(96, 2, short_pairs()).tie_embeddings
    assert "tie_embeddings" in recipe.describe()
    assert noam_lr(recipe.warmup_steps, 256, recipe.warmup_steps, recipe.lr_factor) == pytest.approx(recipe.peak_lr)


def test_the_decay_is_inverse_sqrt_unless_linear_is_asked_for():
    pairs = short_pairs()  # 200 pairs of 4 target tokens: batches of 512 tokens, 2 steps per epoch
    for recipe in (choose_recipe(256, 3, pairs, epochs=400), choose_recipe(256, 3, pairs, epochs=400, time_budget=60.0),
                   choose_recipe(256, 3, pairs), choose_recipe(64, 2, pairs, max_steps=30)):
        assert recipe.lr_decay == "inverse_sqrt" and "1/sqrt(step)" in recipe.reasons["lr_decay"]
    linear = choose_recipe(256, 3, pairs, epochs=400, overrides={"lr_decay": "linear"})
    assert linear.lr_decay == "linear" and linear.reasons["lr_decay"] == "flag"


def test_min_freq_two_only_where_many_words_occur_once():
    assert singleton_share([["a", "a", "b"]]) == pytest.approx(0.5)
    assert choose_recipe(64, 2, short_pairs(singletons=False)).min_freq == 1
    many_rare = choose_recipe(64, 2, short_pairs(singletons=True))
    assert many_rare.min_freq == 2 and "occur once" in many_rare.reasons["min_freq"]


def test_explicit_settings_are_kept_and_marked():
    recipe = choose_recipe(256, 3, short_pairs(), overrides={"warmup_steps": 4000, "dropout": 0.3, "min_freq": 5,
                                                            "batch_size": 64, "tie_embeddings": False})
    assert (recipe.warmup_steps, recipe.dropout, recipe.min_freq) == (4000, 0.3, 5)
    assert recipe.batch_tokens is None and recipe.batch_size == 64
    assert recipe.lr_factor == pytest.approx(noam_factor(peak_lr_for(256, 3), 256, 4000))
    assert recipe.reasons["warmup_steps"] == recipe.reasons["dropout"] == recipe.reasons["tie_embeddings"] == "flag"
    assert recipe.tie_embeddings is False
    by_factor = choose_recipe(256, 3, short_pairs(), overrides={"lr_factor": 2.0, "warmup_steps": 100})
    assert by_factor.lr_factor == 2.0 and by_factor.peak_lr == pytest.approx(2.0 * (256 * 100) ** -0.5)
    assert "peak_lr" in choose_recipe(256, 3, short_pairs(), overrides={"peak_lr": 5e-4}).describe()


def test_the_command_line_applies_the_recipe_unless_a_flag_is_given():
    pairs = short_pairs()
    argv = ["--d-model", "256", "--n-heads", "8", "--layers", "3"]
    args = train_cli.build_parser().parse_args(argv)
    train_cli.apply_recipe(args, train_cli.given_options(argv), pairs)
    assert args.warmup == 490 and args.dropout == 0.1 and args.batch_tokens == 128 * 4
    assert args.lr_decay == "inverse_sqrt"  # the default 120 s budget: the end is not known
    assert args.tie_embeddings and train_cli.model_config(args, *[["<pad>"] * 10] * 2).tie_embeddings
    known_length = [*argv, "--time-budget", "0", "--epochs", "400"]
    args = train_cli.build_parser().parse_args(known_length)
    train_cli.apply_recipe(args, train_cli.given_options(known_length), pairs)
    assert args.lr_decay == "inverse_sqrt"
    known_length += ["--lr-decay", "linear"]
    args = train_cli.build_parser().parse_args(known_length)
    train_cli.apply_recipe(args, train_cli.given_options(known_length), pairs)
    assert args.lr_decay == "linear" and train_cli.train_config(args).lr_decay == "linear"
    argv += ["--warmup", "300", "--dropout", "0", "--batch-size", "32"]
    args = train_cli.build_parser().parse_args(argv)
    train_cli.apply_recipe(args, train_cli.given_options(argv), pairs)
    assert args.warmup == 300 and args.dropout == 0.0 and args.batch_tokens is None and args.batch_size == 32
    untied = [*argv, "--no-tie-embeddings"]
    args = train_cli.build_parser().parse_args(untied)
    train_cli.apply_recipe(args, train_cli.given_options(untied), pairs)
    assert args.tie_embeddings is False
    both = ["--lr-factor", "1", "--peak-lr", "1e-3"]
    with pytest.raises(train_cli.UsageError, match="not both"):
        train_cli.apply_recipe(train_cli.build_parser().parse_args(both), train_cli.given_options(both), pairs)


STEPS = 60
SOURCE_BLIND = math.log(VOCAB - 4)  # the loss of a model that ignores the source: a uniform guess among 8 symbols


@pytest.mark.parametrize(("d_model", "layers", "norm_first"), [
    (64, 6, False), (128, 4, True), (256, 3, False), (512, 2, True), (512, 2, False),
])
def test_models_from_64_to_512_wide_learn_under_the_recipe(d_model, layers, norm_first):
    """A short run of the copy task: the loss must fall clearly, below what a source-blind model can reach."""
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, d_model=d_model, n_heads=4,
                                          d_ff=d_model, n_encoder_layers=layers, n_decoder_layers=layers,
                                          norm_first=norm_first, max_len=16,
                                          tie_embeddings=d_model >= 128))  # as the recipe chooses (checked below)
    recipe = choose_recipe(d_model, layers, [(["a"] * 5, ["a"] * 5)], max_steps=STEPS)
    assert recipe.tie_embeddings == model.config.tie_embeddings
    held_out = copy_batches(2, 64, seed=99)
    criterion = LabelSmoothingLoss(0.0, 0)
    before = evaluate_loss(model, held_out, criterion).loss
    config = TrainConfig(epochs=1, max_steps=STEPS, warmup_steps=recipe.warmup_steps, lr_factor=recipe.lr_factor,
                         lr_decay=recipe.lr_decay, label_smoothing=0.0, progress=False, num_threads=1)
    train(model, copy_batches(STEPS, 24, seed=1), None, config)
    after = evaluate_loss(model, held_out, criterion).loss
    assert after < 0.6 * before and after < 0.8 * SOURCE_BLIND, (before, after)
