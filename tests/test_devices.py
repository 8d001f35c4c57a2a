"""The course on a second device, checked on a CPU-only machine.

``emulated_device.EmulatedDevice`` makes ``meta`` behave like a GPU that holds real data: a model moved
there computes real numbers, and any operation that mixes its tensors with ordinary CPU tensors raises the
error CUDA raises. Each test below hands CPU tensors to a public function whose model sits on that device
(or the reverse) and checks the results against the same model on the CPU and where they come back.
Also: the device choice (``COURSE_DEVICE``, MPS), checkpoints across devices, resuming, mixed precision on
the CPU and ``torchrun`` with more processes than GPUs.
"""

import copy
import os

import pytest
import torch
from emulated_device import OTHER, DeviceMismatch, EmulatedDevice
from test_training import copy_batches, quiet, tiny_model

from course_lib import devices, distributed
from course_lib.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from course_lib.data import make_dataset
from course_lib.decoding import beam_search, cross_attention, greedy_decode, sequence_log_probs, translate_sentences
from course_lib.evaluation import evaluate_translation
from course_lib.losses import LabelSmoothingLoss
from course_lib.model import record_attention
from course_lib.tokenization import Vocab
from course_lib.training import TrainConfig, evaluate_loss, restore_rng_state, train

SYMBOLS = [f"w{i}" for i in range(8)]  # the copy task's 8 symbols (ids 4-11)


@pytest.fixture
def elsewhere():
    with EmulatedDevice():
        yield OTHER


def trained_pair(epochs: int = 6):
    """A tiny copy-task model trained on the CPU, and a copy of it for the other device."""
    model = tiny_model()
    train(model, copy_batches(10, 32, seed=0), None, quiet(epochs=epochs, device="cpu"))
    return model.eval(), copy.deepcopy(model)


def sources(n: int = 6) -> torch.Tensor:
    return copy_batches(1, n, seed=5)[0][0]  # (n, src_len), on the CPU


# ----- the emulation itself: without it the tests below could not fail -----

def test_the_emulated_device_raises_what_cuda_raises(elsewhere):
    model = tiny_model().to(elsewhere)
    assert next(model.parameters()).device == elsewhere
    with pytest.raises(DeviceMismatch, match="same device"):
        model.encode(sources())  # the error a GPU user met: CPU ids reaching an embedding on the GPU
    with pytest.raises(TypeError, match="numpy"):
        torch.zeros(3, device=elsewhere).numpy()
    assert torch.allclose(model.encode(sources().to(elsewhere)).cpu(), tiny_model().encode(sources()), atol=1e-5)


# ----- decoding and evaluation with the caller's tensors on the CPU -----

def test_decoders_accept_cpu_inputs_for_a_model_elsewhere_and_answer_on_the_cpu(elsewhere):
    on_cpu, moved = trained_pair()
    moved.to(elsewhere)
    src = sources()
    tokens, attention = greedy_decode(moved, src, return_attention=True)
    expected_tokens, expected_attention = greedy_decode(on_cpu, src, return_attention=True)
    assert tokens.device.type == "cpu" and torch.equal(tokens, expected_tokens)
    for name, weights in attention.items():
        assert weights.device.type == "cpu" and torch.allclose(weights, expected_attention[name])
    best, scores = beam_search(moved, src, beam_size=3)
    expected_best, expected_scores = beam_search(on_cpu, src, beam_size=3)
    assert best.device.type == scores.device.type == "cpu"
    assert torch.equal(best, expected_best) and torch.allclose(scores, expected_scores)
    hypotheses, all_scores = beam_search(moved, src, beam_size=3, return_all=True)
    assert hypotheses.device.type == all_scores.device.type == "cpu"
    assert torch.equal(hypotheses, beam_search(on_cpu, src, beam_size=3, return_all=True)[0])
    _, _, beam_attention = beam_search(moved, src, beam_size=2, return_attention=True)
    assert all(w.device.type == "cpu" for w in beam_attention.values())
    log_probs = sequence_log_probs(moved, src, tokens)
    assert log_probs.device.type == "cpu" and torch.allclose(log_probs, sequence_log_probs(on_cpu, src, tokens))
    maps = cross_attention(moved, src, tokens)
    assert all(w.device.type == "cpu" for w in maps.values())


