"""Training speed of the student's assembled model (notebook 13) against course_lib's ``Transformer``.

Both models have the course's default size and train on the same toy-corpus batches with the course
recipe's loss and optimizer. They run in one process in ALTERNATING blocks of steps (order swapped
every round, so a drift in machine load hits both alike), after a discarded warm-up block. Printed:
steps per second of each, the ratio, and how long the capstone's ``CAPSTONE_STEPS`` steps take at the
assembled model's speed measured in this run.

The student's parts compute the same numbers without course_lib's fused kernels
(``F.scaled_dot_product_attention``, ``F.layer_norm``), so the assembled model is expected to be slower.

Usage::

    python benchmarks/your_parts_speed.py                  # 1 thread (the course default), 40 steps per block
    python benchmarks/your_parts_speed.py --parts-dir notebooks --rounds 6 --block 30
"""

from __future__ import annotations

import argparse
import itertools
import time

import torch

from course_lib.assembly import build_transformer, load_my_parts
from course_lib.data import build_vocabs, load_toy_corpus, make_dataset
from course_lib.loading import make_train_loader
from course_lib.losses import LabelSmoothingLoss
from course_lib.model import Transformer, TransformerConfig
from course_lib.schedule import make_optimizer
from course_lib.utils import configure_threads

CAPSTONE_STEPS = 1000  # notebook 13's step budget


def _step(model, optimizer, batch, criterion) -> None:
    src, tgt_in, tgt_out = batch
    loss = criterion(model(src, tgt_in), tgt_out)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run the benchmark; returns steps per second of both models and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts-dir", default="notebooks", help="folder that holds my_transformer/")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds (each model one block per round)")
    parser.add_argument("--block", type=int, default=40, help="training steps per block")
    parser.add_argument("--train-pairs", type=int, default=4000, help="toy pairs to draw batches from")
    args = parser.parse_args(argv)
    if args.threads < 1 or args.rounds < 1 or args.block < 1 or args.train_pairs < 1:
        parser.error("--threads, --rounds, --block and --train-pairs must be positive")
    configure_threads(args.threads)
    parts = load_my_parts(args.parts_dir)
    if not parts:
        parser.error(f"no saved parts in {args.parts_dir}/my_transformer: run notebooks 02-09 first")

    pairs = load_toy_corpus("train")[: args.train_pairs]
    src_vocab, tgt_vocab = build_vocabs(pairs)
    batches = list(make_train_loader(make_dataset(pairs, src_vocab, tgt_vocab), 128, 0))
    config = TransformerConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab))
    torch.manual_seed(0)
    models = {"course_lib": Transformer(config), "yours": build_transformer(config, parts)}
    optimizers = {name: make_optimizer(model.parameters()) for name, model in models.items()}
    for optimizer in optimizers.values():
        for group in optimizer.param_groups:
            group["lr"] = 1e-4  # a fixed small rate: the speed, not the learning, is measured
    criterion = LabelSmoothingLoss(0.1)
    stream = itertools.cycle(batches)
    seconds = dict.fromkeys(models, 0.0)
    for round_ in range(args.rounds + 1):  # round 0 is a warm-up, not counted
        order = list(models) if round_ % 2 else list(reversed(models))
        for name in order:
            start = time.perf_counter()
            for _ in range(args.block):
                _step(models[name], optimizers[name], next(stream), criterion)
            if round_ > 0:
                seconds[name] += time.perf_counter() - start
    steps = args.rounds * args.block
    rate = {name: steps / seconds[name] for name in models}
    print(f"parts: {len(parts)} of yours ({', '.join(sorted(parts))})")
    print(f"{steps} steps each, {args.threads} thread(s), alternating blocks of {args.block}")
    for name in models:
        print(f"  {name:10s} {rate[name]:6.2f} steps/s")
    ratio = rate["yours"] / rate["course_lib"]
    print(f"yours/course_lib: {ratio:.2f}x; notebook 13's {CAPSTONE_STEPS} steps at your speed in this run: "
          f"{CAPSTONE_STEPS / rate['yours']:.0f} s")
    return {**rate, "ratio": ratio}


if __name__ == "__main__":
    main()
