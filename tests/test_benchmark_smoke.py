"""The throughput benchmark script runs end to end (2 tiny steps per model; nothing is timed or asserted on speed)."""

import json
from pathlib import Path

import torch

from benchmarks import throughput, time_to_bleu, your_parts_speed

ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_main_runs_two_steps(capsys, tmp_path):
    torch.manual_seed(0)
    benchmark = throughput
    threads = torch.get_num_threads()
    record = tmp_path / "throughput.json"
    try:  # main() sets the torch thread count; restore it for the other tests
        results = benchmark.main(["--steps", "2", "--block", "1", "--warmup", "1", "--batch-size", "4", "--threads", "1",
                                  "--record", str(record)])
    finally:
        torch.set_num_threads(threads)
    assert set(results) == {"train", "eval"}
    for phase in ("train", "eval"):
        assert results[phase]["ours"] > 0 and results[phase]["torch"] > 0
        assert results[phase]["rounds"] == 2
    out = capsys.readouterr().out
    assert "ours/torch" in out and "train" in out and "eval" in out
    import json

    saved = json.loads(record.read_text())
    assert saved["benchmark"] == "throughput" and saved["results"]["train"]["ratio"] == results["train"]["ratio"]
    assert {"commit", "machine", "threads", "arguments", "started"} <= set(saved)


def test_benchmark_models_compute_the_same_function():
    """With copied weights the benchmark's nn.Transformer wrapper equals our model, so it times the same work."""
    from course_lib.compat import copy_decoder_layer, copy_encoder_layer
    from course_lib.model import TransformerConfig

    torch.manual_seed(1)
    benchmark = throughput
    config = TransformerConfig(src_vocab_size=30, tgt_vocab_size=20, final_norm=True)
    ours, ref = benchmark.build_models(config)
    ours.eval()
    ref.eval()
    with torch.no_grad():
        for src_layer, dst_layer in zip(ref.transformer.encoder.layers, ours.encoder.layers, strict=True):
            copy_encoder_layer(src_layer, dst_layer)
        for src_layer, dst_layer in zip(ref.transformer.decoder.layers, ours.decoder.layers, strict=True):
            copy_decoder_layer(src_layer, dst_layer)
        ours.encoder.norm.load_state_dict(ref.transformer.encoder.norm.state_dict())
        ours.decoder.norm.load_state_dict(ref.transformer.decoder.norm.state_dict())
        ours.encoder.embedding.weight.copy_(ref.src_embedding.weight)
        ours.decoder.embedding.weight.copy_(ref.tgt_embedding.weight)
        ours.generator.load_state_dict(ref.generator.state_dict())
        src, tgt = benchmark.make_batches(1, 3, 30, 20)[0]
        real = tgt != 0
        torch.testing.assert_close(ours(src, tgt)[real], ref(src, tgt)[real], atol=1e-5, rtol=0)


def test_your_parts_speed_benchmark_runs(capsys, tmp_path):
    module = your_parts_speed
    threads = torch.get_num_threads()
    record = tmp_path / "speed.json"
    try:
        result = module.main(["--parts-dir", str(ROOT / "notebooks"), "--rounds", "1", "--block", "1",
                              "--train-pairs", "200", "--test-sentences", "8", "--decode-rounds", "1",
                              "--record", str(record)])
    finally:
        torch.set_num_threads(threads)
    assert set(result["train_steps_per_second"]) == {"course_lib", "course parts", "yours"}
    assert all(rate > 0 for rate in result["decode_sentences_per_second"].values())
    assert "yours/course_lib" in capsys.readouterr().out
    assert json.loads(record.read_text())["results"]["ratios"]["cache_speedup_yours"] > 0


def test_time_to_bleu_interleaves_the_two_models(capsys, tmp_path):
    benchmark = time_to_bleu
    threads = torch.get_num_threads()
    try:
        results = benchmark.main(["--budget", "2", "--eval-every", "1", "--threads", "1", "--valid-pairs", "20",
                                  "--record", str(tmp_path / "t.json")])
    finally:
        torch.set_num_threads(threads)
    assert [r["name"] for r in results] == ["course_lib", "nn.Transformer"]
    assert all(r["tokens_per_s"] > 0 and r["seconds"] > 0 for r in results)
    out = capsys.readouterr().out
    assert "ratio nn.Transformer / course_lib" in out and "target tokens" in out  # the recipe's token batches
    assert (tmp_path / "t.json").is_file()


def test_throughput_benchmark_has_the_real_size(capsys):
    benchmark = throughput
    threads = torch.get_num_threads()
    try:
        results = benchmark.main(["--size", "real", "--steps", "1", "--block", "1", "--warmup", "1",
                                  "--batch-size", "2", "--threads", "1", "--no-eval", "--no-record"])
    finally:
        torch.set_num_threads(threads)
    assert results["train"]["ours"] > 0 and results["train"]["torch"] > 0
    out = capsys.readouterr().out
    assert "real size (d_model=256, n_heads=8, layers=3+3, d_ff=512), vocab 8000/6000" in out
