"""Turning a trained Transformer into translations: batched greedy decoding and beam search.

Both decoders encode the source once and then extend every sequence of the batch by one token
per step until each has produced ``<eos>`` (or ``max_len`` tokens). A sequence that has finished
is extended with ``<pad>`` only, so a batch keeps one rectangular tensor.

Each step needs the next-token logits of the newest position. The plain way re-runs
``model.decode`` over the whole prefix (``O(length^2)`` work per sentence). :class:`CachedDecoder`
instead keeps every decoder layer's self-attention keys/values and the cross-attention
keys/values of the memory, and runs only the newest position through the model's own decoder with those
caches handed to its attentions, so it computes the same numbers with the same code. A model built with a student's parts
(``Transformer(config, parts)``) decodes with :class:`InputCachedDecoder`, which caches the inputs of
each self-attention instead, so the student's own modules run unchanged. ``tests/test_decoding.py`` checks that
cached and uncached decoding give identical tokens (post-norm and pre-norm), that batched greedy
equals one-sentence-at-a-time greedy, that beam search with ``beam_size=1`` equals greedy, and
that beam search finds a higher-probability output than greedy on a model built to fool greedy.

Beam search keeps ``beam_size`` hypotheses per sentence, ranked by their summed log-probability.
A finished hypothesis stays in its beam (extended by ``<pad>`` at no cost), so the search stops
exactly when the ``beam_size`` best hypotheses have all ended. The returned hypothesis is the
beam member with the best GNMT length-normalised score ``log p(y) / ((5 + |y|) / 6)^alpha``
(Wu et al. 2016; ``alpha = 0`` means no normalisation).

Translating many sentences is fastest in length-sorted batches of 64-128 (see
:func:`translate_sentences`): padding stays short and the per-step overhead is shared. Measured once on
the course's idle build machine, 1,000 toy test sentences, one CPU thread: 0.34 s in batches of 96
with the cache (about 5x slower without it), 1 s in one batch of 1,000, 6 s one sentence at a time.
Absolute times depend on the machine and its load; notebook 11 measures the ratios on yours.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import torch
from torch import nn

from .attention import KeyValueCache, MultiHeadAttention
from .devices import model_device, to_model_device
from .layers import DecoderLayer
from .masks import padding_mask
from .model import Transformer, record_attention
from .tokenization import BOS_ID, EOS_ID, PAD_ID, Vocab, detokenize


def _unwrap(model: nn.Module) -> nn.Module:
    """The model inside a DistributedDataParallel (or similar) wrapper."""
    return getattr(model, "module", model)


def output_limits(model: nn.Module, src: torch.Tensor, max_len: int | None, pad_id: int = PAD_ID) -> torch.Tensor:
    """Most tokens each sentence may generate, ``(batch,)``.

    ``max_len`` if given, else ``1.5 * source length + 10`` per sentence (so a sentence gets the
    same limit alone or in any batch); never more than the model's position table (``config.max_len``).
    """
    table = getattr(getattr(model, "config", None), "max_len", 10_000)
    if max_len is not None:
        return torch.full((src.size(0),), min(max_len, table), dtype=torch.long, device=src.device)
    src_lengths = (src != pad_id).sum(dim=1)  # (batch,)
    return (src_lengths * 3 // 2 + 10).clamp(max=table)


class UncachedStepper:
    """Next-token logits by re-running ``model.decode`` over the whole prefix (works for any model
    with ``decode(tgt, memory, src)``)."""

    def __init__(self, model: nn.Module, memory: torch.Tensor, src: torch.Tensor):
        self.model, self.memory, self.src = model, memory, src

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens ``(batch, t)`` (starting with ``<bos>``) -> logits for position t+1 ``(batch, vocab)``."""
        return self.model.decode(tokens, self.memory, self.src)[:, -1]

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows ``index`` ``(new_batch,)`` (beam search moves hypotheses between rows)."""
        self.memory, self.src = self.memory[index], self.src[index]


class CachedDecoder:
    """Incremental decoding for the course :class:`~course_lib.model.Transformer` with a key/value cache.

    Each step runs only the newest target position through the model's own decoder (the same layers, the
    same attention code as training), handing every attention a :class:`~course_lib.attention.KeyValueCache`:
    self-attention appends the newest key and value to those of all earlier positions (so it is causal by
    construction) and cross-attention computes the memory's keys and values once, at the first step.

    Args:
        model: a course ``Transformer`` in eval mode.
        memory: encoder output ``(batch, src_len, d_model)``.
        src: source ids ``(batch, src_len)`` (for the padding mask).
    """

    def __init__(self, model: Transformer, memory: torch.Tensor, src: torch.Tensor):
        if model.training:
            raise RuntimeError("CachedDecoder needs the model in eval mode (dropout off): call model.eval()")
        self.model, self.memory = model, memory
        self.src_mask = padding_mask(src, model.config.pad_id)  # (batch, 1, 1, src_len)
        self.cache = [(KeyValueCache(), KeyValueCache(fixed=True)) for _ in model.decoder.layers]
        self.length = 0  # positions decoded so far

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens ``(batch, t)``: only the last column is new. Returns next-token logits ``(batch, vocab)``."""
        if tokens.size(1) != self.length + 1:
            raise ValueError(f"expected a prefix of length {self.length + 1}, got {tuple(tokens.shape)}")
        hidden = self.model.decoder(tokens[:, -1:], self.memory, self.src_mask, cache=self.cache)  # (batch, 1, d_model)
        self.length += 1
        return self.model.generator(hidden)[:, -1]  # (batch, vocab)

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows ``index`` ``(new_batch,)`` of every cache (beam search)."""
        self.memory, self.src_mask = self.memory[index], self.src_mask[index]
        for self_cache, cross_cache in self.cache:
            self_cache.reorder(index)
            cross_cache.reorder(index)


class InputCachedDecoder:
    """Incremental decoding for a Transformer built with supplied parts (``Transformer(config, parts)``).

    The supplied parts are black boxes: their projections cannot be read off by name, so their keys and
    values cannot be cached. What is cached instead is the *input* of every decoder self-attention call:
    each step runs only the newest position through the layers (embedding, norms, feed-forward,
    cross-attention: the supplied modules themselves), and a forward pre-hook hands each self-attention
    the cached inputs of all earlier positions as its keys and values. The supplied code runs unchanged
    and computes the numbers the whole-prefix pass computes; only the quadratic re-run of every layer
    over the prefix is saved.

    A self-attention call is recognised as :func:`course_lib.student.compare.record_calls` recognises one (an
    outermost sub-module call with three ``(batch, len, d_model)`` inputs) whose keys are not the memory.
    At the second step the cached logits are compared with a whole-prefix pass; a layer that could not be
    cached this way (it does something else with its inputs) falls back to uncached decoding, with a warning.

    Args:
        model: a course ``Transformer`` in eval mode.
        memory: encoder output ``(batch, src_len, d_model)``.
        src: source ids ``(batch, src_len)``.
    """

    def __init__(self, model: Transformer, memory: torch.Tensor, src: torch.Tensor):
        if model.training:
            raise RuntimeError("InputCachedDecoder needs the model in eval mode (dropout off): call model.eval()")
        self.model, self.memory, self.src = model, memory, src
        self.decoder = model.decoder
        self.src_mask = model._padding_mask(src, model.config.pad_id)  # (batch, 1, 1, src_len)
        self.history: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(self.decoder.layers)
        self.length = 0
        self.fallback: UncachedStepper | None = None

    def _hooks(self, index: int, layer: nn.Module) -> list:
        """Pre-hooks on ``layer``'s sub-modules that give its self-attention the cached earlier positions."""
        return cache_self_attention_inputs(layer, self.history, index, self.model.config.d_model, self.memory)

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens ``(batch, t)``: only the last column is new. Returns next-token logits ``(batch, vocab)``."""
        if self.fallback is not None:
            return self.fallback.step(tokens)
        if tokens.size(1) != self.length + 1:
            raise ValueError(f"expected a prefix of length {self.length + 1}, got {tuple(tokens.shape)}")
        x = self.decoder.positions(self.decoder.embedding(tokens[:, -1:]), self.length)  # (batch, 1, d_model)
        step_mask = self.model._padding_mask(tokens, self.model.config.pad_id)  # (batch, 1, 1, t): all earlier keys
        for index, layer in enumerate(self.decoder.layers):
            handles = self._hooks(index, layer)
            try:
                x = layer(x, self.memory, step_mask, self.src_mask)  # (batch, 1, d_model)
            finally:
                for handle in handles:
                    handle.remove()
        self.length += 1
        logits = self.model.generator(self.decoder.norm(x))[:, -1]  # (batch, vocab)
        if self.length == 2:  # the first step with a history: check it against the whole-prefix pass
            expected = self.model.decode(tokens, self.memory, self.src)[:, -1]
            if not torch.allclose(logits, expected, atol=1e-4, rtol=1e-4):
                warnings.warn("decoding without a cache: the decoder layers' self-attention could not be cached "
                              "(cached and whole-prefix logits differ)", stacklevel=3)
                self.fallback = UncachedStepper(self.model, self.memory, self.src)
                return expected
        return logits

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows ``index`` ``(new_batch,)`` of every cache (beam search)."""
        self.memory, self.src, self.src_mask = self.memory[index], self.src[index], self.src_mask[index]
        self.history = [None if kv is None else (kv[0][index], kv[1][index]) for kv in self.history]
        if self.fallback is not None:
            self.fallback.reorder(index)


