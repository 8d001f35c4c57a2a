"""The three training pipelines of ``benchmarks/real_data.py``, each trainable one epoch at a time.

* ``course``: exactly what ``python -m course_lib.train`` does with the same flags: cased spaCy words (or
  their BPE pieces with ``--subword-merges``),
  the recipe of :mod:`course_lib.recipe` for every recipe flag not given, the course ``Transformer``,
  the course loop (label-smoothed loss, warm-up schedule, clipping 1.0, weight average).
* ``torch_recipe``: ``nn.Transformer`` of the same size inside the course's embeddings, positions and
  generator (``TorchTransformerTranslator``), trained by the *same* loop, recipe, words and batches as
  ``course`` (output layer tied when the recipe ties it). ``course`` vs ``torch_recipe`` measures the
  implementation; ``torch_recipe`` vs ``classic`` measures the recipe.
* ``classic``: a reference recipe for Multi30k as quoted in the project's issue 9, implemented as stated
  there (its batching rule is the Annotated Transformer's; we found no published source that uses exactly
  these settings together): lower-cased spaCy words, ``min_freq`` 2, the same ``nn.Transformer`` wrapper with a
  separate (untied) output matrix, dropout 0.1; a batch closes when (longest sentence of the batch,
  source or target, counting ``<bos>``/``<eos>``) x (sentences) would pass 4,000; Adam (0.9, 0.98,
  1e-9) at a linear warm-up over 800 steps to 1e-3, then ``1e-3 * sqrt(800 / step)``; label smoothing
  0.1 (``nn.CrossEntropyLoss``); gradient norm clipped at 1.0; no weight averaging. Lower-cased words
  because that is how the recipe is stated; it is therefore scored lower-cased only.

Every pipeline keeps its own random state (Python, NumPy, torch), swapped in around its work, so its
results do not depend on which other pipelines run beside it or in which order.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import replace

import torch
from torch import nn

from benchmarks.time_to_bleu import TorchTransformerTranslator
from course_lib import data, loading
from course_lib import train as cli
from course_lib.decoding import translate_token_lists
from course_lib.model import Transformer, TransformerConfig
from course_lib.run_spec import RunSpec
from course_lib.schedule import ADAM_BETAS, ADAM_EPS
from course_lib.training import capture_rng_state, restore_rng_state, train_epochs
from course_lib.utils import seed_everything

PIPELINES = ("course", "torch_recipe", "classic")


class Pipeline:
    """Shared parts: own random state, translation of a split's sources."""

    name = "?"
    lowercased_output = False

    def __init__(self, seed: int):
        seed_everything(seed)
        self._rng = capture_rng_state()

    @contextmanager
    def own_random_state(self):
        """Run a block with this pipeline's random state, then keep the state it leaves."""
        restore_rng_state(self._rng)
        try:
            yield
        finally:
            self._rng = capture_rng_state()

    def run_epoch(self) -> dict:
        """Train one epoch; returns ``{"step", "tokens", "train_loss"}``."""
        raise NotImplementedError

    def translate(self, split: str, beam_size: int = 1) -> list[list[str]]:
        """Output tokens for every source sentence of ``split`` ("valid" or "test"); greedy unless ``beam_size`` > 1."""
        with torch.no_grad():
            return translate_token_lists(self.model, self.sources[split], *self.vocabs, beam_size=beam_size)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in {id(p): p for p in self.model.parameters()}.values())


