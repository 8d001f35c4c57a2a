"""Loss, schedule and training loop: label smoothing ignores padding, the warm-up peaks where it
should, a tiny model learns to copy (loop + greedy decoding + causal mask), runs repeat exactly,
limits and callbacks stop training, and the command line trains and translates end to end."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_lib.decoding import greedy_decode
from course_lib.losses import LabelSmoothingLoss, smoothed_target_distribution
from course_lib.model import Transformer, TransformerConfig
from course_lib.schedule import linear_decay_lr, make_noam_scheduler, make_optimizer, noam_lr
from course_lib.tokenization import Vocab
from course_lib.training import BleuCallback, Callback, LambdaCallback, TrainConfig, WeightAverage, train
from course_lib.utils import configure_threads

configure_threads()  # one thread (or COURSE_NUM_THREADS): robust on a busy machine
VOCAB = 12  # copy task: 4 specials + 8 symbols


def copy_batches(n_batches: int, batch_size: int, seed: int, min_len: int = 3, max_len: int = 7):
    """Batches (src, tgt_in, tgt_out) of the copy task: the target is the source."""
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n_batches):
        lengths = torch.randint(min_len, max_len + 1, (batch_size,), generator=g).tolist()
        width = max(lengths) + 1
        src = torch.zeros(batch_size, width, dtype=torch.long)
        tgt_in = torch.zeros(batch_size, width, dtype=torch.long)
        tgt_out = torch.zeros(batch_size, width, dtype=torch.long)
        for row, n in enumerate(lengths):
            seq = torch.randint(4, VOCAB, (n,), generator=g)
            src[row, :n], src[row, n] = seq, 2  # x <eos>
            tgt_in[row, 0], tgt_in[row, 1 : n + 1] = 1, seq  # <bos> y
            tgt_out[row, :n], tgt_out[row, n] = seq, 2  # y <eos>
        batches.append((src, tgt_in, tgt_out))
    return batches


def tiny_model(seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    settings = dict(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, d_model=32, n_heads=2, d_ff=64,
                    n_encoder_layers=1, n_decoder_layers=1, dropout=0.0, max_len=32)
    settings.update(overrides)
    return Transformer(TransformerConfig(**settings))


def quiet(**overrides) -> TrainConfig:
    settings = dict(epochs=2, warmup_steps=40, lr_factor=1.0, label_smoothing=0.0, progress=False, num_threads=1)
    settings.update(overrides)
    return TrainConfig(**settings)


# ----- loss -----

def test_loss_ignores_padding_positions():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 10)
    target = torch.randint(4, 10, (3, 5))
    target[0, 3:] = 0
    target[2, 1:] = 0
    loss = LabelSmoothingLoss(0.1, pad_id=0)
    changed = logits.clone()
    changed[target == 0] = torch.randn_like(changed[target == 0]) * 100  # garbage where there is no token
    assert torch.allclose(loss(logits, target), loss(changed, target))
    changed[0, 0, 4] += 1.0  # a real position does change it
    assert not torch.allclose(loss(logits, target), loss(changed, target))


def test_loss_matches_torch_cross_entropy_and_smoothed_distribution():
    torch.manual_seed(1)
    logits = torch.randn(4, 6, 9)
    target = torch.randint(1, 9, (4, 6))
    target[1, 2:] = 0
    for eps in (0.0, 0.1, 0.3):
        ours = LabelSmoothingLoss(eps, pad_id=0)(logits, target)
        torch_loss = F.cross_entropy(logits.view(-1, 9), target.view(-1), label_smoothing=eps, ignore_index=0)
        dist = smoothed_target_distribution(target, 9, eps, pad_id=0)  # (4, 6, 9)
        by_hand = -(dist * logits.log_softmax(-1)).sum() / (target != 0).sum()
        assert torch.allclose(ours, torch_loss, atol=1e-6)
        assert torch.allclose(ours, by_hand, atol=1e-6)


def test_smoothed_distribution_sums_to_one_with_the_right_mass():
    target = torch.tensor([[5, 7, 0]])
    dist = smoothed_target_distribution(target, num_classes=10, smoothing=0.1, pad_id=0)
    assert dist.shape == (1, 3, 10)
    assert torch.allclose(dist[0, :2].sum(-1), torch.ones(2))
    assert math.isclose(float(dist[0, 0, 5]), 0.9 + 0.01, rel_tol=1e-6)
    assert math.isclose(float(dist[0, 0, 4]), 0.01, rel_tol=1e-6)
    assert float(dist[0, 2].sum()) == 0.0  # padding row: not trained on
    with pytest.raises(ValueError, match="smoothing"):
        LabelSmoothingLoss(1.0)


def test_loss_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="must match"):
        LabelSmoothingLoss(0.1)(torch.randn(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))


# ----- schedule -----

def test_noam_schedule_rises_linearly_and_peaks_at_warmup():
    d_model, warmup = 64, 100
    rates = [noam_lr(step, d_model, warmup) for step in range(1, 1000)]
    assert max(range(len(rates)), key=rates.__getitem__) + 1 == warmup
    assert math.isclose(rates[warmup - 1], (d_model * warmup) ** -0.5)
    assert math.isclose(rates[49] / rates[24], 2.0)  # linear: step 50 has twice the rate of step 25
    assert math.isclose(rates[399] / rates[99], 0.5)  # then 1/sqrt(step): step 400 has half the peak
    assert math.isclose(noam_lr(50, d_model, warmup, factor=2.0), 2 * rates[49])


def test_scheduler_gives_update_k_the_rate_of_step_k():
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = make_optimizer([param])
    assert optimizer.defaults["betas"] == (0.9, 0.98) and optimizer.defaults["eps"] == 1e-9
    scheduler = make_noam_scheduler(optimizer, d_model=16, warmup=4, factor=1.5)
    for step in range(1, 10):
        assert math.isclose(optimizer.param_groups[0]["lr"], noam_lr(step, 16, 4, 1.5))
        optimizer.step()
        scheduler.step()
    with pytest.raises(ValueError, match=r"lr must be 1\.0"):
        make_noam_scheduler(torch.optim.Adam([param], lr=0.1), 16, 4)


def test_linear_decay_shares_the_warmup_and_peak_then_falls_to_zero_at_the_last_step():
    d_model, warmup, total = 64, 100, 500
    rates = [linear_decay_lr(step, d_model, warmup, 2.0, total) for step in range(1, total + 3)]
    assert rates[:warmup] == pytest.approx([noam_lr(s, d_model, warmup, 2.0) for s in range(1, warmup + 1)])
    assert max(rates) == pytest.approx(2.0 * (d_model * warmup) ** -0.5) == rates[warmup - 1]
    assert rates[299] == pytest.approx(rates[warmup - 1] / 2)  # halfway down at step 300
    assert rates[total - 1] == 0.0 and rates[total + 1] == 0.0  # 0 at the last planned step and after it
    assert all(a >= b for a, b in zip(rates[warmup - 1:], rates[warmup:], strict=False))
    with pytest.raises(ValueError, match="total_steps must be larger than warmup"):
        linear_decay_lr(1, d_model, warmup, 1.0, total_steps=warmup)
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = make_optimizer([param])
    scheduler = make_noam_scheduler(optimizer, d_model, warmup=4, factor=1.0, total_steps=10)
    for step in range(1, 12):
        assert math.isclose(optimizer.param_groups[0]["lr"], linear_decay_lr(step, d_model, 4, 1.0, 10))
        optimizer.step()
        scheduler.step()
    with pytest.raises(ValueError, match="total_steps must be larger"):
        make_noam_scheduler(optimizer, d_model, warmup=4, total_steps=3)


def test_linear_decay_in_training_ends_at_zero_and_needs_a_known_length():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, d_model=16, n_heads=2, d_ff=32,
                                          n_encoder_layers=1, n_decoder_layers=1, max_len=16))
    batches = copy_batches(6, 8, seed=3)
    config = TrainConfig(epochs=2, warmup_steps=4, lr_decay="linear", progress=False, num_threads=1, ema_decay=None)
    history = train(model, batches, None, config)
    assert [h["step"] for h in history] == [6, 12]
    assert history[-1]["lr"] == 0.0  # 12 planned steps: the rate reached 0 at the last one
    with pytest.raises(ValueError, match="lr_decay must be 'inverse_sqrt' or 'linear'"):
        train(model, batches, None, TrainConfig(epochs=1, lr_decay="cosine", progress=False))
    with pytest.raises(ValueError, match="needs the run's length"):
        train(model, iter(batches), None, TrainConfig(epochs=1, warmup_steps=2, lr_decay="linear", progress=False))
    with pytest.raises(ValueError, match=r"more planned steps \(6\) than warmup_steps \(200\)"):
        train(model, batches, None, TrainConfig(epochs=1, lr_decay="linear", progress=False))


# ----- the loop -----

def test_tiny_model_learns_to_copy_and_greedy_decoding_copies_unseen_sequences():
    model = tiny_model()
    history = train(model, copy_batches(20, 32, seed=0), copy_batches(2, 32, seed=1), quiet(epochs=15))
    assert len(history) == 15
    assert history[-1]["valid_loss"] < 0.2 < history[0]["valid_loss"]
    src, _, tgt_out = copy_batches(1, 64, seed=2)[0]  # sequences never seen in training
    output = greedy_decode(model, src, max_len=10)
    width = tgt_out.size(1)
    exact = (output[:, :width] == tgt_out).all(dim=1).float().mean()
    assert exact >= 0.9, f"only {exact:.2f} of unseen sequences copied exactly"


def test_history_has_the_documented_fields():
    history = train(tiny_model(), copy_batches(3, 8, seed=0), copy_batches(1, 8, seed=1), quiet())
    assert [h["epoch"] for h in history] == [1, 2]
    assert [h["step"] for h in history] == [3, 6]
    for key in ("train_loss", "valid_loss", "train_ppl", "valid_ppl", "seconds", "wall_seconds", "lr", "tokens"):
        assert key in history[0]
    assert math.isclose(history[0]["valid_ppl"], math.exp(history[0]["valid_loss"]), rel_tol=1e-5)  # no smoothing


def test_same_seed_gives_identical_weights_and_a_different_seed_does_not():
    def run(seed):
        model = tiny_model(seed=seed, dropout=0.1)  # dropout: the loop's random state matters too
        train(model, copy_batches(4, 8, seed=0), None, quiet(seed=seed, restore_best=False))
        return model.state_dict()

    first, second, other = run(0), run(0), run(1)
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


def test_time_budget_stops_training():
    budget = 0.3
    history = train(tiny_model(), copy_batches(5, 8, seed=0), None, quiet(epochs=10_000, time_budget=budget))
    assert history, "at least one (partial) epoch is recorded"
    assert budget <= history[-1]["seconds"] < budget + 1.0
    assert history[-1]["epoch"] < 10_000


def test_max_steps_stops_exactly():
    history = train(tiny_model(), copy_batches(5, 8, seed=0), None, quiet(epochs=100, max_steps=7))
    assert history[-1]["step"] == 7 and history[-1]["epoch"] == 2  # 5 steps, then 2 of the second epoch


def test_callbacks_are_called_and_can_stop_training():
    steps, epochs = [], []

    class StopAfterTwoEpochs(Callback):
        def on_epoch_end(self, history):
            epochs.append(len(history))
            return len(history) == 2

    history = train(tiny_model(), copy_batches(3, 8, seed=0), None, quiet(epochs=10),
                    callbacks=[LambdaCallback(on_step_end=lambda info: steps.append(info["step"])),
                               StopAfterTwoEpochs()])
    assert len(history) == 2 and epochs == [1, 2] and steps == list(range(1, 7))


def test_bleu_callback_adds_validation_bleu_to_the_history():
    vocab = Vocab([f"s{i}" for i in range(VOCAB - 4)])  # ids 4.. are the copy task's symbols
    src, _, tgt_out = copy_batches(1, 8, seed=1)[0]
    sentences = [vocab.decode(row) for row in src.tolist()]
    references = [vocab.decode(row) for row in tgt_out.tolist()]
    model = tiny_model()
    history = train(model, copy_batches(3, 8, seed=0), None, quiet(),
                    callbacks=[BleuCallback(model, sentences, references, vocab, vocab)])
    assert all(0.0 <= h["valid_bleu"] <= 100.0 for h in history) and len(history) == 2


def test_restore_best_loads_the_weights_with_the_lowest_validation_loss():
    model = tiny_model()
    valid = copy_batches(1, 16, seed=1)
    snapshots = []
    train(model, copy_batches(5, 16, seed=0), valid, quiet(epochs=4, lr_factor=8.0),  # noisy on purpose
          callbacks=[LambdaCallback(on_epoch_end=lambda h: snapshots.append(
              (h[-1]["valid_loss"], {k: v.clone() for k, v in model.state_dict().items()})))])
    _, best_state = min(snapshots, key=lambda item: item[0])
    assert all(torch.equal(model.state_dict()[k], best_state[k]) for k in best_state)


def test_weight_average_follows_its_formula():
    trained, averaged = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    torch.nn.init.zeros_(averaged.weight)
    torch.nn.init.ones_(trained.weight)
    average = WeightAverage(averaged, decay=0.9)
    average.update(trained)  # first update: d = min(0.9, 2 / 11)
    assert torch.allclose(averaged.weight, torch.full((1, 2), 1 - 2 / 11))
    for _ in range(200):
        average.update(trained)
    assert torch.allclose(averaged.weight, trained.weight, atol=1e-6)  # a constant is its own average
    with pytest.raises(ValueError, match="ema_decay"):
        WeightAverage(averaged, decay=1.0)


def test_with_averaging_the_returned_model_holds_the_average_not_the_last_weights():
    data = copy_batches(4, 8, seed=0)
    plain, averaged = tiny_model(), tiny_model()
    train(plain, data, None, quiet(ema_decay=None, restore_best=False))
    train(averaged, data, None, quiet(ema_decay=0.5, restore_best=False))
    same_training = [torch.equal(plain.state_dict()[k], averaged.state_dict()[k]) for k in plain.state_dict()]
    assert not all(same_training)  # same steps, but the average differs from the final weights


# ----- command line -----

def test_cli_trains_writes_a_checkpoint_and_translates(tmp_path, capsys):
    from course_lib import train as train_cli
    from course_lib import translate as translate_cli

    checkpoint = tmp_path / "tiny.pt"
    code = train_cli.main([
        "--max-train-pairs", "300", "--max-eval-pairs", "40", "--max-steps", "6", "--batch-size", "64",
        "--d-model", "32", "--d-ff", "64", "--n-heads", "2", "--layers", "1",
        "--output", str(checkpoint), "--no-progress", "--samples", "2",
    ])
    assert code == 0 and checkpoint.is_file()
    out = capsys.readouterr().out
    assert "BLEU" in out and "nrefs:1" in out and "exact match" in out
    assert translate_cli.main([str(checkpoint), "Der Hund sieht die Katze.", "Ich trinke Wasser."]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2


# ----- which epoch's weights are kept (issue 37) -----

class ScriptedBleu(BleuCallback):
    """A BleuCallback whose validation BLEU is given by epoch (no decoding); records each epoch's weights."""

    def __init__(self, model, scores: dict[int, float]):
        super().__init__(model, [], [], None, None)
        self.scores, self.states = scores, {}

    def on_epoch_end(self, history):
        epoch = history[-1]["epoch"]
        if epoch in self.scores:
            history[-1].update(valid_bleu=self.scores[epoch], valid_bleu_lc=self.scores[epoch])
        self.states[epoch] = {k: v.clone() for k, v in self.model.state_dict().items()}
        return None