def cache_self_attention_inputs(layer: nn.Module, history: list, index: int, d_model: int,
                                memory: torch.Tensor | None = None) -> list:
    """Hooks that hand ``layer``'s self-attention the inputs of all earlier positions as its keys and values.

    For a layer made of supplied parts (black boxes whose projections cannot be read off by name): the
    outermost attention-like call inside ``layer`` (query, key and value ``(batch, len, d_model)``, keys not
    ``memory``) gets ``history[index]`` (the keys and values it was given before) prepended to its key and
    value, and ``history[index]`` is updated. Remove the returned handles after the layer's call.

    Args:
        layer: one decoder (or decoder-only) layer.
        history: one ``(keys, values)`` pair or None per layer, ``(batch, t, d_model)`` each; updated in place.
        index: this layer's entry in ``history``.
        d_model: the model width.
        memory: the encoder output (its attention is cross-attention, left alone); None for a decoder-only model.
    """
    stack: list[bool] = []

    def before(module, args, kwargs):
        outermost = not any(stack)
        is_self_attention = outermost and _is_self_attention(args, kwargs, d_model, memory)
        stack.append(is_self_attention or not outermost)
        if not is_self_attention:
            return None
        args, kwargs = list(args), dict(kwargs)
        key = kwargs["key"] if "key" in kwargs else args[1]
        value = kwargs["value"] if "value" in kwargs else args[2]
        if history[index] is not None:
            old_key, old_value = history[index]
            key = torch.cat([old_key, key], dim=1)  # (batch, t, d_model)
            value = torch.cat([old_value, value], dim=1)  # (batch, t, d_model)
        history[index] = (key, value)
        for name, position, tensor in (("key", 1, key), ("value", 2, value)):
            if name in kwargs:
                kwargs[name] = tensor
            else:
                args[position] = tensor
        return tuple(args), kwargs

    def after(module, args, kwargs, output):
        stack.pop()

    handles = []
    for sub in layer.modules():
        if sub is not layer:
            handles.append(sub.register_forward_pre_hook(before, with_kwargs=True))
            handles.append(sub.register_forward_hook(after, with_kwargs=True))
    return handles


