"""Training (and inference) throughput of ``course_lib.model.Transformer`` against ``nn.Transformer``.

Both models have the same sizes (by default the default ``TransformerConfig`` with toy-corpus vocabularies;
``--size real``: the tutorial size used on Multi30k, ``d_model`` 256, 8 heads, ``d_ff`` 512, 3+3 layers,
vocabularies of 8,000/6,000 and batches of 128 sentences of 10-20 tokens, about the recipe's 1,800 target
tokens, and our output layer tied to the target embeddings as the recipe does there),
the same embeddings + sinusoidal positions + output projection around the layer stacks, the same
synthetic batches (batch 64, source and target lengths 10-16 with padding), the same loss and the
same optimizer (Adam). They run in one process, in ALTERNATING short blocks of steps (order
swapped every round, so a drift in machine load hits both alike), after a discarded warm-up block.

Throughput counts real (non-pad) source + target tokens per second. Reported: tokens/s of each
model summed over all blocks, and the ratio ours/torch (total, and the median of per-round ratios,
which is robust to a load spike in one block).

Usage::

    python -m benchmarks.throughput                     # 200 training steps each, 1 thread (course default)
    python -m benchmarks.throughput --threads 2 --steps 400
    python -m benchmarks.throughput --eval-only         # inference (teacher-forced eval forward) only
    python -m benchmarks.throughput --unfused           # our written-out attention and LayerNorm
    python -m benchmarks.throughput --profile           # where the time goes (torch.profiler), both models
    python -m benchmarks.throughput --size real --threads 2   # Multi30k size: d_model 256, 3+3 layers, 8k/6k vocab

Notes: ``nn.Transformer`` always has a final LayerNorm after each stack; our default post-norm
model has none (two LayerNorms of 64 features: negligible). In eval mode ``nn.Transformer`` takes
its inference fast path (nested tensors that skip padding in the encoder); ours runs as written.
On a busy machine prefer 1 thread: a 2-thread run slows down many times more than a 1-thread run.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from benchmarks import results_io
from course_lib.compat import to_torch_attn_mask, to_torch_key_padding_mask
from course_lib.embeddings import sinusoidal_table
from course_lib.masks import causal_mask
from course_lib.model import Transformer, TransformerConfig
from course_lib.utils import configure_threads

PAD, BOS, EOS = 0, 1, 2

# nn.Transformer's eval fast path packs padded batches into nested tensors and warns that this API is a
# prototype on every run; it does not affect the timing or the results.
warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors is in prototype stage")


class TorchTranslator(nn.Module):
    """``nn.Transformer`` with the same embeddings, positions and generator as our model.

    Masks are converted to PyTorch's polarity (True = blocked) here, by ``course_lib.compat``.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        d = config.d_model
        self.d_model = d
        self.src_embedding = nn.Embedding(config.src_vocab_size, d, padding_idx=config.pad_id)
        self.tgt_embedding = nn.Embedding(config.tgt_vocab_size, d, padding_idx=config.pad_id)
        with torch.no_grad():
            for emb in (self.src_embedding, self.tgt_embedding):
                emb.weight.normal_(0.0, d**-0.5)
                emb.weight[config.pad_id].zero_()
        self.register_buffer("pe", sinusoidal_table(config.max_len, d), persistent=False)
        self.dropout = nn.Dropout(config.dropout)
        self.transformer = nn.Transformer(
            d_model=d,
            nhead=config.n_heads,
            num_encoder_layers=config.n_encoder_layers,
            num_decoder_layers=config.n_decoder_layers,
            dim_feedforward=config.d_ff,
            dropout=config.dropout,
            batch_first=True,
            norm_first=config.norm_first,
        )
        self.generator = nn.Linear(d, config.tgt_vocab_size)
        self.pad_id = config.pad_id

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        scale = math.sqrt(self.d_model)
        x = self.dropout(self.src_embedding(src) * scale + self.pe[: src.size(1)])  # (batch, src_len, d_model)
        y = self.dropout(self.tgt_embedding(tgt) * scale + self.pe[: tgt.size(1)])  # (batch, tgt_len, d_model)
        src_pad = to_torch_key_padding_mask(src, self.pad_id)  # torch: True = blocked
        hidden = self.transformer(
            x,
            y,
            src_key_padding_mask=src_pad,
            tgt_key_padding_mask=to_torch_key_padding_mask(tgt, self.pad_id),
            memory_key_padding_mask=src_pad,
            tgt_mask=to_torch_attn_mask(causal_mask(tgt.size(1), device=tgt.device)),
        )
        return self.generator(hidden)  # (batch, tgt_len, tgt_vocab_size)


