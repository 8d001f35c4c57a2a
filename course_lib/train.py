r"""Command line: train a German→English translator and evaluate it on the held-out test split.

By default it trains the course model on the toy corpus for a two-minute budget and prints the test
BLEU (sacrebleu, with its signature), the exact-match rate and a few sample translations::

    python -m course_lib.train                                   # toy corpus, 120 s, runs/toy_de_en.pt
    python -m course_lib.train --time-budget 60 --output runs/quick.pt
    python -m course_lib.train --train-tsv my/train.tsv --valid-tsv my/valid.tsv --test-tsv my/test.tsv
    python -m course_lib.train --src-files train.de valid.de test.de --tgt-files train.en valid.en test.en
    torchrun --nproc_per_node=2 -m course_lib.train --time-budget 60   # DistributedDataParallel

The shipped checkpoint ``data/checkpoints/toy_de_en.pt`` was made with::

    python -m course_lib.train --time-budget 120 --threads 1 --seed 0 --weights-only --no-progress \
        --output data/checkpoints/toy_de_en.pt

(see ``data/checkpoints/README.md`` for the measured numbers; it kept the epoch with the lowest validation
loss, the rule of that time: ``--keep loss`` repeats it). Every option: ``--help``.

Which weights it keeps, writes and scores on the test split (``--keep``, :func:`course_lib.training.choose_epoch`,
the rule ``benchmarks/report.py`` uses too): by default those of the epoch with the highest validation BLEU
(greedy decoding of the whole validation split, lower-cased sacreBLEU on the detokenized output against the
reference file's lines, exactly as ``benchmarks/real_data.py`` scores it; after every ``--bleu-every`` epochs);
``--keep last`` keeps the last epoch's, the weights the benchmark's figures come from; ``--keep loss`` the
epoch with the lowest validation loss, which with label smoothing can bottom out epochs before translation
quality does (issue 37). The choice is printed with its reason.

Without recipe flags the command chooses the schedule (peak and warm-up), the batch size in tokens,
dropout and ``--min-freq`` from the model size and the corpus (:mod:`course_lib.recipe`) and prints what
it chose and why; at the default size on the toy corpus that is the course's ``TrainConfig`` recipe.
Any recipe flag given explicitly is kept as given.

Mistakes (missing or malformed files, bad sizes, an unwritable ``--output``) end the command with one
line on standard error and exit status 2, before any training starts.

As a library: the command line is parsed once into a :class:`~course_lib.run_spec.RunSpec` (recipe settings
None where the recipe chooses); :func:`run` trains from one, and :func:`prepare_data` (files, tokens, recipe,
vocabularies, the model's config) is what ``benchmarks/pipelines.py`` builds its course pipelines on.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch.distributed

from . import data, distributed, loading
from .checkpoint import CheckpointError, read_checkpoint, save_checkpoint
from .cli_common import (
    OneLineParser,
    UsageError,
    _budget,
    _non_negative_int,
    _positive_float,
    _positive_int,
    _probability,
    subword_tokenizers,
)
from .devices import PRECISIONS, DeviceUnavailable, describe_device, describe_precision, get_device
from .evaluation import evaluate_translation
from .loading import make_eval_loader, make_train_loader, unknown_rate
from .model import Transformer, TransformerConfig
from .recipe import Recipe, choose_recipe
from .run_spec import RECIPE_FIELDS, RunSpec
from .training import SELECT_BY, BleuCallback, Callback, TrainConfig, choose_epoch, describe_choice, train
from .utils import configure_threads, seed_everything


class RunSpecParser(OneLineParser):
    """The command line's parser: ``parse_args`` returns a :class:`~course_lib.run_spec.RunSpec`.

    The options are parsed once into a fresh ``RunSpec``: argparse sets the fields that were given and leaves
    the others at the dataclass's defaults (the parser's own defaults only show in ``--help``).
    """

    def parse_known_args(self, args=None, namespace=None):
        return super().parse_known_args(args, RunSpec() if namespace is None else namespace)


def build_parser() -> RunSpecParser:
    parser = RunSpecParser(prog="python -m course_lib.train", description=__doc__.splitlines()[0])
    spec = RunSpec()  # the defaults
    src = parser.add_argument_group("data (default: the course's toy corpus)")
    src.add_argument("--train-tsv", help="german<TAB>english training pairs")
    src.add_argument("--valid-tsv", help="validation pairs (default: held out from the training pairs)")
    src.add_argument("--test-tsv", help="test pairs (default: held out from the training pairs)")
    src.add_argument("--src-files", nargs="+", metavar="FILE", help="line-aligned source files: train [valid [test]]")
    src.add_argument("--tgt-files", nargs="+", metavar="FILE", help="line-aligned target files: train [valid [test]]")
    src.add_argument("--src-lang", default=spec.src_lang, help="spaCy language code of the source (default %(default)s)")
    src.add_argument("--tgt-lang", default=spec.tgt_lang, help="spaCy language code of the target (default %(default)s)")
    src.add_argument("--min-freq", type=_positive_int,
                     help="rarer tokens become <unk> (default: the recipe's, 2 on real text with many rare words)")
    src.add_argument("--subword-merges", type=_non_negative_int, default=spec.subword_merges, metavar="N",
                     help="cut words into BPE pieces with N merges per language (needs the 'tokenizers' package; "
                          "0 = whole words, the default)")
    src.add_argument("--max-train-pairs", type=_positive_int, help="use only the first N training pairs (quick tests)")
    src.add_argument("--max-eval-pairs", type=_positive_int, help="use only the first N validation and test pairs")

    run = parser.add_argument_group("run")
    run.add_argument("--output", default=spec.output, help="checkpoint path (default %(default)s)")
    run.add_argument("--time-budget", type=_budget, default=spec.time_budget,
                     help="seconds of training; 0 = no limit (default 120)")
    run.add_argument("--epochs", type=_positive_int, default=spec.epochs, help="most epochs (default %(default)s)")
    run.add_argument("--max-steps", type=_positive_int, help="most optimizer steps")
    run.add_argument("--seed", type=int, default=spec.seed, help="random seed (default %(default)s)")
    run.add_argument("--threads", type=_positive_int, help="torch CPU threads (default: COURSE_NUM_THREADS or 1)")
    run.add_argument("--device", help="cpu, cuda, cuda:1, mps (default: $COURSE_DEVICE, else CUDA, MPS or the CPU)")
    run.add_argument("--precision", choices=PRECISIONS, default=spec.precision,
                     help="auto (default): mixed precision on CUDA (bf16, or fp16 with a gradient scaler on cards "
                          "without bf16), fp32 elsewhere; fp32 turns it off")
    run.add_argument("--resume", metavar="CHECKPOINT", help="continue training from a checkpoint with training state")
    run.add_argument("--weights-only", action="store_true", help="write the final checkpoint without optimizer state")
    run.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    run.add_argument("--keep", choices=SELECT_BY, default=spec.keep,
                     help="which epoch's weights to keep, write and score on test: bleu (default): the highest "
                          "validation BLEU (greedy, lower-cased, as benchmarks/real_data.py scores it); loss: the "
                          "lowest validation loss; last: the last epoch (what the benchmark reports)")
    run.add_argument("--bleu-every", type=_positive_int, default=spec.bleu_every, metavar="N",
                     help="score validation BLEU after epochs N, 2N, ... (default 1: every epoch); --keep bleu "
                          "chooses among those epochs")
    run.add_argument("--beam", type=_positive_int, default=spec.beam,
                     help="also evaluate beam search of this size; 1 = greedy only")
    run.add_argument("--samples", type=_non_negative_int, default=spec.samples,
                     help="sample translations to print (default %(default)s)")
    run.add_argument("--my-parts", metavar="DIR", help="build the model from the parts saved in DIR/my_transformer/ "
                     "by notebooks 02-09 (e.g. notebooks); they have no dropout, so dropout is 0")

    recipe = parser.add_argument_group(
        "recipe (not given: chosen from the model size and the corpus, see course_lib.recipe; "
        "the defaults shown are TrainConfig's and TransformerConfig's)")
    recipe.add_argument("--batch-size", type=_positive_int,
                        help="sentences per batch (default: the recipe's batches of --batch-tokens)")
    recipe.add_argument("--batch-tokens", type=_positive_int, help="target tokens per batch (default: the recipe's)")
    recipe.add_argument("--warmup", type=_positive_int, help="warm-up steps")
    recipe.add_argument("--lr-factor", type=_positive_float,
                        help="schedule multiplier: peak lr = factor * (d_model * warmup)^-0.5")
    recipe.add_argument("--peak-lr", type=_positive_float, help="the schedule's peak learning rate (sets --lr-factor)")
    recipe.add_argument("--lr-decay", choices=["linear", "inverse_sqrt"],
                        help="after the warm-up: straight to 0 at the last planned step, or 1/sqrt(step) "
                             "(default: 1/sqrt(step); linear needs a known length, i.e. --time-budget 0)")
    recipe.add_argument("--label-smoothing", type=_probability, default=spec.label_smoothing)
    recipe.add_argument("--d-model", type=_positive_int, default=spec.d_model)
    recipe.add_argument("--n-heads", type=_positive_int, default=spec.n_heads)
    recipe.add_argument("--d-ff", type=_positive_int, default=spec.d_ff)
    recipe.add_argument("--layers", type=_positive_int, help="encoder and decoder layers (default: the config's)")
    recipe.add_argument("--dropout", type=_probability)
    recipe.add_argument("--tie-embeddings", action=argparse.BooleanOptionalAction,
                        help="the output layer shares the target embedding matrix (default: the recipe's, "
                             "from d_model 128 on)")
    recipe.add_argument("--norm-first", action=argparse.BooleanOptionalAction, default=spec.norm_first,
                        help="pre-norm (--norm-first) or post-norm (--no-norm-first)")
    return parser


def parse_run_spec(argv: Sequence[str] | None = None) -> RunSpec:
    """The :class:`RunSpec` of the command line ``argv`` (None: ``sys.argv[1:]``); mistakes exit with status 2."""
    return build_parser().parse_args(argv)


def given_options(argv: Sequence[str] | None) -> set[str]:
    """The recipe options (field names) written on the command line ``argv``: ``parse_run_spec(argv).given()``."""
    return parse_run_spec(argv).given()


def choose_run_recipe(spec: RunSpec, train_tokens) -> Recipe:
    """The recipe for ``spec``'s model size and ``train_tokens``, keeping every recipe setting ``spec`` gives."""
    overrides = spec.overrides()
    if "lr_factor" in overrides and "peak_lr" in overrides:
        raise UsageError("give --lr-factor or --peak-lr, not both")
    if "batch_size" in overrides and "batch_tokens" in overrides:
        raise UsageError("give --batch-size or --batch-tokens, not both")
    return choose_recipe(spec.d_model, spec.n_layers(), train_tokens, epochs=spec.epochs, max_steps=spec.max_steps,
                         time_budget=spec.time_budget or None, overrides=overrides)