def _is_self_attention(args: tuple, kwargs: dict, d_model: int, memory: torch.Tensor | None) -> bool:
    """An attention-like call (query, key and value ``(batch, len, d_model)``) whose keys are not the memory."""
    def get(name, position):
        return kwargs.get(name, args[position] if len(args) > position else None)

    query, key, value = get("query", 0), get("key", 1), get("value", 2)
    inputs = (query, key, value)
    if not all(isinstance(t, torch.Tensor) and t.dim() == 3 and t.size(-1) == d_model for t in inputs):
        return False
    if memory is None:
        return True
    return key is not memory and not (key.shape == memory.shape and key.data_ptr() == memory.data_ptr())


def _has_course_attention(model: nn.Module) -> bool:
    """Every decoder layer is course_lib's, with course_lib's own multi-head attentions (projections by name)."""
    return all(type(layer) is DecoderLayer and type(layer.self_attn) is MultiHeadAttention
               and type(layer.cross_attn) is MultiHeadAttention for layer in model.decoder.layers)


def make_stepper(model: nn.Module, memory: torch.Tensor, src: torch.Tensor, use_cache: bool | None = None):
    """The step-by-step decoder for ``model``.

    A course ``Transformer`` decodes with a cache: :class:`CachedDecoder` (keys and values) when its decoder
    layers and attentions are course_lib's own, :class:`InputCachedDecoder` when supplied parts stand in
    their places. Any other model (or ``use_cache=False``) re-runs the whole prefix (:class:`UncachedStepper`).
    """
    if use_cache is None:
        use_cache = isinstance(model, Transformer)
    if use_cache:
        if not isinstance(model, Transformer):
            raise TypeError(f"use_cache=True needs a course_lib Transformer, got {type(model).__name__}")
        if _has_course_attention(model):
            return CachedDecoder(model, memory, src)
        return InputCachedDecoder(model, memory, src)
    return UncachedStepper(model, memory, src)