class CourseData:
    """The course command line's reading of the data and its recipe, shared by ``course`` and ``torch_recipe``.

    Args:
        files: ``{"src": [train, valid, test], "tgt": [...]}``.
        args: the benchmark's settings (epochs, threads, seed, languages, pair limits).
        course: the course pipeline's run (:class:`~course_lib.run_spec.RunSpec` of the flags the benchmark
            passes on); the benchmark's settings and ``files`` replace its data and training fields.
    """

    def __init__(self, files: dict, args, course: RunSpec):
        spec = replace(course, src_files=list(files["src"]), tgt_files=list(files["tgt"]), epochs=args.epochs,
                       time_budget=0.0, threads=args.threads, seed=args.seed, progress=False,
                       src_lang=args.src_lang, tgt_lang=args.tgt_lang,
                       max_train_pairs=args.max_train_pairs or course.max_train_pairs,
                       max_eval_pairs=args.max_eval_pairs or course.max_eval_pairs)
        prepared = cli.prepare_data(spec, log=lambda *_: None)  # BPE pieces if subword_merges
        self.options, self.tokens, self.recipe, self.config = prepared.spec, prepared.tokens, prepared.recipe, prepared.config
        self.vocabs = (prepared.src_vocab, prepared.tgt_vocab)
        self.units = (f"cased BPE pieces ({self.options.subword_merges:,} merges per language)"
                      if self.options.subword_merges else "cased words")
        self.train_set = data.make_dataset(self.tokens["train"], *self.vocabs, max_len=self.config.max_len - 2)

    def settings(self):
        settings = self.options.train_config()
        # score the weights of each epoch and keep the last (the command line's --keep last): the rule that
        # picks an epoch is course_lib.training.choose_epoch, here and in report.py
        settings.best_checkpoint, settings.select_by = None, "last"
        return settings


class CourseRecipePipeline(Pipeline):
    """A model trained by the course loop and recipe (``course``: the course model; ``torch_recipe``: nn.Transformer)."""

    def __init__(self, name: str, shared: CourseData, seed: int):
        super().__init__(seed)
        self.name, self.vocabs = name, shared.vocabs
        with self.own_random_state():
            model_class = Transformer if name == "course" else TorchTransformerTranslator
            self.model = model_class(shared.config)
            loader = loading.make_train_loader(shared.train_set, shared.options.batch_size, shared.options.seed,
                                               shared.options.batch_tokens)
            self.steps = train_epochs(self.model, loader, None, shared.settings())
        self.sources = {split: [s for s, _ in shared.tokens[split]] for split in ("valid", "test")}
        self.unknown = {split: loading.unknown_rate(shared.tokens[split], *self.vocabs) for split in ("valid", "test")}
        self.description = (f"{self.num_parameters():,} parameters, vocab {len(self.vocabs[0])}/{len(self.vocabs[1])}, "
                            f"{shared.units}, the course recipe:\n{shared.recipe.describe()}")

    def run_epoch(self) -> dict:
        with self.own_random_state():
            entry = next(self.steps)[-1]
        return {"step": entry["step"], "tokens": entry["tokens"], "train_loss": entry["train_loss"]}

    def translate(self, split: str, beam_size: int = 1) -> list[list[str]]:
        with self.own_random_state():
            return super().translate(split, beam_size)


class ClassicBatchSampler(data.BucketBatchSampler):
    """The classic recipe's batches: close a batch when (sentences) x (its longest sentence, source or
    target, + 2 for ``<bos>``/``<eos>``) would pass ``max_tokens``.

    Each epoch the shuffled pairs are sorted by (source length, target length), as The Annotated
    Transformer's iterator sorts them, in pools of ``pool_batches`` average batches, cut into batches by
    the rule, and the batches shuffled. The rule is the classic recipe's; the pool is not stated by it.
    Pools of 10 batches (about 2,600 pairs) reproduce the figures quoted for it on Multi30k: about 161
    steps per epoch, ~2,540 real target tokens per batch (seeds 0-2: 159-161 steps, 2,540-2,575 tokens).
    Sorting a whole epoch at once would give 123 fuller batches (~3,330 tokens), i.e. 24% fewer updates.

    Args:
        src_lengths, tgt_lengths: source and target tokens of each pair (without ``<bos>``/``<eos>``).
        max_tokens: the rule's limit (4,000 in the classic recipe).
        seed: shuffling seed.
        pool_batches: pool size in average batches.
    """

    def __init__(self, src_lengths, tgt_lengths, max_tokens: int = 4000, seed: int = 0, pool_batches: int = 10):
        self.padded = [max(s, t) + 2 for s, t in zip(src_lengths, tgt_lengths, strict=True)]
        self.max_tokens = max_tokens
        mean = sum(self.padded) / len(self.padded)
        sort_keys = [s * 100_000 + t for s, t in zip(src_lengths, tgt_lengths, strict=True)]  # by (source, target) length
        super().__init__(sort_keys, max(1, round(max_tokens / mean)), shuffle=True, seed=seed, pool_batches=pool_batches)

    def _chunk(self, order: list[int]) -> list[list[int]]:
        batches, current, longest = [], [], 0
        for i in order:
            longest_with = max(longest, self.padded[i])
            if current and longest_with * (len(current) + 1) > self.max_tokens:
                batches.append(current)
                current, longest_with = [], self.padded[i]
            current.append(i)
            longest = longest_with
        if current:
            batches.append(current)
        return batches

    def __len__(self) -> int:
        return len(self.batches())


