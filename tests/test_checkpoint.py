"""Checkpoints: round trip, atomic writes, clear errors for missing/corrupt/mismatched files, resuming."""

import os

import pytest
import torch

import course_lib.checkpoint as ckpt
from course_lib.checkpoint import CheckpointError, atomic_torch_save, build_checkpoint, load_checkpoint, save_checkpoint
from course_lib.model import Transformer, TransformerConfig
from course_lib.tokenization import Vocab
from course_lib.training import TrainConfig, train
from course_lib.utils import configure_threads

configure_threads()  # one thread (or COURSE_NUM_THREADS): robust on a busy machine


def vocabs():
    return Vocab([f"de{i}" for i in range(8)]), Vocab([f"en{i}" for i in range(8)])  # 12 tokens each


def small_model(seed=0, **overrides):
    torch.manual_seed(seed)
    settings = dict(src_vocab_size=12, tgt_vocab_size=12, d_model=16, n_heads=2, d_ff=32,
                    n_encoder_layers=1, n_decoder_layers=1, dropout=0.0)
    settings.update(overrides)
    return Transformer(TransformerConfig(**settings))


def test_round_trip_restores_weights_config_and_vocabularies(tmp_path):
    model, (src_vocab, tgt_vocab) = small_model(), vocabs()
    path = save_checkpoint(tmp_path / "model.pt", model, src_vocab, tgt_vocab, metrics={"test_bleu": 12.5})
    loaded, src_loaded, tgt_loaded, data = load_checkpoint(path)
    assert loaded.config == model.config and not loaded.training
    assert src_loaded == src_vocab and tgt_loaded == tgt_vocab
    assert data["metrics"] == {"test_bleu": 12.5} and data["training_state"] is None
    src, tgt = torch.randint(4, 12, (2, 5)), torch.randint(4, 12, (2, 4))
    assert torch.equal(model.eval()(src, tgt), loaded(src, tgt))


def test_a_tied_model_comes_back_tied(tmp_path):
    """The recipe ties the output layer to the target embeddings from d_model 128 on: loading keeps one matrix."""
    model, (src_vocab, tgt_vocab) = small_model(tie_embeddings=True), vocabs()
    with torch.no_grad():
        model.generator.weight.add_(0.5)  # trained weights differ from the initial ones; both names see the change
    path = save_checkpoint(tmp_path / "model.pt", model, src_vocab, tgt_vocab)
    loaded, *_ = load_checkpoint(path)
    assert loaded.config.tie_embeddings and loaded.generator.weight is loaded.decoder.embedding.embedding.weight
    assert torch.equal(loaded.generator.weight, model.generator.weight)
    src, tgt = torch.randint(4, 12, (2, 5)), torch.randint(4, 12, (2, 4))
    assert torch.equal(model.eval()(src, tgt), loaded(src, tgt))


def test_a_failure_mid_save_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    model, (src_vocab, tgt_vocab) = small_model(), vocabs()
    path = save_checkpoint(tmp_path / "model.pt", model, src_vocab, tgt_vocab, metrics={"version": 1})
    before = path.read_bytes()

    def dies_half_way(obj, handle):
        handle.write(b"half a checkpoint")
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(ckpt.torch, "save", dies_half_way)
    with pytest.raises(OSError, match="simulated"):
        save_checkpoint(path, small_model(seed=1), src_vocab, tgt_vocab, metrics={"version": 2})
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert load_checkpoint(path)[3]["metrics"] == {"version": 1}
    assert sorted(os.listdir(tmp_path)) == ["model.pt"]  # no temporary file left behind