SIZES = {  # --size: model and data sizes
    "toy": {"d_model": 64, "n_heads": 4, "d_ff": 256, "layers": 2, "src_vocab": 600, "tgt_vocab": 450,
            "batch_size": 64, "lengths": (10, 16), "tie_embeddings": False},
    "real": {"d_model": 256, "n_heads": 8, "d_ff": 512, "layers": 3, "src_vocab": 8000, "tgt_vocab": 6000,
             "batch_size": 128, "lengths": (10, 20), "tie_embeddings": True},  # tied: as the recipe chooses there
}


def make_batches(n_batches: int, batch_size: int, src_vocab: int, tgt_vocab: int, seed: int = 0,
                 lengths: tuple[int, int] = (10, 16)):
    """Synthetic (src, tgt) id batches: lengths in ``lengths`` (<bos>/<eos> included), padded to the batch maximum."""
    gen = torch.Generator().manual_seed(seed)
    batches = []
    low, high = lengths
    for _ in range(n_batches):
        src_len = torch.randint(low, high + 1, (batch_size,), generator=gen)
        tgt_len = torch.randint(low, high + 1, (batch_size,), generator=gen)
        src = torch.randint(4, src_vocab, (batch_size, int(src_len.max())), generator=gen)
        tgt = torch.randint(4, tgt_vocab, (batch_size, int(tgt_len.max())), generator=gen)
        for b in range(batch_size):
            src[b, src_len[b] - 1] = EOS
            src[b, src_len[b]:] = PAD
            tgt[b, 0] = BOS
            tgt[b, tgt_len[b] - 1] = EOS
            tgt[b, tgt_len[b]:] = PAD
        batches.append((src, tgt))
    return batches


def count_tokens(src: torch.Tensor, tgt: torch.Tensor) -> int:
    """Real (non-pad) tokens a step processes: source + decoder input."""
    return int((src != PAD).sum()) + int((tgt[:, :-1] != PAD).sum())