def apply_recipe(spec: RunSpec, given: set[str] | None, train_tokens) -> Recipe:
    """Choose the recipe for ``spec`` and write it into ``spec`` in place (notebook 14 shows this step).

    ``given``: the recipe options given (:func:`given_options`); the spec already knows them, so it must agree.
    """
    if given is not None and set(given) & set(RECIPE_FIELDS) != spec.given():
        raise ValueError(f"given {sorted(given)} disagrees with the spec's recipe settings {sorted(spec.given())}")
    recipe = choose_run_recipe(spec, train_tokens)
    vars(spec).update(vars(spec.with_recipe(recipe)))
    return recipe


def check_output_writable(path: str) -> None:
    """Fail now, not after the first epoch, if the checkpoint cannot be written to ``path``."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"--output {path} is a directory; give a file name such as {target / 'model.pt'}")
    folder = target.parent
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"--output {path}: {existing} is not a directory")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write_test"):
            pass
    except OSError as exc:
        raise UsageError(f"--output {path} is not writable: {exc.strerror or exc}") from None
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(f"--output {path} is not writable (permission denied)")


def learn_subwords(train_tokens, merges: int):
    """(source, target) :class:`~course_lib.subword.SubwordTokenizer` with ``merges`` merges each, from the training pairs."""
    try:
        from .subword import SubwordTokenizer

        return (SubwordTokenizer.train([s for s, _ in train_tokens], merges),
                SubwordTokenizer.train([t for _, t in train_tokens], merges))
    except ImportError as exc:
        raise UsageError(str(exc)) from None


def cut_subwords(spec: RunSpec, tokens: dict, log=print, saved_config: dict | None = None) -> tuple[dict, tuple | None]:
    """Cut the word tokens of every split into BPE pieces if ``spec.subword_merges`` asks for it (or a resumed
    checkpoint was trained on pieces).

    Args:
        spec: the run (``subword_merges``).
        tokens: ``{split: [(source words, target words), ...]}``; the merges are learned from ``"train"``.
        log: where the one-line summary goes.
        saved_config: a resumed checkpoint's ``train_config`` (its merges win over ``spec.subword_merges``).

    Returns:
        ``(tokens, subwords)``: ``tokens`` unchanged and None (whole words), or the same splits as BPE pieces
        and the (source, target) :class:`~course_lib.subword.SubwordTokenizer`.
    """
    subwords = None
    if (saved_config or {}).get("src_subword_merges"):
        subwords = subword_tokenizers(saved_config)
    elif spec.subword_merges:
        subwords = learn_subwords(tokens["train"], spec.subword_merges)
    if subwords is None:
        return tokens, None
    word_unknown = {name: unknown_rate(tokens[name], *data.build_vocabs(tokens["train"], min_freq=2))
                    for name in ("valid", "test")}
    log(f"subwords: {len(subwords[0])}/{len(subwords[1])} BPE merges; with whole words (min_freq 2) "
        + ", ".join(f"{100 * w[0]:.1f}%/{100 * w[1]:.1f}% of {n}" for n, w in word_unknown.items())
        + " would be <unk>")
    return ({name: [(subwords[0].tokenize(s), subwords[1].tokenize(t)) for s, t in pairs]
             for name, pairs in tokens.items()}, subwords)


def load_splits(spec: RunSpec) -> dict[str, list[tuple[str, str]]]:
    """Raw (source, target) pairs for train/valid/test from the run's files (:func:`course_lib.loading.load_splits`)."""
    try:
        return loading.load_splits(
            train_tsv=spec.train_tsv, valid_tsv=spec.valid_tsv, test_tsv=spec.test_tsv, src_files=spec.src_files,
            tgt_files=spec.tgt_files, max_train_pairs=spec.max_train_pairs, max_eval_pairs=spec.max_eval_pairs)
    except loading.SplitsError as exc:
        raise UsageError(str(exc)) from None