class ClassicPipeline(Pipeline):
    """The classic Multi30k recipe (see the module docstring)."""

    name = "classic"
    lowercased_output = True

    def __init__(self, splits: dict, args, size: TransformerConfig, device: torch.device):
        super().__init__(args.seed)
        tokenizers = data.default_tokenizers(lowercase=True, src_lang=args.src_lang, tgt_lang=args.tgt_lang)
        tokens = {name: data.tokenize_pairs(pairs, tokenizers) for name, pairs in splits.items()}
        self.vocabs = data.build_vocabs(tokens["train"], min_freq=args.classic_min_freq)
        config = TransformerConfig(src_vocab_size=len(self.vocabs[0]), tgt_vocab_size=len(self.vocabs[1]),
                                   d_model=size.d_model, n_heads=size.n_heads, d_ff=size.d_ff,
                                   n_encoder_layers=size.n_encoder_layers, n_decoder_layers=size.n_decoder_layers,
                                   dropout=args.classic_dropout, tie_embeddings=False)
        dataset = data.make_dataset(tokens["train"], *self.vocabs, max_len=config.max_len - 2)
        self.sampler = ClassicBatchSampler([len(s) for s, _ in tokens["train"]], [len(t) for _, t in tokens["train"]],
                                           args.classic_batch_tokens, seed=args.seed)
        self.loader = torch.utils.data.DataLoader(dataset, batch_sampler=self.sampler, collate_fn=data.collate_batch)
        with self.own_random_state():
            self.model = TorchTransformerTranslator(config).to(device)
        self.device = device
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPS)
        warmup, peak = args.classic_warmup, args.classic_peak_lr
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: peak * min((s + 1) / warmup, math.sqrt(warmup / (s + 1))))
        self.loss = nn.CrossEntropyLoss(ignore_index=config.pad_id, label_smoothing=0.1)
        self.clip = args.classic_clip
        self.sources = {split: [s for s, _ in tokens[split]] for split in ("valid", "test")}
        self.unknown = {split: loading.unknown_rate(tokens[split], *self.vocabs) for split in ("valid", "test")}
        self.epoch = self.step = 0
        self.description = (f"{self.num_parameters():,} parameters, vocab {len(self.vocabs[0])}/{len(self.vocabs[1])}, "
                            f"lower-cased words, batches by the classic rule ({args.classic_batch_tokens}; "
                            f"{len(self.sampler)} per epoch), warm-up {warmup} to {peak:g} then 1/sqrt, "
                            f"clip {self.clip:g}, dropout {args.classic_dropout}, min_freq {args.classic_min_freq}, "
                            f"untied output, no averaging")

    def run_epoch(self) -> dict:
        self.epoch += 1
        self.sampler.set_epoch(self.epoch)
        self.model.train()
        loss_sum = tokens = 0.0
        with self.own_random_state():
            for src, tgt_in, tgt_out in self.loader:
                src, tgt_in, tgt_out = src.to(self.device), tgt_in.to(self.device), tgt_out.to(self.device)
                logits = self.model(src, tgt_in)  # (batch, tgt_len, vocab)
                loss = self.loss(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))  # (batch * tgt_len, vocab)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
                self.optimizer.step()
                self.scheduler.step()
                self.step += 1
                n = int((tgt_out != 0).sum())
                loss_sum += float(loss.detach()) * n
                tokens += n
        return {"step": self.step, "tokens": int(tokens), "train_loss": loss_sum / max(tokens, 1)}

    def translate(self, split: str, beam_size: int = 1) -> list[list[str]]:
        self.model.eval()
        with self.own_random_state():
            return super().translate(split, beam_size)
