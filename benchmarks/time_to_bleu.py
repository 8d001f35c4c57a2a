"""Time-to-BLEU: how many seconds of training the course model and ``nn.Transformer`` need to reach
BLEU 90 and 97 on the toy corpus, with the same recipe, data, seed and wrapper, in the same run,
INTERLEAVED: the two trainings alternate epoch by epoch (ABBA order), so a drift in the machine's
speed hits both alike instead of deciding the comparison.

Both models share everything but the layer stacks: the course ``TokenEmbedding`` (N(0, 1/d_model)
init, scaled by sqrt(d_model)), the sinusoidal positions, a linear generator, the label-smoothed loss,
Adam with the warm-up schedule, weight averaging and the batches of the command line (the recipe of
:mod:`course_lib.recipe` for the default model on the toy corpus: batches of ~1,400 target tokens).
Every ``--eval-every`` seconds of training, greedy BLEU on the validation split is measured; the
evaluation time is *not* on the training clock. Training tokens/s counts target tokens.

    python -m benchmarks.time_to_bleu                      # both models, up to 240 s each
    python -m benchmarks.time_to_bleu --clock process      # CPU-time clock: fairer on a busy machine
    python -m benchmarks.time_to_bleu --models course --budget 120

Note: ``nn.Transformer`` puts a final LayerNorm after both stacks even in post-norm mode; it is
kept, so the baseline is the stock PyTorch module.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import torch
from torch import nn

from benchmarks import results_io
from course_lib import data
from course_lib.compat import to_torch_attn_mask, to_torch_key_padding_mask
from course_lib.embeddings import SinusoidalPositionalEncoding, TokenEmbedding
from course_lib.evaluation import evaluate_translation
from course_lib.loading import make_train_loader
from course_lib.masks import causal_mask
from course_lib.model import Transformer, TransformerConfig
from course_lib.recipe import choose_recipe
from course_lib.training import Callback, TrainConfig, train_epochs
from course_lib.utils import configure_threads, seed_everything


class TorchTransformerTranslator(nn.Module):
    """``nn.Transformer`` inside the course's embeddings, positions and generator, with the course interface
    ``encode(src)``, ``decode(tgt, memory, src)`` and ``forward(src, tgt)`` (masks converted by
    ``course_lib.compat``: PyTorch's True means *blocked*)."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        self.src_embedding = TokenEmbedding(config.src_vocab_size, config.d_model, config.pad_id)
        self.tgt_embedding = TokenEmbedding(config.tgt_vocab_size, config.d_model, config.pad_id)
        self.positions = SinusoidalPositionalEncoding(config.d_model, config.max_len, config.dropout)
        self.transformer = nn.Transformer(
            config.d_model, config.n_heads, config.n_encoder_layers, config.n_decoder_layers, config.d_ff,
            config.dropout, batch_first=True, norm_first=config.norm_first,
        )
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)
        nn.init.xavier_uniform_(self.generator.weight)  # as the course model initialises its generator
        if config.tie_embeddings:  # as the course model: the output layer reuses the target embedding matrix
            self.generator.weight = self.tgt_embedding.embedding.weight

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        """src ``(batch, src_len)`` -> memory ``(batch, src_len, d_model)``."""
        x = self.positions(self.src_embedding(src))
        return self.transformer.encoder(x, src_key_padding_mask=to_torch_key_padding_mask(src, self.config.pad_id))

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, tgt_len, tgt_vocab_size)`` for decoder input ``tgt`` ``(batch, tgt_len)``."""
        pad_id = self.config.pad_id
        blocked_future = to_torch_attn_mask(causal_mask(tgt.size(1), device=tgt.device))  # True = blocked
        hidden = self.transformer.decoder(
            self.positions(self.tgt_embedding(tgt)), memory, tgt_mask=blocked_future,
            tgt_key_padding_mask=to_torch_key_padding_mask(tgt, pad_id),
            memory_key_padding_mask=to_torch_key_padding_mask(src, pad_id),
        )
        return self.generator(hidden)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        return self.decode(tgt, self.encode(src), src)


class TimeToBleu(Callback):
    """Measure validation BLEU every ``every`` seconds of training; stop at ``stop_at`` BLEU."""

    def __init__(self, model, valid_tokens, vocabs, every: float, stop_at: float, name: str):
        self.model, self.valid_tokens, self.vocabs = model, valid_tokens, vocabs
        self.every, self.stop_at, self.name = every, stop_at, name
        self.next_eval, self.points, self.tokens = every, [], 0

    def on_step_end(self, info):
        self.tokens += info["tokens"]
        if info["seconds"] < self.next_eval:
            return False
        self.next_eval += self.every
        sources, references = ([s for s, _ in self.valid_tokens], [t for _, t in self.valid_tokens])
        scores = evaluate_translation(self.model, sources, references, *self.vocabs)
        self.points.append((info["seconds"], info["step"], scores.bleu, scores.exact_match, self.tokens))
        print(f"  {self.name:15s} {info['seconds']:6.1f}s  step {info['step']:5d}  BLEU {scores.bleu:6.2f}  "
              f"exact {100 * scores.exact_match:5.1f}%", flush=True)
        return scores.bleu >= self.stop_at

    def first_time_at(self, bleu: float) -> float:
        return next((seconds for seconds, _, b, _, _ in self.points if b >= bleu), math.nan)


class Run:
    """One model's training as an epoch-by-epoch generator, with its BLEU probe."""

    def __init__(self, name, model_class, args, datasets, tokens, vocabs, recipe):
        self.name = name
        seed_everything(args.seed)
        config = TransformerConfig(src_vocab_size=len(vocabs[0]), tgt_vocab_size=len(vocabs[1]))
        self.model = model_class(config)
        settings = TrainConfig(time_budget=args.budget, seed=args.seed, num_threads=args.threads, progress=False,
                               restore_best=False, clock=args.clock, warmup_steps=recipe.warmup_steps,
                               lr_factor=recipe.lr_factor)
        self.probe = TimeToBleu(self.model, tokens["valid"], vocabs, args.eval_every, args.stop_at, name)
        loader = make_train_loader(datasets["train"], recipe.batch_size, settings.seed, recipe.batch_tokens)
        self.epochs = train_epochs(self.model, loader, None, settings, callbacks=[self.probe])
        self.history, self.done, self.wall = [], False, 0.0

    def advance(self) -> None:
        """Train one more epoch (or mark the run done)."""
        start = time.perf_counter()
        try:
            self.history = next(self.epochs)
        except StopIteration:
            self.done = True
        self.wall += time.perf_counter() - start

    def result(self) -> dict:
        seconds = self.history[-1]["seconds"] if self.history else math.nan
        probe = self.probe
        return {"name": self.name, "params": sum(p.numel() for p in self.model.parameters()),
                "t90": probe.first_time_at(90.0), "t97": probe.first_time_at(97.0),
                "final_bleu": probe.points[-1][2] if probe.points else math.nan,
                "tokens_per_s": probe.tokens / seconds if seconds else math.nan, "seconds": seconds}


