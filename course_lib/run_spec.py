"""One training run, written down: the data files, the model size, the recipe, training, decoding and output.

``python -m course_lib.train`` parses its command line into a :class:`RunSpec` (one parse: the parser fills
the fields that were given, the others keep the defaults below), and the benchmarks build one directly::

    spec = RunSpec(src_files=[...], tgt_files=[...], d_model=256, n_heads=8, d_ff=512, layers=3, epochs=10)

The recipe settings (schedule, batching, dropout, ``min_freq``, tying) default to None, which means "the
recipe chooses" (:func:`course_lib.recipe.choose_recipe`); a value there was given and is kept as given, so
:meth:`RunSpec.overrides` knows what was given without parsing anything again. :meth:`RunSpec.with_recipe`
returns the spec with every recipe setting filled in, from which :meth:`RunSpec.model_config` and
:meth:`RunSpec.train_config` build the model's and the training loop's configurations.

Field names are the command line's option names with ``_`` for ``-`` (``--d-model`` is ``d_model``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from .model import TransformerConfig
from .recipe import Recipe
from .training import TrainConfig

DEFAULT_OUTPUT = "runs/toy_de_en.pt"
# The recipe's settings: RunSpec field -> choose_recipe override key (and Recipe attribute).
RECIPE_FIELDS = {"warmup": "warmup_steps", "lr_factor": "lr_factor", "peak_lr": "peak_lr", "lr_decay": "lr_decay",
                 "batch_size": "batch_size", "batch_tokens": "batch_tokens", "dropout": "dropout",
                 "min_freq": "min_freq", "tie_embeddings": "tie_embeddings"}

_MODEL, _TRAIN = TransformerConfig(), TrainConfig()


@dataclass
class RunSpec:
    """Everything ``python -m course_lib.train`` needs to train, score and save one model."""

    # data (no files: the course's toy corpus)
    train_tsv: str | None = None  # german<TAB>english training pairs
    valid_tsv: str | None = None  # validation pairs (None: held out from the training pairs)
    test_tsv: str | None = None  # test pairs (None: held out from the training pairs)
    src_files: list[str] | None = None  # line-aligned source files: train [valid [test]]
    tgt_files: list[str] | None = None  # line-aligned target files: train [valid [test]]
    src_lang: str = "de"  # spaCy language code of the source
    tgt_lang: str = "en"  # spaCy language code of the target
    subword_merges: int = 0  # BPE merges per language (0: whole words)
    max_train_pairs: int | None = None  # only the first N training pairs (quick tests)
    max_eval_pairs: int | None = None  # only the first N validation and test pairs

    # model size
    d_model: int = _MODEL.d_model  # width of every token vector
    n_heads: int = _MODEL.n_heads  # attention heads
    d_ff: int = _MODEL.d_ff  # feed-forward hidden size
    layers: int | None = None  # encoder and decoder layers (None: TransformerConfig's)
    norm_first: bool = _MODEL.norm_first  # pre-norm (True) or post-norm (False)
    my_parts: str | None = None  # build the model from the student's parts saved in DIR/my_transformer/

    # recipe: None = chosen from the model size and the corpus (course_lib.recipe); a value was given
    warmup: int | None = None  # warm-up steps
    lr_factor: float | None = None  # schedule multiplier: peak lr = factor * (d_model * warmup)^-0.5
    peak_lr: float | None = None  # the schedule's peak learning rate (sets lr_factor)
    lr_decay: str | None = None  # after the warm-up: "inverse_sqrt" or "linear"
    batch_size: int | None = None  # sentences per batch (when batch_tokens is None)
    batch_tokens: int | None = None  # target tokens per batch
    dropout: float | None = None  # dropout of the model
    min_freq: int | None = None  # rarer training tokens become <unk>
    tie_embeddings: bool | None = None  # the output layer shares the target embedding matrix
    label_smoothing: float = _TRAIN.label_smoothing  # not chosen by the recipe

    # training
    time_budget: float = 120.0  # seconds of training; 0 = no limit
    epochs: int = _TRAIN.epochs  # most epochs
    max_steps: int | None = None  # most optimizer steps
    seed: int = _TRAIN.seed  # random seed
    threads: int | None = None  # torch CPU threads (None: COURSE_NUM_THREADS or 1)
    device: str | None = None  # cpu, cuda, cuda:1, mps (None: $COURSE_DEVICE, else CUDA, MPS or the CPU)
    precision: str = _TRAIN.precision  # auto, fp32, bf16, fp16
    resume: str | None = None  # continue from this checkpoint's training state
    keep: str = "bleu"  # which epoch's weights to keep: bleu, loss or last (course_lib.training.SELECT_BY)
    bleu_every: int = 1  # score validation BLEU after epochs N, 2N, ...
    progress: bool = True  # show a progress bar

    # decoding (the test split, after training)
    beam: int = 4  # also evaluate beam search of this size; 1 = greedy only
    samples: int = 5  # sample translations to print

    # output
    output: str = DEFAULT_OUTPUT  # checkpoint path
    weights_only: bool = False  # write the final checkpoint without optimizer state

    def overrides(self) -> dict:
        """The recipe settings that were given, as :func:`course_lib.recipe.choose_recipe` overrides."""
        return {key: getattr(self, name) for name, key in RECIPE_FIELDS.items() if getattr(self, name) is not None}

    def given(self) -> set[str]:
        """The names of the recipe fields that were given (the others the recipe chooses)."""
        return {name for name in RECIPE_FIELDS if getattr(self, name) is not None}

    def n_layers(self) -> int:
        """Layers of the deeper stack: ``layers``, or TransformerConfig's when not given."""
        return self.layers or max(_MODEL.n_encoder_layers, _MODEL.n_decoder_layers)

    def with_recipe(self, recipe: Recipe) -> RunSpec:
        """A copy with every recipe setting taken from ``recipe`` (which keeps the given ones)."""
        return replace(self, **{name: getattr(recipe, key) for name, key in RECIPE_FIELDS.items()})

    def model_config(self, src_vocab_size: int, tgt_vocab_size: int) -> TransformerConfig:
        """The model's configuration (after :meth:`with_recipe`: dropout and tying are the recipe's)."""
        layers = {} if self.layers is None else {"n_encoder_layers": self.layers, "n_decoder_layers": self.layers}
        return TransformerConfig(
            src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, d_model=self.d_model, n_heads=self.n_heads,
            d_ff=self.d_ff, dropout=self.dropout, norm_first=self.norm_first, tie_embeddings=self.tie_embeddings,
            **layers,
        )

    def train_config(self) -> TrainConfig:
        """The training loop's configuration (after :meth:`with_recipe`)."""
        return TrainConfig(
            epochs=self.epochs, max_steps=self.max_steps, time_budget=self.time_budget or None,
            warmup_steps=self.warmup, lr_factor=self.lr_factor, lr_decay=self.lr_decay,
            label_smoothing=self.label_smoothing, batch_size=self.batch_size, batch_tokens=self.batch_tokens,
            seed=self.seed, num_threads=self.threads, device=self.device, precision=self.precision,
            best_checkpoint=self.output, select_by=self.keep, progress=self.progress,
        )


FIELDS = tuple(f.name for f in fields(RunSpec))