def test_missing_file_is_a_clear_error(tmp_path):
    path = tmp_path / "nowhere.pt"
    with pytest.raises(CheckpointError, match="not found") as err:
        load_checkpoint(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_file_is_a_clear_error_naming_the_file(tmp_path, damage):
    path = save_checkpoint(tmp_path / "model.pt", small_model(), *vocabs())
    content = path.read_bytes()
    path.write_bytes(content[: len(content) // 2] if damage == "truncate" else b"\x00not a checkpoint" * 10)
    with pytest.raises(CheckpointError, match="corrupt") as err:
        load_checkpoint(path)
    assert str(path) in str(err.value) and "pickled objects" not in str(err.value)
    path.write_text("a text file, not a checkpoint\n")  # torch calls this a weights-only failure too
    with pytest.raises(CheckpointError, match="corrupt") as err:
        load_checkpoint(path)
    assert str(path) in str(err.value)


class Sneaky:
    """Stands for any pickled object; torch.load(weights_only=True) refuses to rebuild it."""


def test_only_tensors_and_plain_types_are_loaded(tmp_path):
    data = build_checkpoint(small_model(), *vocabs())
    data["metrics"] = {"object": Sneaky()}
    path = atomic_torch_save(data, tmp_path / "sneaky.pt")
    with pytest.raises(CheckpointError, match="holds pickled objects") as err:
        load_checkpoint(path)
    message = str(err.value)
    assert "weights_only" not in message and "\n" not in message  # no advice to unpickle untrusted code


def test_a_torch_file_that_is_not_a_checkpoint_is_rejected(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save(small_model().state_dict(), path)
    with pytest.raises(CheckpointError, match="not a course_lib translation checkpoint"):
        load_checkpoint(path)


def test_vocabulary_that_does_not_fit_the_config_is_rejected(tmp_path):
    model, (src_vocab, tgt_vocab) = small_model(), vocabs()
    with pytest.raises(CheckpointError, match="mismatch"):
        save_checkpoint(tmp_path / "bad.pt", model, src_vocab, Vocab(["only", "five"]))
    data = build_checkpoint(model, src_vocab, tgt_vocab)
    data["tgt_itos"] = data["tgt_itos"][:-1]  # one token short of tgt_vocab_size = 12
    path = atomic_torch_save(data, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=r"tgt_vocab_size=12.*11") as err:
        load_checkpoint(path)
    assert str(path) in str(err.value)


def test_weights_that_do_not_fit_the_config_are_rejected(tmp_path):
    data = build_checkpoint(small_model(), *vocabs())
    data["model_config"]["d_ff"] = 48  # the saved weights have d_ff = 32
    path = atomic_torch_save(data, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=r"wrong shape.*linear1\.weight") as err:
        load_checkpoint(path)
    assert str(path) in str(err.value)


# ----- resuming -----

def batches(n, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        src = torch.randint(4, 12, (8, 6), generator=g)
        tgt = torch.randint(4, 12, (8, 6), generator=g)
        tgt_in = torch.cat([torch.ones(8, 1, dtype=torch.long), tgt[:, :-1]], dim=1)
        out.append((src, tgt_in, tgt))
    return out


def settings(**overrides):
    values = dict(epochs=4, warmup_steps=5, progress=False, num_threads=1, restore_best=False)
    values.update(overrides)
    return TrainConfig(**values)


def test_resume_gives_the_same_result_as_uninterrupted_training(tmp_path):
    data, valid = batches(3, seed=0), batches(1, seed=1)
    uninterrupted = small_model(dropout=0.1)  # dropout: the random state must be restored too
    full_history = train(uninterrupted, data, valid, settings())

    last = tmp_path / "last.pt"
    first_half = small_model(dropout=0.1)
    train(first_half, data, valid, settings(epochs=2, last_checkpoint=str(last)), src_vocab=vocabs()[0],
          tgt_vocab=vocabs()[1])
    state = load_checkpoint(last)[3]["training_state"]
    assert state["step"] == 6 and state["epoch"] == 2 and len(state["history"]) == 2

    resumed = small_model(seed=123, dropout=0.1)  # different initial weights: all must come from the file
    resumed_history = train(resumed, data, valid, settings(), resume_from=str(last))
    assert [h["step"] for h in resumed_history] == [3, 6, 9, 12]
    assert [h["train_loss"] for h in resumed_history] == [h["train_loss"] for h in full_history]
    for name, tensor in uninterrupted.state_dict().items():
        assert torch.equal(tensor, resumed.state_dict()[name]), name


def test_best_checkpoint_holds_the_lowest_validation_loss_and_can_be_resumed(tmp_path):
    best = tmp_path / "best.pt"
    model = small_model()
    src_vocab, tgt_vocab = vocabs()
    history = train(model, batches(3, 0), batches(1, 1), settings(best_checkpoint=str(best)),
                    src_vocab=src_vocab, tgt_vocab=tgt_vocab)
    _, _, _, data = load_checkpoint(best)
    assert data["metrics"]["valid_loss"] == min(h["valid_loss"] for h in history)
    more = train(small_model(), batches(3, 0), batches(1, 1), settings(epochs=6), resume_from=str(best))
    assert more[-1]["epoch"] == 6


def test_resuming_from_weights_only_is_refused(tmp_path):
    path = save_checkpoint(tmp_path / "weights.pt", small_model(), *vocabs())
    with pytest.raises(ValueError, match="no training state"):
        train(small_model(), batches(1, 0), None, settings(), resume_from=str(path))


def test_the_fingerprints_of_supplied_parts_name_the_file_that_changed(tmp_path):
    """A --my-parts checkpoint stores each part file's sha256 (issue 34): changed, missing or added files are named."""
    import shutil
    from pathlib import Path

    from course_lib.checkpoint import changed_parts, fingerprints, part_sources
    from course_lib.student.package import load_my_parts

    shutil.copytree(Path(__file__).resolve().parents[1] / "notebooks" / "my_transformer", tmp_path / "my_transformer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    parts = load_my_parts(tmp_path, model="transformer")  # as the command line loads them
    sources = part_sources(parts)
    assert "my_transformer/masks.py" in sources and len(sources) == 9  # the two masks share one file
    assert "my_transformer/decoder_only_layer.py" not in sources  # notebook 15's block: not the translator's
    recorded = fingerprints(sources)
    assert changed_parts(recorded, parts) is None
    fewer = {k: v for k, v in recorded.items() if k != "my_transformer/layer_norm.py"}
    assert changed_parts(fewer, parts) == ("my_transformer/layer_norm.py was saved after the model was trained "
                                           "(the trained model used course_lib's part there)")
    path = tmp_path / "my_transformer" / "masks.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert changed_parts(recorded, load_my_parts(tmp_path)) == "my_transformer/masks.py changed after the model was trained"