def test_inputs_on_the_other_device_come_back_there(elsewhere):
    on_cpu, moved = trained_pair(epochs=1)
    moved.to(elsewhere)
    src = sources().to(elsewhere)
    assert greedy_decode(moved, src).device == elsewhere
    assert torch.equal(greedy_decode(on_cpu, src).cpu(), greedy_decode(moved, src).cpu())  # CPU model, ids elsewhere


def test_translation_evaluation_and_loss_for_a_model_elsewhere(elsewhere):
    on_cpu, moved = trained_pair()
    moved.to(elsewhere)
    vocab = Vocab(SYMBOLS)
    sentences = ["w1 w2 w3", "w4 w4 w5 w6", "w7"]
    assert translate_sentences(moved, sentences, vocab, vocab, str.split) == \
        translate_sentences(on_cpu, sentences, vocab, vocab, str.split)
    token_lists = [s.split() for s in sentences]
    scores = evaluate_translation(moved, token_lists, token_lists, vocab, vocab, beam_size=2)
    assert scores.bleu == evaluate_translation(on_cpu, token_lists, token_lists, vocab, vocab, beam_size=2).bleu
    batches = copy_batches(2, 8, seed=3)  # a loader's batches, on the CPU
    loss = evaluate_loss(moved, batches, LabelSmoothingLoss(0.1))
    assert loss.loss == pytest.approx(evaluate_loss(on_cpu, batches, LabelSmoothingLoss(0.1)).loss, rel=1e-5)


def test_recorded_attention_of_a_model_elsewhere_stays_with_the_model(elsewhere):
    _, moved = trained_pair(epochs=1)
    moved.to(elsewhere)
    src, tgt_in, _ = (t.to(elsewhere) for t in copy_batches(1, 4, seed=6)[0])
    with record_attention(moved) as maps:
        moved(src, tgt_in)
    assert sorted(maps) and all(w.device == elsewhere for w in maps.values())


def test_explorer_and_the_attention_exercise_take_a_model_elsewhere(elsewhere):
    from course_lib.exercises.nb11 import most_attended_source_token
    from course_lib.explorer import analyze

    on_cpu, moved = trained_pair()
    moved.to(elsewhere)
    vocab = Vocab(SYMBOLS)
    analysis = analyze(moved, "w1 w2 w3", vocab, vocab, str.split, beam_size=2)
    expected = analyze(on_cpu, "w1 w2 w3", vocab, vocab, str.split, beam_size=2)
    assert analysis.out_tokens == expected.out_tokens
    assert [c.tokens for c in analysis.candidates] == [c.tokens for c in expected.candidates]
    word = expected.out_tokens[0]
    assert most_attended_source_token(moved, vocab, vocab, str.split, "w1 w2 w3", word) == \
        most_attended_source_token(on_cpu, vocab, vocab, str.split, "w1 w2 w3", word)


# ----- training, checkpoints and resuming across devices -----

def test_trained_elsewhere_decodes_cpu_inputs_and_loads_on_the_cpu(elsewhere, tmp_path):
    model = tiny_model()
    train(model, copy_batches(10, 32, seed=0), copy_batches(1, 16, seed=1), quiet(epochs=2, device="meta"))
    assert next(model.parameters()).device == elsewhere
    output = greedy_decode(model, sources())  # what notebook 10 does after train() on a GPU
    assert output.device.type == "cpu"
    vocab = Vocab(SYMBOLS)
    save_checkpoint(tmp_path / "elsewhere.pt", model, vocab, vocab)
    loaded, _, _, _ = load_checkpoint(tmp_path / "elsewhere.pt")  # default: the CPU
    assert next(loaded.parameters()).device.type == "cpu"
    assert torch.equal(greedy_decode(loaded, sources()), output)