def same_weights(model, state) -> bool:
    return all(torch.equal(model.state_dict()[k], state[k]) for k in state)


@pytest.mark.parametrize(("select_by", "kept"), [("bleu", 2), ("last", 4)])
def test_select_by_keeps_the_epoch_with_the_highest_validation_bleu_or_the_last(select_by, kept):
    model = tiny_model()
    scripted = ScriptedBleu(model, {1: 10.0, 2: 30.0, 3: 20.0, 4: 5.0})
    history = train(model, copy_batches(5, 16, seed=0), copy_batches(1, 16, seed=1),
                    quiet(epochs=4, select_by=select_by), callbacks=[scripted])
    assert min(history, key=lambda h: h["valid_loss"])["epoch"] != 2  # the loss would keep another epoch
    assert same_weights(model, scripted.states[kept])


def test_choose_epoch_takes_the_earliest_best_and_skips_unscored_or_nan_epochs():
    from course_lib.training import choose_epoch, describe_choice

    history = [{"epoch": 1, "train_loss": 3.0, "valid_loss": 2.0, "valid_bleu_lc": 20.0},
               {"epoch": 2, "train_loss": 2.0, "valid_loss": 1.5},  # BLEU not scored this epoch
               {"epoch": 3, "train_loss": 1.0, "valid_loss": float("nan"), "valid_bleu_lc": 25.0},
               {"epoch": 4, "train_loss": 0.5, "valid_loss": 1.5, "valid_bleu_lc": 25.0}]
    assert choose_epoch(history, "bleu")["epoch"] == 3  # a tie goes to the earlier epoch
    assert choose_epoch(history, "loss")["epoch"] == 2  # NaN is never the best
    assert choose_epoch(history, "last")["epoch"] == 4
    assert choose_epoch(history[1:2], "bleu") is None
    line = describe_choice(history, "bleu")
    assert line.startswith("kept epoch 3 of 4: the highest validation BLEU (25.00") and "epoch 2's (1.500)" in line
    assert describe_choice(history, "last").startswith("kept epoch 4 of 4: the last epoch")
    with pytest.raises(ValueError, match="select_by must be one of 'loss', 'bleu', 'last', got 'blue'"):
        choose_epoch(history, "blue")