class _EvalMode:
    """Context manager: eval mode and no gradients inside, the previous mode restored after."""

    def __init__(self, model: nn.Module):
        self.model = model

    def __enter__(self):
        self.was_training = self.model.training
        self.no_grad = torch.no_grad()
        self.no_grad.__enter__()
        self.model.eval()

    def __exit__(self, *exc):
        self.model.train(self.was_training)
        self.no_grad.__exit__(*exc)


def cross_attention(model: nn.Module, src: torch.Tensor, output: torch.Tensor, bos_id: int = BOS_ID) -> dict:
    """Decoder cross-attention weights for a given output, from one teacher-forced pass.

    Args:
        model: the translation model.
        src: source ids ``(batch, src_len)``.
        output: generated ids without ``<bos>`` ``(batch, out_len)``.
        bos_id: id of ``<bos>``.

    Returns:
        ``{"decoder.layers.0.cross_attn": (batch, n_heads, out_len, src_len), ...}`` on the device of ``src``
        (``src`` and ``output`` may be on any device; the model runs on its own); row t is the attention used
        to predict output token t.
    """
    model = _unwrap(model)
    caller = src.device
    src, output = to_model_device(model, src, output)
    tgt_in = torch.cat([output.new_full((output.size(0), 1), bos_id), output[:, :-1]], dim=1)  # (batch, out_len)
    with _EvalMode(model), record_attention(model) as maps:
        model(src, tgt_in)
    return {name: weights.to(caller) for name, weights in maps.items() if name.endswith("cross_attn")}