@pytest.mark.parametrize("first, then", [("meta", "cpu"), ("cpu", "meta")])
def test_resuming_on_the_other_device_continues_the_same_run(elsewhere, tmp_path, first, then):
    data, valid = copy_batches(3, 8, seed=0), copy_batches(1, 8, seed=1)
    vocab = Vocab(SYMBOLS)

    def settings(epochs, device, last=None):
        return TrainConfig(epochs=epochs, warmup_steps=5, progress=False, num_threads=1, device=device,
                           last_checkpoint=last, ema_decay=0.9)

    full = train(tiny_model(seed=3), data, valid, settings(4, "cpu"), src_vocab=vocab, tgt_vocab=vocab)
    last = tmp_path / "last.pt"
    train(tiny_model(seed=3), data, valid, settings(2, first, str(last)), src_vocab=vocab, tgt_vocab=vocab)
    assert read_checkpoint(last)["training_state"]["optimizer"]["state"][0]["exp_avg"].device.type == "cpu"
    resumed = train(tiny_model(seed=9), data, valid, settings(4, then), src_vocab=vocab, tgt_vocab=vocab,
                    resume_from=str(last))
    assert [h["step"] for h in resumed] == [3, 6, 9, 12]
    assert [round(h["valid_loss"], 4) for h in resumed] == [round(h["valid_loss"], 4) for h in full]


def test_random_state_restores_from_tensors_loaded_onto_another_device(elsewhere):
    from course_lib.training import capture_rng_state

    state = capture_rng_state()
    expected = torch.rand(3), __import__("numpy").random.rand()
    moved = {key: value.to(elsewhere) if isinstance(value, torch.Tensor) else value for key, value in state.items()}
    moved["numpy"] = [item.to(elsewhere) if isinstance(item, torch.Tensor) else item for item in state["numpy"]]
    restore_rng_state(moved)  # what resuming with map_location=cuda handed it: failed in .numpy() before
    assert torch.equal(torch.rand(3), expected[0]) and __import__("numpy").random.rand() == expected[1]


# ----- the student's side and the sweeps on a GPU runtime (COURSE_DEVICE picks the device) -----

def test_bug_finder_training_and_sweeps_run_on_the_chosen_device(elsewhere, monkeypatch):
    from course_lib.student.bug_finder import training_losses
    from course_lib.sweeps import peak_sweep

    monkeypatch.setenv("COURSE_DEVICE", "meta")
    losses = training_losses({"course": {}}, steps=2, n_pairs=64)
    assert all(isinstance(value, float) for value in losses["course"])
    vocab = Vocab(SYMBOLS)
    pairs = [(f"w{i} w{j}".split(), f"w{j} w{i}".split()) for i in range(4) for j in range(4)]
    dataset = make_dataset(pairs, vocab, vocab)
    sweep = peak_sweep(dataset, dataset, len(vocab), len(vocab), widths=[16], peaks=[1e-3], steps=3, warmup=1,
                       n_heads=2, layers=1, batch_size=8)
    assert len(sweep[16]) == 1


# ----- choosing the device -----

def test_get_device_follows_the_argument_then_the_environment_then_the_hardware(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devices, "_mps_available", lambda: False)
    assert devices.get_device() == torch.device("cpu")
    monkeypatch.setattr(devices, "_mps_available", lambda: True)
    assert devices.get_device() == torch.device("mps")  # Apple's GPU where PyTorch offers it
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    assert devices.get_device() == torch.device("cpu")
    assert devices.get_device("mps") == torch.device("mps")  # the argument wins over the environment
    monkeypatch.setenv("COURSE_DEVICE", "cuda")
    with pytest.raises(devices.DeviceUnavailable, match="COURSE_DEVICE asks for 'cuda'"):
        devices.get_device()
    with pytest.raises(devices.DeviceUnavailable, match="device must name a device"):
        devices.get_device("gpu0")


