"""Does plugging parts into the course model cost anything? Training and decoding speed, side by side.

Three models of the course's default size, all ``course_lib.model.Transformer``:

* ``course_lib``: ``Transformer(config)``, the plain course model;
* ``course parts``: ``Transformer(config, parts)`` with course_lib's own classes and functions passed in as
  the ten parts (what plugging in costs by itself; target: >= 0.97x the plain model);
* ``yours``: ``Transformer(config, parts)`` with the parts saved in ``my_transformer/`` (notebooks 02-09):
  unfused, and decoded with the input cache (``course_lib.decoding.InputCachedDecoder``).

Training: the same toy-corpus batches, the course's loss and optimizer, in ALTERNATING blocks of steps (the
order rotates every round, so a drift in machine load hits every model alike) after a discarded warm-up
round. Decoding: the toy test split (1,000 sentences) in the course's length-sorted batches of 96, greedy and
beam 4 (4 rows per sentence), with each model's cache, the models again alternating; ``yours`` also greedy
without a cache, to show what the cache saves. The weights are untrained, and untrained models end their
sentences at different steps, so every batch is decoded for exactly its length limit (:func:`decode_fixed`):
every model does the same work.

Prints steps (sentences) per second and the ratios against ``course_lib`` measured in the same run, and
writes a results file (``benchmarks/results/your_parts_speed/``) unless ``--no-record``.

Usage::

    python -m benchmarks.your_parts_speed                  # 1 thread (the course default)
    python -m benchmarks.your_parts_speed --parts-dir notebooks --rounds 6 --block 30
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import torch

from benchmarks import results_io
from course_lib import attention, embeddings, layers, masks
from course_lib.data import build_vocabs, load_toy_corpus, make_dataset, tokenize_pairs
from course_lib.decoding import _pad_batch, make_stepper, output_limits
from course_lib.loading import make_train_loader
from course_lib.losses import LabelSmoothingLoss
from course_lib.model import Transformer, TransformerConfig
from course_lib.schedule import make_optimizer
from course_lib.student.assembly import build_transformer
from course_lib.student.package import load_my_parts
from course_lib.utils import configure_threads

CAPSTONE_STEPS = 1000  # notebook 13's step budget


def course_parts() -> dict:
    """course_lib's own implementation of each of the ten parts, passed in as parts."""
    return {"token_embedding": embeddings.TokenEmbedding, "positional_encoding": embeddings.sinusoidal_table,
            "attention": attention.scaled_dot_product_attention, "multi_head_attention": attention.MultiHeadAttention,
            "padding_mask": masks.padding_mask, "causal_mask": masks.causal_mask, "layer_norm": layers.LayerNorm,
            "feed_forward": layers.PositionwiseFeedForward,
            "encoder_layer": lambda d_model, n_heads, d_ff, norm_first=False: layers.EncoderLayer(
                d_model, n_heads, d_ff, 0.0, norm_first),
            "decoder_layer": lambda d_model, n_heads, d_ff, norm_first=False: layers.DecoderLayer(
                d_model, n_heads, d_ff, 0.0, norm_first)}


def _step(model, optimizer, batch, criterion) -> None:
    src, tgt_in, tgt_out = batch
    loss = criterion(model(src, tgt_in), tgt_out)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()


def _rotations(names: list[str], rounds: int):
    """Round 0 (a warm-up) then ``rounds`` rounds, each with the order rotated by one."""
    for round_ in range(rounds + 1):
        shift = round_ % len(names)
        yield round_, names[shift:] + names[:shift]


def train_speed(models: dict, batches: list, rounds: int, block: int) -> dict[str, float]:
    """Training steps per second of each model, in alternating blocks of ``block`` steps."""
    optimizers = {name: make_optimizer(model.parameters()) for name, model in models.items()}
    for optimizer in optimizers.values():
        for group in optimizer.param_groups:
            group["lr"] = 1e-4  # a fixed small rate: the speed, not the learning, is measured
    criterion = LabelSmoothingLoss(0.1)
    stream = itertools.cycle(batches)
    seconds = dict.fromkeys(models, 0.0)
    for round_, order in _rotations(list(models), rounds):
        for name in order:
            models[name].train()
            start = time.perf_counter()
            for _ in range(block):
                _step(models[name], optimizers[name], next(stream), criterion)
            if round_ > 0:
                seconds[name] += time.perf_counter() - start
    return {name: rounds * block / seconds[name] for name in models}


def _batches(token_lists, src_vocab, batch_size: int = 96) -> list[torch.Tensor]:
    """The test sentences as length-sorted padded batches ``(batch, src_len)``, as the course decodes them."""
    ordered = sorted(token_lists, key=len)
    return [_pad_batch([src_vocab.encode(tokens, add_eos=True) for tokens in ordered[i:i + batch_size]], 0,
                       torch.device("cpu")) for i in range(0, len(ordered), batch_size)]


