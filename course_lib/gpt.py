"""A decoder-only Transformer language model (a small GPT) made of the translator's parts (notebook 15).

    ids -> TokenEmbedding + positions -> n_layers x DecoderOnlyLayer -> LayerNorm -> logits over the vocabulary

What changes from the translator (:class:`course_lib.model.Transformer`): there is no encoder, so no memory and
no cross-attention; every self-attention is causal; and the loss is on every position (the logits at
position t predict token t + 1 of the same sentence). ``GPT(config)`` is built from course_lib's parts,
``GPT(config, parts)`` from supplied ones (a student's own, checked by
:func:`course_lib.student.assembly.build_gpt`), through the same :class:`~course_lib.builders.ModelParts`
as the translator.

Also here: the language-model loss and perplexity, the count baselines (unigram and bigram with add-k
smoothing), a short training loop (Adam with the warm-up schedule of notebook 10, no label smoothing), and
generation: greedy, temperature and top-k sampling, with a key/value cache (course_lib's layers) or a cache of
the self-attention inputs (supplied parts), checked against the whole-prefix pass.

Checked in ``tests/test_gpt.py``: a DecoderOnlyLayer equals ``nn.TransformerEncoderLayer`` and the course
``EncoderLayer`` given the same causal mask (copied weights, both norm placements), the model is causal,
cached and uncached generation give the same tokens, and the count baselines against counts by hand.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from .attention import KeyValueCache, MultiHeadAttention
from .builders import ModelParts
from .data import pad_sequences
from .decoding import cache_self_attention_inputs
from .layers import DecoderOnlyLayer
from .model import init_weights
from .schedule import make_noam_scheduler, make_optimizer
from .tokenization import BOS_ID, EOS_ID, PAD_ID, Vocab


@dataclass
class GPTConfig:
    """Every size and switch of the language model; the defaults train on a 2-core CPU in about a minute."""

    vocab_size: int = 1000  # vocabulary size, specials included
    d_model: int = 64  # width of every token vector
    n_heads: int = 4  # attention heads per block; d_head = d_model // n_heads
    n_layers: int = 2  # number of decoder-only blocks
    d_ff: int = 256  # hidden size of the feed-forward block
    dropout: float = 0.0  # dropout on residual branches, attention weights and FFN hidden units
    max_len: int = 128  # longest sequence (tokens incl. <bos>/<eos>) the positions cover
    pad_id: int = 0  # id of <pad>
    norm_first: bool = True  # True: pre-norm, as GPT-2 and later; False: post-norm (the 2017 paper)
    final_norm: bool | None = None  # LayerNorm after the last block; None means "only with pre-norm"
    tie_embeddings: bool = True  # the output layer reuses the embedding matrix (GPT-2 does)
    positional: str = "sinusoidal"  # "sinusoidal", "learned" or "rotary", as TransformerConfig

    def __post_init__(self):
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"d_model must be divisible by n_heads, got d_model={self.d_model}, n_heads={self.n_heads}")
        if self.positional not in ("sinusoidal", "learned", "rotary"):
            raise ValueError(f"positional must be 'sinusoidal', 'learned' or 'rotary', got {self.positional!r}")
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def use_final_norm(self) -> bool:
        return self.norm_first if self.final_norm is None else self.final_norm

    @property
    def tgt_vocab_size(self) -> int:
        """The vocabulary the output layer predicts (the name :class:`~course_lib.builders.ModelParts` reads)."""
        return self.vocab_size

    def to_dict(self) -> dict:
        return asdict(self)


class GPT(nn.Module):
    """Decoder-only Transformer language model.

    Args:
        config: a :class:`GPTConfig`.
        parts: optional ``{part name: function or class}`` instead of course_lib's own (names in
            :data:`course_lib.builders.PART_NAMES`; ``encoder_layer`` and ``decoder_layer`` are not used:
            the blocks are ``decoder_only_layer``). Supplied parts have no dropout: ``config.dropout`` must be 0.

    Attributes:
        parts: the supplied parts (empty for the course's own model).
    """

    def __init__(self, config: GPTConfig, parts: dict | None = None):
        super().__init__()
        builder = ModelParts(config, parts)
        self.config = config
        self.parts = builder.parts
        self._padding_mask, self._causal_mask = builder.padding_mask, builder.causal_mask
        self.embedding = builder.token_embedding(config.vocab_size)
        self.positions = builder.positions()
        self.layers = nn.ModuleList(builder.decoder_only_layer(self.positions) for _ in range(config.n_layers))
        self.norm = builder.final_norm()
        self.generator = nn.Linear(config.d_model, config.vocab_size)  # hidden -> logits over the vocabulary
        init_weights(self)
        if config.tie_embeddings:
            self.generator.weight = builder.tied_matrix(self.embedding)
        builder.watch_attention(self)

    def num_parameters(self) -> int:
        """Number of trainable parameters (a tied matrix counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def mask(self, ids: torch.Tensor) -> torch.Tensor:
        """Padding AND causal mask ``(batch, 1, seq, seq)``, made with the model's (possibly supplied) mask parts."""
        causal = self._causal_mask(ids.size(1)).to(ids.device)  # (seq, seq)
        return self._padding_mask(ids, self.config.pad_id) & causal  # (batch, 1, seq, seq)

    def forward(self, ids: torch.Tensor, cache: list[KeyValueCache] | None = None) -> torch.Tensor:
        """Next-token logits for every position.

        Args:
            ids: token ids ``(batch, seq)``, starting with ``<bos>``.
            cache: one :class:`KeyValueCache` per layer when generating one token at a time (course_lib's
                layers only): ``ids`` then holds only the newest tokens, at the positions after the cached ones.

        Returns:
            Logits ``(batch, seq, vocab_size)``; position t predicts token t + 1.
        """
        check_ids(ids, self.config)
        start = 0 if cache is None else cache[0].length  # position of the first token of ids
        if start + ids.size(1) > self.config.max_len:
            raise ValueError(f"a sequence of {start + ids.size(1)} tokens is longer than max_len={self.config.max_len}")
        if cache is None:
            mask = self.mask(ids)  # (batch, 1, seq, seq)
        elif ids.size(1) > 1:  # several new tokens (a prompt): causal among them, every cached key earlier
            mask = self._causal_mask(start + ids.size(1)).to(ids.device)[start:]  # (seq, start + seq)
        else:
            mask = None  # one new token: every key is earlier
        x = self.positions(self.embedding(ids), start)  # (batch, seq, d_model)
        for i, layer in enumerate(self.layers):
            x = layer(x, mask) if cache is None else layer(x, mask, cache=cache[i])
        return self.generator(self.norm(x))  # (batch, seq, vocab_size)


def check_ids(ids: torch.Tensor, config: GPTConfig) -> None:
    """Raise a clear error unless ``ids`` is a ``(batch, seq)`` integer tensor of ids below ``config.vocab_size``."""
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.is_floating_point():
        shape = tuple(ids.shape) if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise ValueError(f"ids must be an integer tensor of shape (batch, seq), got {shape}")
    if ids.numel() and (ids.min() < 0 or ids.max() >= config.vocab_size):
        raise ValueError(f"ids must lie in [0, {config.vocab_size}), got values from {int(ids.min())} to {int(ids.max())}")


# ---------------------------------------------------------------------------------------------------- data


def encode_sentences(token_lists: Sequence[Sequence[str]], vocab: Vocab) -> list[torch.Tensor]:
    """``<bos> w_1 ... w_n <eos>`` as a 1-d id tensor for every tokenized sentence."""
    return [torch.tensor(vocab.encode(tokens, add_bos=True, add_eos=True)) for tokens in token_lists]


def make_batches(sequences: Sequence[torch.Tensor], batch_size: int, seed: int | None = None) -> list[torch.Tensor]:
    """Padded ``(batch, seq)`` batches of similar lengths; shuffled (batch order) when ``seed`` is given.

    Sentences are sorted by length (then by position, for a fixed order) and cut into batches, so little padding
    is needed; with ``seed`` the order of the batches is shuffled, a new order for each seed.
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = sorted(range(len(sequences)), key=lambda i: (len(sequences[i]), i))
    groups = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if seed is not None:
        permutation = torch.randperm(len(groups), generator=torch.Generator().manual_seed(seed)).tolist()
        groups = [groups[i] for i in permutation]
    return [pad_sequences([sequences[i] for i in group], PAD_ID) for group in groups]  # (batch, seq) each


# ---------------------------------------------------------------------------------------------------- the loss


def language_model_loss(logits: torch.Tensor, ids: torch.Tensor, pad_id: int = PAD_ID,
                        reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of every next token: the logits at position t are scored against ``ids[:, t + 1]``.

    Args:
        logits: ``(batch, seq, vocab)`` from ``model(ids)``.
        ids: the same ``(batch, seq)`` ids the model read.
        pad_id: targets equal to this are not scored.
        reduction: "mean" (per scored token) or "sum".

    Returns:
        The loss (a scalar).
    """
    if logits.dim() != 3 or logits.shape[:2] != ids.shape:
        raise ValueError(f"logits must be (batch, seq, vocab) with (batch, seq) = ids.shape {tuple(ids.shape)}, "
                         f"got {tuple(logits.shape)}")
    predictions = logits[:, :-1]  # (batch, seq - 1, vocab): every position but the last predicts the next token
    targets = ids[:, 1:]  # (batch, seq - 1): the token after each position
    return F.cross_entropy(predictions.flatten(0, 1), targets.flatten(), ignore_index=pad_id, reduction=reduction)


@torch.no_grad()
def perplexity(model: nn.Module, batches: Sequence[torch.Tensor], pad_id: int = PAD_ID) -> float:
    """exp(mean next-token cross-entropy) over every scored token of ``batches`` (``<eos>`` included)."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for ids in batches:
        total += language_model_loss(model(ids), ids, pad_id, reduction="sum").item()
        count += int((ids[:, 1:] != pad_id).sum())
    model.train(was_training)
    return math.exp(total / count)


# ---------------------------------------------------------------------------------------------------- baselines


class NgramModel:
    """Count-based unigram (n=1) or bigram (n=2) model with add-k smoothing over the whole vocabulary.

    P(w | prev) = (count(prev, w) + k) / (count(prev) + k * V), where V counts every word the model may
    predict (the vocabulary without ``<pad>`` and ``<bos>``). Counted on sentences ``<bos> w_1 ... w_n <eos>``,
    scored like the Transformer: every token after ``<bos>``, ``<eos>`` included.

    Args:
        sequences: training sentences as id tensors (from :func:`encode_sentences`).
        vocab_size: the vocabulary size, specials included.
        n: 1 (unigram) or 2 (bigram).
        k: the add-k smoothing constant (> 0).
    """

    def __init__(self, sequences: Sequence[torch.Tensor], vocab_size: int, n: int = 2, k: float = 1.0):
        if n not in (1, 2):
            raise ValueError(f"n must be 1 or 2, got {n}")
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        self.n, self.k, self.vocab_size = n, k, vocab_size
        self.outcomes = vocab_size - 2  # <pad> and <bos> are never predicted
        self.counts: Counter = Counter()
        self.context_counts: Counter = Counter()
        for ids in sequences:
            tokens = ids.tolist()
            for prev, word in pairwise(tokens):  # each token after the one before it
                context = prev if n == 2 else None
                self.counts[context, word] += 1
                self.context_counts[context] += 1

    def log_prob(self, prev: int, word: int) -> float:
        """log P(word | prev) (prev is ignored by a unigram model)."""
        context = prev if self.n == 2 else None
        numerator = self.counts[context, word] + self.k
        return math.log(numerator / (self.context_counts[context] + self.k * self.outcomes))

    def perplexity(self, sequences: Sequence[torch.Tensor]) -> float:
        """exp(mean -log P) over every token after ``<bos>`` of ``sequences``."""
        total, count = 0.0, 0
        for ids in sequences:
            tokens = ids.tolist()
            for prev, word in pairwise(tokens):  # each token after the one before it
                total -= self.log_prob(prev, word)
                count += 1
        return math.exp(total / count)


def best_smoothing(train: Sequence[torch.Tensor], valid: Sequence[torch.Tensor], vocab_size: int, n: int,
                   grid: Sequence[float] = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)) -> tuple[float, float]:
    """The add-k constant with the lowest validation perplexity: ``(k, validation perplexity)``."""
    scores = {k: NgramModel(train, vocab_size, n, k).perplexity(valid) for k in grid}
    k = min(scores, key=scores.get)
    return k, scores[k]


# ---------------------------------------------------------------------------------------------------- training


def train_language_model(model: nn.Module, train_batches: Sequence[torch.Tensor],
                         valid_batches: Sequence[torch.Tensor], steps: int, warmup: int = 100, lr_factor: float = 1.0,
                         eval_every: int = 100, log: Callable[[str], None] | None = print) -> list[dict]:
    """Train with next-token cross-entropy: Adam, the warm-up schedule of notebook 10, no label smoothing.

    Args:
        model: a :class:`GPT` (or anything mapping ``(batch, seq)`` ids to ``(batch, seq, vocab)`` logits).
        train_batches: padded id batches; cycled through in order (shuffle them when you make them).
        valid_batches: batches for the validation perplexity.
        steps: optimizer steps.
        warmup: warm-up steps of the schedule.
        lr_factor: the schedule's factor (its peak is ``lr_factor * d_model**-0.5 * warmup**-0.5``).
        eval_every: steps between validation measurements (and after the last step).
        log: called with one line per measurement (None: silent).

    Returns:
        One dict per measurement: ``step``, ``train_loss`` (mean since the last one), ``valid_loss``, ``valid_ppl``,
        ``seconds`` (training time so far).
    """
    if steps <= 0 or eval_every <= 0:
        raise ValueError(f"steps and eval_every must be positive, got steps={steps}, eval_every={eval_every}")
    optimizer = make_optimizer(model.parameters())
    scheduler = make_noam_scheduler(optimizer, model.config.d_model, warmup, lr_factor)
    history, losses, seconds = [], [], 0.0
    model.train()
    for step in range(1, steps + 1):
        started = time.perf_counter()
        ids = train_batches[(step - 1) % len(train_batches)]
        loss = language_model_loss(model(ids), ids, model.config.pad_id)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        seconds += time.perf_counter() - started
        losses.append(loss.item())
        if step % eval_every == 0 or step == steps:
            valid_ppl = perplexity(model, valid_batches, model.config.pad_id)
            entry = {"step": step, "train_loss": sum(losses) / len(losses), "valid_loss": math.log(valid_ppl),
                     "valid_ppl": valid_ppl, "seconds": seconds}
            history.append(entry)
            losses = []
            if log is not None:
                log(f"step {step:5d}  train loss {entry['train_loss']:.3f}  valid loss {entry['valid_loss']:.3f}  "
                    f"perplexity {valid_ppl:.2f}")
    model.eval()
    return history


# ---------------------------------------------------------------------------------------------------- generation


def next_token_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None) -> torch.Tensor:
    """The distribution to sample the next token from: logits divided by the temperature, top-k kept, softmax.

    Args:
        logits: ``(batch, vocab)`` next-token logits.
        temperature: > 0; below 1 sharpens the distribution, above 1 flattens it.
        top_k: keep only the k largest logits (ties at the k-th value are kept too); None keeps all.

    Returns:
        Probabilities ``(batch, vocab)``, each row summing to 1, zero outside the top k.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive (greedy decoding is the limit temperature -> 0), got {temperature}")
    scaled = logits / temperature  # (batch, vocab)
    if top_k is not None:
        if not 1 <= top_k <= logits.size(-1):
            raise ValueError(f"top_k must be between 1 and the vocabulary size {logits.size(-1)}, got {top_k}")
        kth = scaled.topk(top_k, dim=-1).values[:, -1:]  # (batch, 1): the k-th largest logit
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))  # at least k finite entries per row
    return scaled.softmax(dim=-1)