def main(argv=None) -> list[dict]:
    """Run the benchmark; print and return one result dict per model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="course,torch", help="comma-separated: course, torch")
    parser.add_argument("--budget", type=float, default=240.0, help="most training seconds per model")
    parser.add_argument("--eval-every", type=float, default=5.0, help="training seconds between BLEU checks")
    parser.add_argument("--stop-at", type=float, default=99.0, help="stop a model once validation BLEU reaches this")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=("wall", "process"), default="wall")
    parser.add_argument("--valid-pairs", type=int, help="score only the first N validation pairs (smoke tests)")
    parser.add_argument("--record", metavar="PATH",
                        help="results file (default: benchmarks/results/time_to_bleu/<UTC time>-seedN.json)")
    parser.add_argument("--no-record", action="store_true", help="write no results file")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")  # nn.Transformer's eval fast path
    configure_threads(args.threads)
    tokens = {split: data.tokenize_pairs(data.load_toy_corpus(split)) for split in ("train", "valid")}
    tokens["valid"] = tokens["valid"][: args.valid_pairs]
    vocabs = data.build_vocabs(tokens["train"])
    datasets = {"train": data.make_dataset(tokens["train"], *vocabs)}
    model_defaults = TransformerConfig()
    recipe = choose_recipe(model_defaults.d_model, max(model_defaults.n_encoder_layers, model_defaults.n_decoder_layers),
                           tokens["train"], time_budget=args.budget)
    print(f"model: {model_defaults} | recipe (what python -m course_lib.train chooses):\n{recipe.describe()}\n"
          f"threads {args.threads}, clock {args.clock}")
    builders = {"course": ("course_lib", Transformer), "torch": ("nn.Transformer", TorchTransformerTranslator)}
    runs = [Run(*builders[key.strip()], args, datasets, tokens, vocabs, recipe) for key in args.models.split(",")]
    round_index = 0
    while not all(run.done for run in runs):  # alternate epoch by epoch, ABBA: a linear drift cancels
        for run in runs if round_index % 2 == 0 else runs[::-1]:
            if not run.done:
                run.advance()
        round_index += 1
    for run in runs:
        print(f"{run.name}: {run.wall:.0f}s wall clock including evaluations")
    results = [run.result() for run in runs]
    print(f"\n{'model':15s} {'params':>8s} {'t(BLEU 90)':>11s} {'t(BLEU 97)':>11s} {'last BLEU':>10s} {'tokens/s':>9s}")
    for r in results:
        print(f"{r['name']:15s} {r['params']:8d} {r['t90']:10.1f}s {r['t97']:10.1f}s {r['final_bleu']:10.2f} "
              f"{r['tokens_per_s']:9.0f}")
    if not args.no_record:
        record = {**results_io.header("time_to_bleu", vars(args), args.threads), "seed": args.seed,
                  "results": results, "points": {run.name: run.probe.points for run in runs},
                  "points_columns": ["seconds", "step", "valid_bleu", "exact_match", "tokens"]}
        path = Path(args.record) if args.record else results_io.default_path("time_to_bleu", f"seed{args.seed}")
        results_io.write_atomic(path, record)
        print(f"results file: {path}")
    if len(results) == 2:
        ours, theirs = results
        print(f"ratio nn.Transformer / course_lib: time to BLEU 90 {theirs['t90'] / ours['t90']:.2f}x, "
              f"time to BLEU 97 {theirs['t97'] / ours['t97']:.2f}x, "
              f"tokens/s {ours['tokens_per_s'] / theirs['tokens_per_s']:.2f}x (>1: course_lib faster)")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