def decode_fixed(model, batches: list[torch.Tensor], beam: int, use_cache: bool) -> None:
    """Decode every batch for exactly its length limit (``output_limits``), never stopping at ``<eos>``.

    Untrained models end their sentences at different steps, so timing ``greedy_decode`` would compare
    different amounts of work. Here every model takes the same steps: ``beam`` rows per sentence, each step
    one call of the model's step-by-step decoder (the cache each model has, or none) and, for beams, one
    reordering of its cache, as beam search does.
    """
    for src in batches:
        steps = int(output_limits(model, src, None).max())
        rows = src.repeat_interleave(beam, 0) if beam > 1 else src  # (batch * beam, src_len)
        memory = model.encode(src).repeat_interleave(beam, 0)  # (batch * beam, src_len, d_model)
        stepper = make_stepper(model, memory, rows, use_cache)
        tokens = rows.new_full((rows.size(0), 1), 1)  # <bos>
        for _ in range(steps):
            next_token = stepper.step(tokens).argmax(dim=-1)  # (batch * beam,)
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)
            if beam > 1:
                stepper.reorder(torch.arange(rows.size(0)))


def decode_speed(jobs: dict, batches: list[torch.Tensor], sentences: int, rounds: int) -> dict[str, float]:
    """Sentences per second of each decoding job ``{name: (model, beam, use_cache)}``, models alternating."""
    seconds = dict.fromkeys(jobs, 0.0)
    for round_, order in _rotations(list(jobs), rounds):
        for name in order:
            model, beam, use_cache = jobs[name]
            model.eval()
            start = time.perf_counter()
            with torch.no_grad():
                decode_fixed(model, batches, beam, use_cache)
            if round_ > 0:
                seconds[name] += time.perf_counter() - start
    return {name: rounds * sentences / seconds[name] for name in jobs}


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark; returns the speeds and ratios (also written to the results file)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts-dir", default="notebooks", help="folder that holds my_transformer/")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds after the warm-up round")
    parser.add_argument("--block", type=int, default=30, help="training steps per block")
    parser.add_argument("--train-pairs", type=int, default=4000, help="toy pairs to draw batches from")
    parser.add_argument("--test-sentences", type=int, default=1000, help="toy test sentences to decode")
    parser.add_argument("--decode-rounds", type=int, default=2, help="alternating decoding rounds after the warm-up")
    parser.add_argument("--record", metavar="PATH", help="results file (default: benchmarks/results/your_parts_speed/)")
    parser.add_argument("--no-record", action="store_true", help="write no results file")
    args = parser.parse_args(argv)
    for name in ("threads", "rounds", "block", "train_pairs", "test_sentences", "decode_rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    configure_threads(args.threads)
    parts = load_my_parts(args.parts_dir)
    if not parts:
        parser.error(f"no saved parts in {args.parts_dir}/my_transformer: run notebooks 02-09 first")

    pairs = tokenize_pairs(load_toy_corpus("train")[: args.train_pairs])
    src_vocab, tgt_vocab = build_vocabs(pairs)
    batches = list(make_train_loader(make_dataset(pairs, src_vocab, tgt_vocab), 128, 0))
    test_tokens = [source for source, _ in tokenize_pairs(load_toy_corpus("test")[: args.test_sentences])]
    config = TransformerConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab))
    torch.manual_seed(0)
    models = {"course_lib": Transformer(config), "course parts": build_transformer(config, course_parts()),
              "yours": build_transformer(config, parts)}
    train = train_speed(models, batches, args.rounds, args.block)
    jobs = {f"{name}, greedy": (model, 1, True) for name, model in models.items()}
    jobs |= {f"{name}, beam 4": (model, 4, True) for name, model in models.items()}
    jobs["yours, greedy without a cache"] = (models["yours"], 1, False)
    decode = decode_speed(jobs, _batches(test_tokens, src_vocab), len(test_tokens), args.decode_rounds)

    print(f"parts: {len(parts)} of yours ({', '.join(sorted(parts))}); {args.threads} thread(s)")
    print(f"training: {args.rounds} rounds of {args.block} steps per model, alternating")
    for name, rate in train.items():
        print(f"  {name:14s} {rate:6.2f} steps/s   {rate / train['course_lib']:.2f}x course_lib")
    print(f"decoding: {len(test_tokens)} test sentences, {args.decode_rounds} rounds, alternating")
    for name, rate in decode.items():
        reference = decode[f"course_lib, {'beam 4' if 'beam' in name else 'greedy'}"]
        print(f"  {name:32s} {rate:7.1f} sentences/s   {rate / reference:.2f}x course_lib")
    ratios = {"train_course_parts": train["course parts"] / train["course_lib"],
              "train_yours": train["yours"] / train["course_lib"],
              "greedy_course_parts": decode["course parts, greedy"] / decode["course_lib, greedy"],
              "beam_course_parts": decode["course parts, beam 4"] / decode["course_lib, beam 4"],
              "greedy_yours": decode["yours, greedy"] / decode["course_lib, greedy"],
              "beam_yours": decode["yours, beam 4"] / decode["course_lib, beam 4"],
              "cache_speedup_yours": decode["yours, greedy"] / decode["yours, greedy without a cache"]}
    print(f"yours/course_lib: {ratios['train_yours']:.2f}x in training; notebook 13's {CAPSTONE_STEPS} steps "
          f"at your speed in this run: {CAPSTONE_STEPS / train['yours']:.0f} s; the cache makes your greedy "
          f"decoding {ratios['cache_speedup_yours']:.1f}x faster")
    result = {"train_steps_per_second": train, "decode_sentences_per_second": decode, "ratios": ratios,
              "parts": sorted(parts)}
    if not args.no_record:
        path = Path(args.record) if args.record else results_io.default_path("your_parts_speed", "default")
        results_io.write_atomic(path, {**results_io.header("your_parts_speed", vars(args), args.threads),
                                       "results": result})
        print(f"results: {path}")
    return result


if __name__ == "__main__":
    main()