def greedy_decode(
    model: nn.Module,
    src: torch.Tensor,
    max_len: int | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    return_attention: bool = False,
    pad_id: int = PAD_ID,
    use_cache: bool | None = None,
):
    """Translate a batch by always taking the most likely next token.

    Args:
        model: a model with ``encode(src)`` and ``decode(tgt, memory, src)`` (put in eval mode here).
        src: source ids ``(batch, src_len)``, padded with ``pad_id``, on any device (decoding runs on the model's).
        max_len: most tokens to generate per sentence (``<eos>`` included); default :func:`output_limits`.
        bos_id, eos_id, pad_id: special token ids.
        return_attention: also return the decoder cross-attention of the output (see :func:`cross_attention`).
        use_cache: key/value cache; None = use it when the model is a course ``Transformer``.

    Returns:
        ``tokens`` ``(batch, out_len)`` without ``<bos>``, on the device of ``src``: each row is ``y1 ... <eos>``
        followed by ``<pad>`` (no ``<eos>`` if ``max_len`` was reached); with ``return_attention``,
        ``(tokens, attention_dict)``.
    """
    model = _unwrap(model)
    caller = src.device
    src = to_model_device(model, src)
    limits = output_limits(model, src, max_len, pad_id)  # (batch,)
    with _EvalMode(model):
        stepper = make_stepper(model, model.encode(src), src, use_cache)
        tokens = src.new_full((src.size(0), 1), bos_id)  # (batch, 1)
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        for step in range(int(limits.max())):
            next_token = _never_special(stepper.step(tokens), bos_id, pad_id).argmax(dim=-1)  # (batch,)
            next_token = next_token.masked_fill(finished, pad_id)
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (batch, t + 1)
            finished |= (next_token == eos_id) | (limits <= step + 1)
            if bool(finished.all()):
                break
    output = tokens[:, 1:].to(caller)  # (batch, out_len), <bos> dropped
    if return_attention:
        return output, cross_attention(model, src.to(caller), output, bos_id)
    return output


def _never_special(logits: torch.Tensor, bos_id: int, pad_id: int) -> torch.Tensor:
    """Forbid generating ``<bos>`` or ``<pad>``: logits or log-probs ``(rows, vocab)`` -> copy with -inf there.

    They are never targets in training, but an untrained model may still rank them first.
    """
    logits = logits.clone()
    logits[:, [bos_id, pad_id]] = float("-inf")  # (batch, vocab)
    return logits


def length_penalty(lengths: torch.Tensor, alpha: float) -> torch.Tensor:
    """GNMT length penalty ``((5 + length) / 6) ** alpha``; divide a log-probability by it."""
    return ((5.0 + lengths.float()) / 6.0) ** alpha


def output_lengths(tokens: torch.Tensor, pad_id: int = PAD_ID) -> torch.Tensor:
    """Generated tokens up to and including ``<eos>`` (everything but the trailing ``<pad>``): ``(..., out_len)`` -> ``(...)``."""
    return (tokens != pad_id).sum(dim=-1)


