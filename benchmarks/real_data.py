"""Real-data benchmark: the course pipeline against an ``nn.Transformer`` reference pipeline on a
Multi30k-style corpus, same files, threads and epochs, trained INTERLEAVED epoch by epoch.

Course pipeline: exactly what ``python -m course_lib.train`` does with the same flags -- cased spaCy
tokens, the recipe of :mod:`course_lib.recipe` for every recipe flag not given, the course model, loss,
schedule, clipping and weight averaging. Flags this script does not know are passed to it.

Reference pipeline (the recipe of the issue that asked for this benchmark): lower-cased spaCy tokens,
``min_freq`` 2, ``nn.Transformer`` of the same size inside the course's scaled embeddings
(N(0, d^-0.5) x sqrt(d)) and sinusoidal positions (xavier-initialised layers and generator), dropout
0.1, label smoothing 0.1, Adam (0.9, 0.98, 1e-9), batches of about 4,000 target tokens, a linear
warm-up over 800 steps to a peak of 1e-3, then inverse square root decay. No clipping, no averaging.

After every epoch of each pipeline the whole test split is translated greedily and scored with
sacrebleu on detokenized output against the raw reference file, cased and lower-cased (signatures
printed). The two pipelines alternate (course first in odd epochs, the reference first in even
ones), so a change in the machine's load hits both alike. Training tokens/s counts target tokens of
the training batches (loss, clipping and averaging included; evaluation excluded).

    python benchmarks/real_data.py --data-dir ../shared/data/multi30k --threads 2 --epochs 10 \\
        --d-model 256 --n-heads 8 --d-ff 512 --layers 3 --dropout 0.1 --min-freq 2
    python benchmarks/real_data.py --data-dir DIR --epochs 4 --pipelines course   # the default model only

Files: ``DIR/{train,val,test_2016_flickr}.{de,en}`` or the same names with ``.gz``.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_to_bleu import TorchTransformerTranslator

from course_lib import data
from course_lib import train as cli
from course_lib.decoding import translate_token_lists
from course_lib.model import Transformer, TransformerConfig
from course_lib.schedule import ADAM_BETAS, ADAM_EPS
from course_lib.tokenization import detokenize
from course_lib.training import train_epochs
from course_lib.utils import configure_threads, get_device, seed_everything


def find_file(folder: Path, name: str, lang: str) -> Path:
    """``folder/name.lang`` or ``folder/name.lang.gz``."""
    for candidate in (folder / f"{name}.{lang}", folder / f"{name}.{lang}.gz"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"neither {name}.{lang} nor {name}.{lang}.gz in {folder}")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="folder with the Multi30k-style files")
    parser.add_argument("--splits", nargs=3, default=["train", "val", "test_2016_flickr"], metavar=("TRAIN", "VALID", "TEST"))
    parser.add_argument("--src-lang", default="de")
    parser.add_argument("--tgt-lang", default="en")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pipelines", default="course,torch", help="comma-separated: course, torch")
    parser.add_argument("--max-train-pairs", type=int, help="first N training pairs only (smoke tests)")
    parser.add_argument("--ref-batch-tokens", type=int, default=4000)
    parser.add_argument("--ref-warmup", type=int, default=800)
    parser.add_argument("--ref-peak-lr", type=float, default=1e-3)
    parser.add_argument("--ref-min-freq", type=int, default=2)
    parser.add_argument("--ref-dropout", type=float, default=0.1)
    args, course_flags = parser.parse_known_args(argv)
    return args, course_flags


def score(hypotheses: list[str], references: list[str]) -> dict:
    """sacrebleu corpus BLEU, cased and lower-cased, with signatures."""
    from sacrebleu.metrics import BLEU

    result = {}
    for key, metric in (("cased", BLEU()), ("lower", BLEU(lowercase=True))):
        result[key] = metric.corpus_score(hypotheses, [references]).score
        result[f"{key}_signature"] = str(metric.get_signature())
    return result


class CoursePipeline:
    """``python -m course_lib.train`` with ``flags``, one epoch per :meth:`run_epoch`."""

    name = "course_lib"

    def __init__(self, files: dict, args, course_flags: list[str]):
        argv = [*course_flags, "--src-files", *files["src"], "--tgt-files", *files["tgt"], "--epochs", str(args.epochs),
                "--time-budget", "0", "--threads", str(args.threads), "--seed", str(args.seed), "--no-progress",
                "--src-lang", args.src_lang, "--tgt-lang", args.tgt_lang]
        if args.max_train_pairs:
            argv += ["--max-train-pairs", str(args.max_train_pairs)]
        options = cli.build_parser().parse_args(argv)
        given = cli.given_options(argv)
        splits = cli.load_splits(options)
        tokenizers = data.default_tokenizers(src_lang=args.src_lang, tgt_lang=args.tgt_lang)
        tokens = {name: data.tokenize_pairs(pairs, tokenizers) for name, pairs in splits.items()}
        self.recipe = cli.apply_recipe(options, given, tokens["train"])
        self.vocabs = data.build_vocabs(tokens["train"], min_freq=options.min_freq)
        config = cli.model_config(options, *self.vocabs)
        datasets = {name: data.make_dataset(tokens[name], *self.vocabs, max_len=config.max_len - 2)
                    for name in ("train", "valid")}
        seed_everything(args.seed)
        self.model = Transformer(config)
        settings = cli.train_config(options)
        settings.best_checkpoint, settings.restore_best = None, False  # score the weights of each epoch
        loader = cli.make_train_loader(datasets["train"], options.batch_size, options.seed, options.batch_tokens)
        self.steps = train_epochs(self.model, loader, cli.make_eval_loader(datasets["valid"]), settings)
        self.test_sources = [s for s, _ in tokens["test"]]
        self.unknown = cli.unknown_rate(tokens["test"], *self.vocabs)
        self.seconds_so_far = 0.0
        self.description = (f"{self.model.num_parameters():,} parameters, vocab {len(self.vocabs[0])}/"
                            f"{len(self.vocabs[1])}, cased tokens, recipe:\n{self.recipe.describe()}")

    def run_epoch(self) -> dict:
        history = next(self.steps)
        entry = history[-1]
        seconds = entry["seconds"] - self.seconds_so_far
        self.seconds_so_far = entry["seconds"]
        return {"step": entry["step"], "seconds": seconds, "tokens_per_s": entry["tokens"] / seconds,
                "train_loss": entry["train_loss"], "valid_ppl": entry.get("valid_ppl", math.nan)}

    def translate(self) -> list[str]:
        outputs = translate_token_lists(self.model, self.test_sources, *self.vocabs)
        return [detokenize(t) for t in outputs]


class ReferencePipeline:
    """The ``nn.Transformer`` reference pipeline (see the module docstring)."""

    name = "nn.Transformer"

    def __init__(self, splits: dict, args, size: TransformerConfig, device: torch.device):
        tokenizers = data.default_tokenizers(lowercase=True, src_lang=args.src_lang, tgt_lang=args.tgt_lang)
        tokens = {name: data.tokenize_pairs(splits[name], tokenizers) for name in ("train", "test")}
        self.vocabs = data.build_vocabs(tokens["train"], min_freq=args.ref_min_freq)
        config = TransformerConfig(src_vocab_size=len(self.vocabs[0]), tgt_vocab_size=len(self.vocabs[1]),
                                   d_model=size.d_model, n_heads=size.n_heads, d_ff=size.d_ff,
                                   n_encoder_layers=size.n_encoder_layers, n_decoder_layers=size.n_decoder_layers,
                                   dropout=args.ref_dropout)
        dataset = data.make_dataset(tokens["train"], *self.vocabs, max_len=config.max_len - 2)
        sampler = data.TokenBatchSampler(dataset.lengths, dataset.tgt_lengths, args.ref_batch_tokens, seed=args.seed)
        self.loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler, collate_fn=data.collate_batch)
        seed_everything(args.seed)
        self.model = TorchTransformerTranslator(config).to(device)
        self.device = device
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPS)
        warmup, peak = args.ref_warmup, args.ref_peak_lr
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: peak * min((s + 1) / warmup, math.sqrt(warmup / (s + 1))))
        self.loss = nn.CrossEntropyLoss(ignore_index=config.pad_id, label_smoothing=0.1)
        self.test_sources = [s for s, _ in tokens["test"]]
        self.unknown = cli.unknown_rate(tokens["test"], *self.vocabs)
        self.epoch = self.step = 0
        self.description = (f"{sum(p.numel() for p in self.model.parameters()):,} parameters, vocab "
                            f"{len(self.vocabs[0])}/{len(self.vocabs[1])}, lower-cased tokens, batches of "
                            f"{args.ref_batch_tokens} target tokens, warm-up {warmup} to {peak:g}, "
                            f"dropout {args.ref_dropout}, min_freq {args.ref_min_freq}")

    def run_epoch(self) -> dict:
        self.epoch += 1
        self.loader.batch_sampler.set_epoch(self.epoch)
        self.model.train()
        loss_sum = tokens = 0.0
        start = time.perf_counter()
        for src, tgt_in, tgt_out in self.loader:
            src, tgt_in, tgt_out = src.to(self.device), tgt_in.to(self.device), tgt_out.to(self.device)
            logits = self.model(src, tgt_in)  # (batch, tgt_len, vocab)
            loss = self.loss(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))  # (batch * tgt_len, vocab)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            self.step += 1
            n = int((tgt_out != 0).sum())
            loss_sum += float(loss.detach()) * n
            tokens += n
        seconds = time.perf_counter() - start
        return {"step": self.step, "seconds": seconds, "tokens_per_s": tokens / seconds,
                "train_loss": loss_sum / max(tokens, 1), "valid_ppl": math.nan}

    def translate(self) -> list[str]:
        self.model.eval()
        with torch.no_grad():
            outputs = translate_token_lists(self.model, self.test_sources, *self.vocabs)
        return [detokenize(t) for t in outputs]


def main(argv=None) -> dict:
    """Run the benchmark; print and return ``{pipeline name: [per-epoch results]}``."""
    args, course_flags = parse_args(argv)
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
    warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
    threads = configure_threads(args.threads)
    folder = Path(args.data_dir)
    files = {"src": [str(find_file(folder, n, args.src_lang)) for n in args.splits],
             "tgt": [str(find_file(folder, n, args.tgt_lang)) for n in args.splits]}
    references = [tgt for _, tgt in data.read_parallel_files(files["src"][2], files["tgt"][2])]
    device = get_device(None)
    print(f"torch {torch.__version__}, {threads} thread(s), device {device}; data {folder}: "
          f"{' '.join(Path(f).name for f in files['src'] + files['tgt'])}", flush=True)
    wanted = [p.strip() for p in args.pipelines.split(",")]
    pipelines = []
    if "course" in wanted:
        course = CoursePipeline(files, args, course_flags)
        pipelines.append(course)
        size = course.model.config
    else:
        options = cli.build_parser().parse_args(course_flags)
        size = TransformerConfig(d_model=options.d_model, n_heads=options.n_heads, d_ff=options.d_ff,
                                 **({} if options.layers is None else {"n_encoder_layers": options.layers,
                                                                       "n_decoder_layers": options.layers}))
    if "torch" in wanted:
        splits = {"train": data.read_parallel_files(files["src"][0], files["tgt"][0]),
                  "test": data.read_parallel_files(files["src"][2], files["tgt"][2])}
        if args.max_train_pairs:
            splits["train"] = splits["train"][: args.max_train_pairs]
        pipelines.append(ReferencePipeline(splits, args, size, device))
    for p in pipelines:
        print(f"{p.name}: {p.description}\n  unknown test tokens: {100 * p.unknown[0]:.1f}% {args.src_lang}, "
              f"{100 * p.unknown[1]:.1f}% {args.tgt_lang}", flush=True)
    results = {p.name: [] for p in pipelines}
    for epoch in range(1, args.epochs + 1):
        order = pipelines if epoch % 2 == 1 else pipelines[::-1]
        for p in order:
            row = p.run_epoch()
            start = time.perf_counter()
            row.update(score(p.translate(), references))
            row["decode_seconds"] = time.perf_counter() - start
            row["epoch"] = epoch
            results[p.name].append(row)
            print(f"epoch {epoch:2d}  {p.name:14s} step {row['step']:5d}  train {row['seconds']:7.1f}s  "
                  f"{row['tokens_per_s']:7.0f} tok/s  train loss {row['train_loss']:.3f}  "
                  f"test BLEU {row['cased']:5.2f} cased  {row['lower']:5.2f} lowercased  "
                  f"(decoded in {row['decode_seconds']:.0f}s)", flush=True)
        if len(pipelines) == 2:
            a, b = (results[p.name][-1] for p in pipelines)
            print(f"epoch {epoch:2d}  course_lib / nn.Transformer: tokens/s {a['tokens_per_s'] / b['tokens_per_s']:.2f}x, "
                  f"lowercased BLEU {a['lower'] - b['lower']:+.2f}", flush=True)
    first = next(iter(results.values()))[0]
    print(f"signatures: cased {first['cased_signature']} | lowercased {first['lower_signature']}")
    print(f"\n{'epoch':>5s} " + " ".join(f"{name + ' BLEU (lc)':>24s}" for name in results))
    for i in range(args.epochs):
        print(f"{i + 1:5d} " + " ".join(f"{rows[i]['lower']:24.2f}" for rows in results.values()))
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