def test_select_by_bleu_needs_a_bleu_callback_and_unknown_rules_are_refused():
    batches = copy_batches(2, 8, seed=0)
    with pytest.raises(ValueError, match="select_by='bleu' needs a BleuCallback"):
        train(tiny_model(), batches, None, quiet(select_by="bleu"))
    with pytest.raises(ValueError, match="select_by must be one of 'loss', 'bleu', 'last', got 'best'"):
        train(tiny_model(), batches, None, quiet(select_by="best"))
    with pytest.raises(ValueError, match="every must be a positive whole number of epochs, got 0"):
        BleuCallback(tiny_model(), [], [], None, None, every=0)


def test_bleu_callback_scores_lower_cased_bleu_every_nth_epoch_against_raw_references():
    vocab = Vocab([f"s{i}" for i in range(VOCAB - 4)])
    src, _, tgt_out = copy_batches(1, 8, seed=1)[0]
    sentences = [vocab.decode(row) for row in src.tolist()]
    references = [" ".join(vocab.decode(row)).upper() for row in tgt_out.tolist()]  # raw lines, other case
    model = tiny_model()
    history = train(model, copy_batches(20, 32, seed=0), None, quiet(epochs=4),
                    callbacks=[BleuCallback(model, sentences, references, vocab, vocab, every=2)])
    assert [("valid_bleu_lc" in h) for h in history] == [False, True, False, True]
    assert history[-1]["valid_bleu_lc"] > 50.0 > history[-1]["valid_bleu"]  # only the case differs