@dataclass
class PreparedData:
    """What the data and the recipe make of a :class:`RunSpec` (:func:`prepare_data`)."""

    spec: RunSpec  # the run with every recipe setting filled in (dropout 0 with --my-parts)
    recipe: Recipe  # what the recipe chose, and why
    splits: dict  # {split: [(source line, target line), ...]}, the raw pairs
    tokens: dict  # {split: [(source tokens, target tokens), ...]}: words, or BPE pieces
    subwords: tuple | None  # the (source, target) SubwordTokenizer, or None for whole words
    src_vocab: data.Vocab
    tgt_vocab: data.Vocab
    config: TransformerConfig  # the model's


def prepare_data(spec: RunSpec, log=print, saved: dict | None = None) -> PreparedData:
    """Read and tokenize the run's data, choose its recipe, build the vocabularies and the model's config.

    What ``python -m course_lib.train`` does before it builds the model, and what the real-data benchmark's
    course pipelines train on (``benchmarks/pipelines.py``).

    Args:
        spec: the run as given (recipe settings None where the recipe chooses).
        log: where the subwords line goes.
        saved: a checkpoint being resumed: its vocabularies and subword merges are used.

    Raises:
        UsageError: unreadable files, an unknown language, contradicting recipe flags, ``--dropout`` with
            ``--my-parts``, sizes the model rejects.
    """
    splits = load_splits(spec)
    try:
        tokenizers = data.default_tokenizers(src_lang=spec.src_lang, tgt_lang=spec.tgt_lang)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    tokens = {name: data.tokenize_pairs(pairs, tokenizers) for name, pairs in splits.items()}
    tokens, subwords = cut_subwords(spec, tokens, log, (saved or {}).get("train_config") or {})
    recipe = choose_run_recipe(spec, tokens["train"])
    given_dropout, spec = spec.dropout, spec.with_recipe(recipe)
    src_vocab, tgt_vocab = data.build_vocabs(tokens["train"], min_freq=spec.min_freq)
    if saved is not None:  # the vocabularies must be the ones the checkpoint was trained with
        src_vocab, tgt_vocab = (data.Vocab.from_dict({"itos": saved[k]}) for k in ("src_itos", "tgt_itos"))
    if spec.my_parts:  # the saved parts have no dropout
        if given_dropout is not None and given_dropout > 0:
            raise UsageError(f"--my-parts builds the model from your saved parts, which have no dropout: "
                             f"drop --dropout {given_dropout} (or pass --dropout 0)")
        spec = replace(spec, dropout=0.0)
    try:
        config = spec.model_config(len(src_vocab), len(tgt_vocab))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return PreparedData(spec, recipe, splits, tokens, subwords, src_vocab, tgt_vocab, config)