def make_train_step(model: nn.Module, vocab: int, lr: float) -> Callable:
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)

    def step(src: torch.Tensor, tgt: torch.Tensor) -> float:
        model.train()
        optimizer.zero_grad(set_to_none=True)
        logits = model(src, tgt[:, :-1])  # teacher forcing: predict tgt[:, 1:]
        loss = loss_fn(logits.reshape(-1, vocab), tgt[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    return step


def make_eval_step(model: nn.Module) -> Callable:
    @torch.inference_mode()
    def step(src: torch.Tensor, tgt: torch.Tensor) -> float:
        model.eval()
        return float(model(src, tgt[:, :-1])[0, 0, 0])

    return step


def run_alternating(steps: dict[str, Callable], batches, total_steps: int, block: int, warmup: int) -> dict:
    """Run each step function ``total_steps`` times in alternating blocks; return tokens/s and ratios."""
    names = list(steps)
    cursor = dict.fromkeys(names, 0)

    def run_block(name: str, n: int) -> tuple[float, int]:
        tokens = 0
        start = time.perf_counter()
        for _ in range(n):
            src, tgt = batches[cursor[name] % len(batches)]
            cursor[name] += 1
            steps[name](src, tgt)
            tokens += count_tokens(src, tgt)
        return time.perf_counter() - start, tokens

    for name in names:  # warm-up: allocator, thread pools, lazy init; discarded
        run_block(name, warmup)
    seconds = dict.fromkeys(names, 0.0)
    tokens = dict.fromkeys(names, 0)
    round_rates: list[dict[str, float]] = []
    done = 0
    round_index = 0
    while done < total_steps:
        n = min(block, total_steps - done)
        order = names if round_index % 2 == 0 else names[::-1]  # ABBA...: cancels a linear drift
        rates = {}
        for name in order:
            t, k = run_block(name, n)
            seconds[name] += t
            tokens[name] += k
            rates[name] = k / t
        round_rates.append(rates)
        done += n
        round_index += 1
    result = {name: tokens[name] / seconds[name] for name in names}
    a, b = names
    result["ratio"] = result[a] / result[b]
    result["median_round_ratio"] = statistics.median(r[a] / r[b] for r in round_rates)
    result["rounds"] = len(round_rates)
    return result


def profile(steps: dict[str, Callable], batches, n: int = 10, top: int = 15) -> None:
    """Print the operators that take the most self CPU time, per model."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    for name, step in steps.items():
        for src, tgt in batches[:3]:
            step(src, tgt)
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            for i in range(n):
                step(*batches[i % len(batches)])
        print(f"\n=== {name}: top {top} ops by self CPU time over {n} steps ===")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top))


def build_models(config: TransformerConfig, use_fused: bool = True, seed: int = 0):
    torch.manual_seed(seed)
    ours = Transformer(config)
    for module in ours.modules():
        if hasattr(module, "use_fused"):
            module.use_fused = use_fused
    torch.manual_seed(seed)
    ref = TorchTranslator(config)
    return ours, ref


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steps per model (default 200)")
    parser.add_argument("--block", type=int, default=10, help="steps per alternating block (default 10)")
    parser.add_argument("--warmup", type=int, default=None, help="discarded warm-up steps per model (default: --block)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: course_lib.utils.configure_threads, i.e. COURSE_NUM_THREADS or 1)")
    parser.add_argument("--size", choices=sorted(SIZES), default="toy",
                        help="toy: the default model; real: d_model 256, 3+3 layers, 8k/6k vocab (Multi30k size)")
    parser.add_argument("--batch-size", type=int, help="sentences per batch (default: the size's)")
    parser.add_argument("--src-vocab", type=int, help="source vocabulary (default: the size's)")
    parser.add_argument("--tgt-vocab", type=int, help="target vocabulary (default: the size's)")
    parser.add_argument("--eval-only", action="store_true", help="time only inference (eval forward)")
    parser.add_argument("--no-eval", action="store_true", help="skip the inference timing")
    parser.add_argument("--unfused", action="store_true",
                        help="our written-out attention and LayerNorm instead of the fused kernels")
    parser.add_argument("--profile", action="store_true", help="print a torch.profiler table per model and exit")
    parser.add_argument("--record", metavar="PATH",
                        help="results file (default: benchmarks/results/throughput/<UTC time>-<size>.json)")
    parser.add_argument("--no-record", action="store_true", help="write no results file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark; print and return the figures (``{"train": {...}, "eval": {...}}``)."""
    args = parse_args(argv)
    threads = configure_threads(args.threads)
    warmup = args.block if args.warmup is None else args.warmup
    size = SIZES[args.size]
    for key in ("batch_size", "src_vocab", "tgt_vocab"):
        if getattr(args, key) is None:
            setattr(args, key, size[key])
    config = TransformerConfig(src_vocab_size=args.src_vocab, tgt_vocab_size=args.tgt_vocab, d_model=size["d_model"],
                               n_heads=size["n_heads"], d_ff=size["d_ff"], n_encoder_layers=size["layers"],
                               n_decoder_layers=size["layers"], tie_embeddings=size["tie_embeddings"])
    ours, ref = build_models(config, use_fused=not args.unfused)
    batches = make_batches(32, args.batch_size, args.src_vocab, args.tgt_vocab, lengths=size["lengths"])
    print(
        f"torch {torch.__version__} | {platform.processor() or platform.machine()} | {threads} thread(s) | "
        f"{args.size} size (d_model={config.d_model}, n_heads={config.n_heads}, "
        f"layers={config.n_encoder_layers}+{config.n_decoder_layers}, d_ff={config.d_ff}), "
        f"vocab {args.src_vocab}/{args.tgt_vocab}, batch {args.batch_size}, lengths {size['lengths'][0]}-{size['lengths'][1]} | "
        f"params ours {ours.num_parameters():,}, torch {sum(p.numel() for p in ref.parameters()):,} | "
        f"our attention + LayerNorm: {'explicit (written-out) paths' if args.unfused else 'fused paths'} | "
        f"load average {_load()}"
    )
    train_steps = {
        "ours": make_train_step(ours, args.tgt_vocab, lr=5e-4),
        "torch": make_train_step(ref, args.tgt_vocab, lr=5e-4),
    }
    eval_steps = {"ours": make_eval_step(ours), "torch": make_eval_step(ref)}
    if args.profile:
        profile(eval_steps if args.eval_only else train_steps, batches)
        return {}
    results = {}
    phases = [] if args.eval_only else [("train", train_steps)]
    if not args.no_eval:
        phases.append(("eval", eval_steps))
    for phase, steps in phases:
        res = run_alternating(steps, batches, args.steps, args.block, warmup)
        results[phase] = res
        print(
            f"{phase:5s}: ours {res['ours']:9,.0f} tok/s | torch {res['torch']:9,.0f} tok/s | "
            f"ours/torch {res['ratio']:.2f}x (median of {res['rounds']} rounds {res['median_round_ratio']:.2f}x)"
        )
    busy = hasattr(os, "getloadavg") and os.getloadavg()[0] > (os.cpu_count() or 1)
    print(f"load average at the end {_load()}" + (": other processes competed for the CPU" if busy else ""))
    if not args.no_record:
        record = {**results_io.header("throughput", vars(args), threads), "results": results,
                  "parameters": {"ours": ours.num_parameters(), "torch": sum(p.numel() for p in ref.parameters())},
                  "tied_output": {"ours": config.tie_embeddings, "torch": False}, "load_average_at_end": _load()}
        path = Path(args.record) if args.record else results_io.default_path("throughput", args.size)
        results_io.write_atomic(path, record)
        print(f"results file: {path}")
    return results


def _load() -> str:
    """The 1-minute load average and the core count, e.g. '0.4 on 2 cores' (not available on Windows)."""
    try:
        return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except (AttributeError, OSError):
        return "unknown"


if __name__ == "__main__":
    main(sys.argv[1:])