def test_resuming_keeps_the_epoch_the_rule_chose_before_the_interruption(tmp_path):
    vocab = Vocab([f"s{i}" for i in range(VOCAB - 4)])
    scores = {1: 10.0, 2: 30.0, 3: 20.0, 4: 5.0}
    data, valid = copy_batches(5, 16, seed=0), copy_batches(1, 16, seed=1)

    def run(epochs, resume_from=None, **paths):
        model = tiny_model()
        scripted = ScriptedBleu(model, scores)
        train(model, data, valid, quiet(epochs=epochs, select_by="bleu", **paths), [scripted], vocab, vocab,
              resume_from=resume_from)
        return model, scripted

    whole, scripted = run(4)
    paths = {"best_checkpoint": str(tmp_path / "best.pt"), "last_checkpoint": str(tmp_path / "last.pt")}
    run(3, **paths)  # interrupted after epoch 3: epoch 2 is the best so far
    resumed, _ = run(4, resume_from=paths["last_checkpoint"], **paths)
    assert same_weights(whole, scripted.states[2]) and same_weights(resumed, scripted.states[2])


def test_validation_does_not_change_what_a_run_with_dropout_trains():
    """Iterating a DataLoader draws a seed from the global generator; validation (loss, BLEU callbacks) runs with
    the training's random state put back afterwards, so with dropout the same run trains the same weights with a
    validation split or without (and the command line trains what benchmarks/real_data.py trains)."""
    from torch.utils.data import DataLoader

    weights = {}
    for name, valid in (("without", None), ("with", DataLoader(copy_batches(2, 8, seed=1), batch_size=None))):
        model = tiny_model(dropout=0.1)
        train(model, copy_batches(4, 8, seed=0), valid, quiet(epochs=3, ema_decay=None, restore_best=False, seed=5))
        weights[name] = model.state_dict()
    for key, value in weights["without"].items():
        assert torch.equal(value, weights["with"][key]), key