class PrintEpochs(Callback):
    """One summary line per epoch on stdout (the command line's log)."""

    def on_epoch_end(self, history):
        h = history[-1]
        valid = f"valid loss {h['valid_loss']:.3f} ppl {h['valid_ppl']:.2f}" if "valid_loss" in h else ""
        if "valid_bleu_lc" in h:
            valid += f"  valid BLEU {h['valid_bleu_lc']:.2f} lower-cased"
        print(f"epoch {h['epoch']:3d}  step {h['step']:6d}  {h['seconds']:6.1f}s  "
              f"train loss {h['train_loss']:.3f}  {valid}", flush=True)


def model_config(spec: RunSpec, src_vocab, tgt_vocab) -> TransformerConfig:
    """``spec.model_config`` for these vocabularies (after the recipe is applied)."""
    return spec.model_config(len(src_vocab), len(tgt_vocab))


def build_model(spec: RunSpec, config: TransformerConfig, log) -> tuple[Transformer, dict[str, str]]:
    """The course model, or with ``--my-parts`` the same model built from the student's saved parts.

    Returns:
        ``(model, sources)``: ``sources`` is ``{"my_transformer/<module>.py": text}`` of the parts the model was
        built from (empty without ``--my-parts``); the checkpoint stores it and its fingerprints.
    """
    if not spec.my_parts:
        return Transformer(config), {}
    from .checkpoint import part_sources
    from .student.assembly import build_transformer
    from .student.contracts import USED_BY, PartContractError
    from .student.ownership import ownership_table
    from .student.package import load_my_parts

    if not (Path(spec.my_parts) / "my_transformer").is_dir():
        raise UsageError(f"--my-parts {spec.my_parts}: no my_transformer/ folder there (notebooks 02-09 save "
                         f"your parts in notebooks/my_transformer/)")
    try:
        parts = load_my_parts(spec.my_parts, model="transformer")  # not notebook 15's GPT block
        sources = part_sources(parts)  # read now: a file edited while the model trains is not the one trained
        model = build_transformer(config, parts)
    except PartContractError as exc:
        raise UsageError(f"--my-parts {spec.my_parts}: {exc}") from None
    log(f"your parts ({len(parts)} of {len(USED_BY['transformer'])} saved):\n{ownership_table(parts)}")
    return model, sources