def beam_search(
    model: nn.Module,
    src: torch.Tensor,
    beam_size: int = 4,
    length_penalty_alpha: float = 0.6,
    max_len: int | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    pad_id: int = PAD_ID,
    return_attention: bool = False,
    use_cache: bool | None = None,
    return_all: bool = False,
):
    """Beam search for a whole batch at once (``batch * beam_size`` rows decoded together).

    Args:
        model: a model with ``encode(src)`` and ``decode(tgt, memory, src)`` (put in eval mode here).
        src: source ids ``(batch, src_len)``, on any device (the search runs on the model's).
        beam_size: hypotheses kept per sentence; 1 is greedy decoding.
        length_penalty_alpha: GNMT alpha for choosing the final hypothesis (0 = pure log-probability).
        max_len: most tokens to generate; default :func:`output_limits`.
        bos_id, eos_id, pad_id: special token ids.
        return_attention: also return the cross-attention of the chosen outputs.
        use_cache: key/value cache; None = use it when the model is a course ``Transformer``.
        return_all: return every final hypothesis instead of the chosen one (see Returns).

    Returns (on the device of ``src``):
        ``(tokens, log_probs)``: the chosen outputs ``(batch, out_len)`` (without ``<bos>``, ``<pad>``
        after ``<eos>``) and their summed log-probabilities ``(batch,)``; with ``return_attention``,
        ``(tokens, log_probs, attention_dict)``. With ``return_all``: ``(hypotheses, log_probs)``, all
        ``beam_size`` final hypotheses ``(batch, beam_size, out_len)`` ranked by log-probability and their
        summed log-probabilities ``(batch, beam_size)`` (``-inf`` for a slot that never held a hypothesis);
        the chosen output is the one with the best ``log_prob / length_penalty(length, alpha)``.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}")
    if return_all and return_attention:
        raise ValueError("return_all and return_attention cannot be combined: pick one hypothesis for attention")
    model = _unwrap(model)
    caller = src.device
    src = to_model_device(model, src)
    batch, k = src.size(0), beam_size
    limits = output_limits(model, src, max_len, pad_id).repeat_interleave(k)  # (batch * k,)
    with _EvalMode(model):
        memory = model.encode(src)  # (batch, src_len, d_model)
        stepper = make_stepper(model, memory.repeat_interleave(k, 0), src.repeat_interleave(k, 0), use_cache)
        tokens = src.new_full((batch * k, 1), bos_id)  # (batch * k, 1), beams of one sentence are adjacent rows
        scores = torch.full((batch, k), float("-inf"), device=src.device)
        scores[:, 0] = 0.0  # one live hypothesis at the start, so the first step does not pick k copies of it
        finished = torch.zeros(batch * k, dtype=torch.bool, device=src.device)
        for step in range(int(limits.max())):
            log_probs = stepper.step(tokens).float().log_softmax(dim=-1)  # (batch * k, vocab)
            log_probs = _never_special(log_probs, bos_id, pad_id)
            log_probs = _freeze_finished(log_probs, finished, pad_id)
            vocab = log_probs.size(-1)
            candidates = scores[:, :, None] + log_probs.view(batch, k, vocab)  # (batch, k, vocab)
            scores, flat_choice = candidates.view(batch, k * vocab).topk(k, dim=-1)  # (batch, k) each
            origin = flat_choice.div(vocab, rounding_mode="floor")  # (batch, k) beam each winner extends
            new_token = (flat_choice % vocab).view(-1)  # (batch * k,)
            rows = (torch.arange(batch, device=src.device)[:, None] * k + origin).view(-1)  # (batch * k,)
            stepper.reorder(rows)
            tokens = torch.cat([tokens[rows], new_token[:, None]], dim=1)  # (batch * k, t + 1)
            finished = finished[rows] | (new_token == eos_id) | (limits <= step + 1)
            if bool(finished.all()):
                break
    hypotheses = tokens[:, 1:].view(batch, k, -1).to(caller)  # (batch, k, out_len)
    scores = scores.to(caller)
    if return_all:
        return hypotheses, scores
    normalized = scores / length_penalty(output_lengths(hypotheses, pad_id), length_penalty_alpha)
    best = normalized.argmax(dim=-1)  # (batch,)
    output = hypotheses[torch.arange(batch, device=caller), best]  # (batch, out_len)
    best_scores = scores.gather(1, best[:, None]).squeeze(1)  # (batch,)
    output = output[:, : max(1, int(output_lengths(output, pad_id).max()))]  # drop all-pad columns
    if return_attention:
        return output, best_scores, cross_attention(model, src.to(caller), output, bos_id)
    return output, best_scores


def _freeze_finished(log_probs: torch.Tensor, finished: torch.Tensor, pad_id: int) -> torch.Tensor:
    """A finished hypothesis may only be extended by ``<pad>``, at zero cost: rows ``finished`` -> (-inf, ..., 0 at pad)."""
    frozen = torch.full_like(log_probs[:1], float("-inf"))  # (1, vocab)
    frozen[0, pad_id] = 0.0
    return torch.where(finished[:, None], frozen, log_probs)


def sequence_log_probs(
    model: nn.Module, src: torch.Tensor, output: torch.Tensor, bos_id: int = BOS_ID, pad_id: int = PAD_ID
) -> torch.Tensor:
    """Summed log-probability of given outputs under the model (teacher forcing).

    Args:
        model: the translation model.
        src: source ids ``(batch, src_len)`` (any device: the model runs on its own).
        output: ids without ``<bos>`` ``(batch, out_len)``, ``<pad>`` after ``<eos>`` (not counted).
        bos_id, pad_id: special token ids.

    Returns:
        ``(batch,)`` log p(output | src), on the device of ``output``.
    """
    model = _unwrap(model)
    caller = output.device
    src, output = to_model_device(model, src, output)
    tgt_in = torch.cat([output.new_full((output.size(0), 1), bos_id), output[:, :-1]], dim=1)  # (batch, out_len)
    with _EvalMode(model):
        log_probs = model(src, tgt_in).float().log_softmax(dim=-1)  # (batch, out_len, vocab)
    token_log_probs = log_probs.gather(-1, output[..., None]).squeeze(-1)  # (batch, out_len)
    return (token_log_probs * (output != pad_id)).sum(dim=-1).to(caller)


def _pad_batch(sequences: Sequence[Sequence[int]], pad_id: int, device) -> torch.Tensor:
    """Lists of ids -> ``(batch, longest)`` tensor padded with ``pad_id``."""
    longest = max(len(s) for s in sequences)
    padded = [list(s) + [pad_id] * (longest - len(s)) for s in sequences]
    return torch.tensor(padded, dtype=torch.long, device=device)


def translate_token_lists(
    model: nn.Module,
    token_lists: Sequence[Sequence[str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    batch_size: int = 96,
    beam_size: int = 1,
    length_penalty_alpha: float = 0.6,
    max_len: int | None = None,
) -> list[list[str]]:
    """Translate tokenized sentences in length-sorted batches; the result is in the input order.

    Args:
        model: the translation model.
        token_lists: source sentences as token lists.
        src_vocab, tgt_vocab: the vocabularies the model was trained with.
        batch_size: sentences per decoding batch (64-128 is fastest on a CPU).
        beam_size: 1 = greedy decoding, more = beam search.
        length_penalty_alpha: GNMT alpha for beam search.
        max_len: most output tokens per sentence; default :func:`output_limits`.

    Returns:
        One list of target tokens per input sentence (specials removed).
    """
    device = model_device(model)
    model_max_len = _unwrap(model).config.max_len
    ids = [src_vocab.encode(tokens, add_eos=True)[:model_max_len] for tokens in token_lists]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # shortest first: little padding per batch
    results: list[list[str] | None] = [None] * len(ids)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        src = _pad_batch([ids[i] for i in chunk], src_vocab.pad_id, device)  # (chunk, src_len)
        if beam_size == 1:
            output = greedy_decode(model, src, max_len)
        else:
            output, _ = beam_search(model, src, beam_size, length_penalty_alpha, max_len)
        for i, row in zip(chunk, output.tolist(), strict=True):
            results[i] = tgt_vocab.decode(row)
    return results


def translate_sentences(
    model: nn.Module,
    sentences: Sequence[str],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    tokenizer: Callable[[str], list[str]],
    batch_size: int = 96,
    beam_size: int = 1,
    length_penalty_alpha: float = 0.6,
    max_len: int | None = None,
) -> list[str]:
    """Translate raw sentences: tokenize, decode in length-sorted batches, detokenize, keep the input order.

    Args:
        model: the translation model.
        sentences: source sentences as plain strings.
        src_vocab, tgt_vocab: the vocabularies the model was trained with.
        tokenizer: the source tokenizer used for training (e.g. ``Tokenizer("de")``).
        batch_size, beam_size, length_penalty_alpha, max_len: as in :func:`translate_token_lists`.

    Returns:
        One detokenized translation per sentence.
    """
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings, got a single str")
    token_lists = [tokenizer(sentence) for sentence in sentences]
    outputs = translate_token_lists(
        model, token_lists, src_vocab, tgt_vocab, batch_size, beam_size, length_penalty_alpha, max_len
    )
    return [detokenize(tokens) for tokens in outputs]