class _Stepper:
    """Next-token logits one token at a time: a key/value cache, a cache of self-attention inputs, or none."""

    def __init__(self, model: GPT, mode: str):
        self.model, self.mode, self.length = model, mode, 0
        self.kv = [KeyValueCache() for _ in model.layers] if mode == "keys-values" else None
        self.history: list = [None] * len(model.layers)
        self.positions_run = 0  # token positions pushed through the layers so far

    def step(self, ids: torch.Tensor) -> torch.Tensor:
        """ids ``(batch, t)``: the whole prefix, of which only the last column is new. Returns ``(batch, vocab)``."""
        if self.mode == "none":
            self.positions_run += ids.size(1)
            return self.model(ids)[:, -1]
        new = ids[:, self.length:]  # (batch, new): the tokens not yet run
        self.positions_run += new.size(1)
        if self.mode == "keys-values":
            logits = self.model(new, cache=self.kv)[:, -1]  # (batch, vocab)
        else:
            logits = self._input_cached(ids, new)
        self.length = ids.size(1)
        return logits

    def _input_cached(self, ids: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
        model = self.model
        x = model.positions(model.embedding(new), self.length)  # (batch, new, d_model)
        keys_mask = model._padding_mask(ids, model.config.pad_id)  # (batch, 1, 1, t): every earlier key
        mask = keys_mask & model._causal_mask(ids.size(1)).to(ids.device)[-new.size(1):]  # (batch, 1, new, t)
        for index, layer in enumerate(model.layers):
            handles = cache_self_attention_inputs(layer, self.history, index, model.config.d_model)
            try:
                x = layer(x, mask)  # (batch, new, d_model)
            finally:
                for handle in handles:
                    handle.remove()
        return model.generator(model.norm(x))[:, -1]  # (batch, vocab)


def cache_mode(model: GPT) -> str:
    """"keys-values" when every block and attention is course_lib's, else "inputs" (supplied parts)."""
    course = all(type(layer) is DecoderOnlyLayer and type(layer.self_attn) is MultiHeadAttention
                 for layer in model.layers)
    return "keys-values" if course else "inputs"


@torch.no_grad()
def generate(model: GPT, prompt: torch.Tensor, max_new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, greedy: bool = False, generator: torch.Generator | None = None,
             use_cache: bool = True, eos_id: int = EOS_ID, stats: dict | None = None) -> torch.Tensor:
    """Continue ``prompt`` token by token, sampling each next token (or taking the most likely, ``greedy``).

    ``<pad>`` and ``<bos>`` are never written (their logits are set to -inf before choosing): a ``<pad>`` inside a
    sentence would read as its end, and ``<bos>`` only starts one.

    Args:
        model: a :class:`GPT`; put in eval mode here (and restored after).
        prompt: ``(batch, t)`` ids, starting with ``<bos>``, all rows the same length (no padding).
        max_new_tokens: most tokens to add; a row stops after ``<eos>`` (later positions are ``<pad>``).
        temperature: see :func:`next_token_probs` (ignored when ``greedy``).
        top_k: see :func:`next_token_probs` (ignored when ``greedy``).
        greedy: take the most likely token at every step.
        generator: the random stream for sampling (pass a seeded one for repeatable samples).
        use_cache: run only the newest token through the layers at each step (keys and values of the earlier
            ones cached; with supplied parts, the inputs of their self-attention), else the whole prefix.
        eos_id: the id that ends a sentence.
        stats: if a dict, receives ``positions_run`` (token positions pushed through the layers), ``mode`` and
            ``checked`` (with a cache: whether step 2's logits equalled the whole-prefix pass).

    Returns:
        ``(batch, t + generated)`` ids.
    """
    if prompt.dim() != 2 or prompt.size(1) == 0:
        raise ValueError(f"prompt must be (batch, t) ids with t >= 1, got shape {tuple(prompt.shape)}")
    if (prompt == model.config.pad_id).any():
        raise ValueError("prompt must not contain <pad>: give every row the same length")
    was_training = model.training
    model.eval()
    mode = cache_mode(model) if use_cache else "none"
    stepper, ids = _Stepper(model, mode), prompt
    done = torch.zeros(prompt.size(0), dtype=torch.bool, device=prompt.device)
    checked = None
    try:
        for _ in range(min(max_new_tokens, model.config.max_len - prompt.size(1))):
            logits = stepper.step(ids)  # (batch, vocab)
            if mode != "none" and checked is None and ids.size(1) > prompt.size(1):  # the first step with a cache
                rows = ~done  # finished rows read <pad> keys the whole-prefix pass masks: compare the others
                checked = bool(torch.allclose(logits[rows], model(ids)[rows, -1], atol=1e-4, rtol=1e-4))
                if not checked:
                    raise RuntimeError("cached and whole-prefix logits differ: generate with use_cache=False")
            logits[:, [model.config.pad_id, BOS_ID]] = float("-inf")  # never written: <pad> ends rows, <bos> starts them
            if greedy:
                token = logits.argmax(dim=-1)  # (batch,)
            else:
                token = torch.multinomial(next_token_probs(logits, temperature, top_k), 1,
                                          generator=generator).squeeze(1)  # (batch,)
            token = token.masked_fill(done, model.config.pad_id)
            ids = torch.cat([ids, token[:, None]], dim=1)  # (batch, t + 1)
            done |= token == eos_id
            if done.all():
                break
    finally:
        model.train(was_training)
    if stats is not None:
        stats.update(positions_run=stepper.positions_run, mode=mode, checked=checked)
    return ids


def decode_ids(ids: torch.Tensor, vocab: Vocab) -> list[str]:
    """Each row of ``ids`` as text: the words after ``<bos>`` up to ``<eos>`` (specials dropped)."""
    texts = []
    for row in ids.tolist():
        words = []
        for token in row[1:]:
            if token in (EOS_ID, PAD_ID):
                break
            words.append(vocab.itos[token])
        texts.append(" ".join(words))
    return texts