def train_config(spec: RunSpec) -> TrainConfig:
    """``spec.train_config()`` (after the recipe is applied)."""
    return spec.train_config()


def report(model, test_tokens, src_vocab, tgt_vocab, beam: int, samples: int, references=None) -> dict:
    """Print and return test BLEU / exact match (greedy, and beam search if ``beam > 1``) and sample translations.

    Args:
        model: the trained model.
        test_tokens: tokenized (source, target) test pairs.
        src_vocab, tgt_vocab: the model's vocabularies.
        beam: beam size for the second evaluation (1: greedy only).
        samples: sample translations to print.
        references: the raw reference sentences (the test file's lines), scored as they are; None: the
            detokenized target tokens.
    """
    sources = [s for s, _ in test_tokens]
    references = [t for _, t in test_tokens] if references is None else list(references)
    metrics = {}
    for size in [1] + ([beam] if beam > 1 else []):
        scores = evaluate_translation(model, sources, references, src_vocab, tgt_vocab, beam_size=size)
        name = "greedy" if size == 1 else f"beam {size}"
        print(f"test {name:7s}: BLEU {scores.bleu:.2f} cased, {scores.bleu_lc:.2f} lower-cased  exact match "
              f"{100 * scores.exact_match:.1f}%  <unk> {100 * scores.unk_share:.1f}% of output words  "
              f"({len(sources)} sentences decoded in {scores.seconds:.2f}s)  signature {scores.signature}")
        key = "greedy" if size == 1 else "beam"
        metrics.update({f"test_bleu_{key}": scores.bleu, f"test_bleu_lc_{key}": scores.bleu_lc,
                        f"test_exact_match_{key}": scores.exact_match, f"test_unk_share_{key}": scores.unk_share})
        if size == 1:
            metrics["bleu_signature"] = scores.signature
            shown = scores
    for source, hypothesis, reference in list(zip(shown.sources, shown.hypotheses, shown.references, strict=True))[
        :samples
    ]:
        mark = "=" if hypothesis == reference else "x"
        print(f"  [{mark}] {source}\n      -> {hypothesis}\n   ref: {reference}")
    return metrics


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; mistakes in the input end it with one line on stderr and exit status 2."""
    spec = parse_run_spec(argv)
    try:
        return run(spec)
    except (UsageError, CheckpointError, data.CorpusFormatError, FileNotFoundError, IsADirectoryError,
            PermissionError, DeviceUnavailable, distributed.TooFewGpus) as exc:
        print(f"python -m course_lib.train: error: {exc}", file=sys.stderr)
        return 2


def run(spec: RunSpec) -> int:
    """Train, score and save the model ``spec`` describes, printing what the command line prints."""
    device = distributed.init_distributed() or get_device(spec.device)
    spec = replace(spec, device=str(device))
    main_process = distributed.is_main_process()
    log = print if main_process else (lambda *a, **k: None)
    configure_threads(spec.threads)
    log(f"device: {describe_device(device)}, {describe_precision(device, spec.precision)}")
    if distributed.is_distributed():
        log(f"distributed: world size {distributed.get_world_size()}, backend {torch.distributed.get_backend()}, "
            f"device {device}")
    try:
        if main_process:
            check_output_writable(spec.output)
        saved = read_checkpoint(spec.resume) if spec.resume else None  # fail early on a missing or corrupt one
        prepared = prepare_data(spec, log, saved)
        spec, config, tokens = prepared.spec, prepared.config, prepared.tokens
        src_vocab, tgt_vocab = prepared.src_vocab, prepared.tgt_vocab
        datasets = {name: data.make_dataset(pairs, src_vocab, tgt_vocab, max_len=config.max_len - 2)
                    for name, pairs in tokens.items() if name != "test"}
        log(f"data: {len(datasets['train'])} train / {len(datasets['valid'])} valid / {len(tokens['test'])} test "
            f"pairs; vocab {len(src_vocab)} {spec.src_lang} / {len(tgt_vocab)} {spec.tgt_lang}")
        for name in ("valid", "test"):
            src_unk, tgt_unk = unknown_rate(tokens[name], src_vocab, tgt_vocab)
            log(f"unknown tokens in {name}: {100 * src_unk:.1f}% of {spec.src_lang}, {100 * tgt_unk:.1f}% of "
                f"{spec.tgt_lang} (become <unk>)")
        log(f"recipe (d_model {spec.d_model}, {config.n_encoder_layers}+{config.n_decoder_layers} layers; "
            f"'flag' = given on the command line):\n{prepared.recipe.describe()}")
        seed_everything(spec.seed)
        model, part_files = build_model(spec, config, log)
        log(f"model: {model.num_parameters():,} parameters, {config}")
        settings = spec.train_config()
        batches = (f"; batches of {spec.batch_tokens} target tokens (batch_size unused)" if spec.batch_tokens
                   else f"; batches of {spec.batch_size} sentences")
        log(f"training: {settings}{batches}")
        start = time.perf_counter()
        valid_bleu = BleuCallback(model, [s for s, _ in tokens["valid"]], [t for _, t in prepared.splits["valid"]],
                                  src_vocab, tgt_vocab, every=spec.bleu_every)  # every process: they keep alike
        history = train(model, make_train_loader(datasets["train"], spec.batch_size, spec.seed, spec.batch_tokens),
                        make_eval_loader(datasets["valid"]), settings,
                        [valid_bleu, PrintEpochs()] if main_process else [valid_bleu],
                        src_vocab, tgt_vocab, resume_from=spec.resume)
        log(f"trained {history[-1]['step'] if history else 0} steps in {history[-1]['seconds'] if history else 0:.1f}s "
            f"of training ({time.perf_counter() - start:.1f}s wall clock with validation)")
        log(f"checkpoint (--keep {spec.keep}): {describe_choice(history, spec.keep)}")
        if distributed.is_distributed():
            log(f"replicas identical after training: {distributed.replicas_identical(model)}")
        if main_process:
            references = [target for _, target in prepared.splits["test"]]  # the raw lines, as sacreBLEU expects
            metrics = report(model, tokens["test"], src_vocab, tgt_vocab, spec.beam, spec.samples, references)
            metrics.update(train_seconds=history[-1]["seconds"] if history else 0.0,
                           steps=history[-1]["step"] if history else 0, keep=spec.keep,
                           kept_epoch=kept_epoch(history, spec.keep))
            final_save(prepared, model, settings, metrics, part_files)
            log(f"checkpoint written: {spec.output}")
    finally:
        distributed.cleanup_distributed()
    return 0


def kept_epoch(history: list[dict], keep: str) -> int | None:
    """The epoch whose weights ``--keep`` left in the model (the last one when no epoch was scored; None: none ran)."""
    chosen = choose_epoch(history, keep)
    return chosen["epoch"] if chosen else (history[-1]["epoch"] if history else None)


def final_save(prepared: PreparedData, model, settings: TrainConfig, metrics: dict,
               part_files: dict[str, str] | None = None) -> None:
    """Re-write the checkpoint with the test metrics (and without optimizer state if ``--weights-only``).

    ``part_files`` (``--my-parts``): the parts' source, stored with a fingerprint of each file, so that loading
    refuses parts edited since (:func:`course_lib.checkpoint.load_checkpoint`)."""
    spec = prepared.spec
    state = None
    if not spec.weights_only and Path(spec.output).is_file():
        state = read_checkpoint(spec.output).get("training_state")
    data_config = {"src_lang": spec.src_lang, "tgt_lang": spec.tgt_lang,
                   "batching": "tokens" if spec.batch_tokens else "sentences"}
    if spec.my_parts:  # loading it needs the same parts: translate --my-parts DIR
        from .checkpoint import fingerprints

        data_config.update(my_parts=str(spec.my_parts), my_parts_source=dict(part_files or {}),
                           my_parts_sha256=fingerprints(part_files or {}))
    if prepared.subwords is not None:
        data_config.update(src_subword_merges=[list(m) for m in prepared.subwords[0].merges],
                           tgt_subword_merges=[list(m) for m in prepared.subwords[1].merges])
    save_checkpoint(spec.output, model, prepared.src_vocab, prepared.tgt_vocab, training_state=state,
                    train_config={**settings.to_dict(), **data_config}, metrics=metrics)


if __name__ == "__main__":
    sys.exit(main())