def test_the_command_lines_refuse_a_missing_device_in_one_line(monkeypatch, capsys, tmp_path):
    from course_lib import translate

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    vocab = Vocab(SYMBOLS)
    save_checkpoint(tmp_path / "m.pt", tiny_model(), vocab, vocab)
    assert translate.main([str(tmp_path / "m.pt"), "w1", "--device", "cuda"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "'cuda'" in error and "no such device" in error


# ----- mixed precision -----

def test_precision_choice():
    assert devices.autocast_dtype(torch.device("cpu")) is None  # the CPU stays in float32
    assert devices.autocast_dtype(torch.device("cpu"), "bf16") is torch.bfloat16
    assert devices.autocast_dtype(torch.device("cpu"), "fp32") is None
    with pytest.raises(ValueError, match="precision must be one of"):
        devices.autocast_dtype(torch.device("cpu"), "half")


def test_on_cuda_auto_means_bf16_or_fp16_with_a_scaler(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert devices.autocast_dtype(torch.device("cuda")) is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)  # e.g. Colab's T4
    assert devices.autocast_dtype(torch.device("cuda")) is torch.float16
    # a T4 (compute capability 7.5) only emulates bfloat16: torch says "supported" unless emulation is excluded
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    assert devices.autocast_dtype(torch.device("cuda")) is torch.float16


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_trains_and_keeps_float32_weights(precision):
    model = tiny_model()
    history = train(model, copy_batches(10, 32, seed=0), copy_batches(1, 32, seed=1),
                    quiet(epochs=6, device="cpu", precision=precision))
    assert history[-1]["valid_loss"] < 0.6 * history[0]["valid_loss"]
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_default_precision_on_the_cpu_is_exactly_float32():
    a, b = tiny_model(), tiny_model()
    train(a, copy_batches(3, 8, seed=0), None, quiet(epochs=1, device="cpu"))
    train(b, copy_batches(3, 8, seed=0), None, quiet(epochs=1, device="cpu", precision="fp32"))
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


# ----- torchrun with more processes than GPUs -----

def test_more_processes_than_gpus_is_one_clear_line(monkeypatch, capsys):
    from course_lib import train as train_cli

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    for name, value in {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    assert train_cli.main(["--max-steps", "1"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "2 processes" in error and "1 GPU" in error and "COURSE_DEVICE=cpu" in error


def test_course_device_cpu_puts_every_process_on_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    for name, value in {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "COURSE_DEVICE": "cpu"}.items():
        monkeypatch.setenv(name, value)
    joined = {}
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: False)
    monkeypatch.setattr(distributed.dist, "init_process_group", lambda backend: joined.setdefault("backend", backend))
    assert distributed.init_distributed() == torch.device("cpu")
    assert joined == {"backend": "gloo"}
    assert os.environ["COURSE_DEVICE"] == "cpu"


def test_comparisons_of_a_students_module_on_another_device(elsewhere):
    from course_lib.attention import MultiHeadAttention
    from course_lib.layers import LayerNorm, PositionwiseFeedForward
    from course_lib.student.compare import (
        D_FF,
        D_MODEL,
        N_HEADS,
        compare_ffn_module,
        compare_layer_norm_module,
        compare_mha_module,
    )

    attention = MultiHeadAttention(D_MODEL, N_HEADS).to(elsewhere)
    verdict = compare_mha_module(attention)
    assert verdict.ok, verdict.evidence
    assert next(attention.parameters()).device == elsewhere  # the student's module is left where it was
    assert compare_layer_norm_module(LayerNorm(D_MODEL).to(elsewhere)).ok
    assert compare_ffn_module(PositionwiseFeedForward(D_MODEL, D_FF).to(elsewhere)).ok


# ----- the learner's device check -----

def test_device_check_on_a_cpu_only_machine_has_nothing_to_compare(monkeypatch, capsys):
    from course_lib import device_check

    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devices, "_mps_available", lambda: False)
    assert device_check.main([]) == 0
    assert "no accelerator found" in capsys.readouterr().out


def test_device_check_passes_a_sound_accelerator(elsewhere):
    from course_lib.device_check import check_device

    report = check_device("meta")
    assert report.ok, str(report)
    assert len(report.lines) == 4 and "the accelerator computes what the CPU computes" in str(report)


def test_device_check_catches_an_accelerator_that_computes_wrongly():
    from emulated_device import aten

    from course_lib.device_check import check_device

    with EmulatedDevice(faulty=frozenset({aten.mm.default, aten.addmm.default, aten.bmm.default})):
        report = check_device("meta")
    assert not report.ok
    assert "FAIL float32: largest logit difference" in str(report) and "disagrees with the CPU" in str(report)
