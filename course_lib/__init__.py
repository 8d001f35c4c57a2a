"""course_lib: the finished, tested parts of the Transformer-from-scratch course.

Each notebook builds one of these pieces step by step and then proves that its version equals
the one here; later notebooks import the finished piece. Modules:

- ``tokenization``: spaCy rule-based tokenizers and the ``Vocab``
- ``bpe``: byte-pair encoding (subword tokens), learned from word counts
- ``subword``: the same BPE with Hugging Face ``tokenizers`` for real corpora (optional extra ``subword``)
- ``embeddings``: token embeddings and positional encodings
- ``masks``: padding and causal masks (True = may attend)
- ``attention``: scaled dot-product and multi-head attention
- ``layers``: LayerNorm, feed-forward block, encoder and decoder layers
- ``model``: ``TransformerConfig`` and the encoder-decoder ``Transformer``
- ``compat``: copy weights from PyTorch's built-in modules (for equality checks)
- ``corpus`` (package: ``settings``, ``lexicon``, ``verbs``, ``choices``, ``noun_phrases``, ``clauses``,
  ``realise``, ``sentences``): the toy German–English grammar; ``data``: corpus loaders and batching
- ``losses``, ``schedule``, ``training``: label smoothing, the warm-up schedule, the training loop
- ``recipe``: the training recipe that scales schedule, batching, dropout, tied output matrix and ``min_freq``
  with the model and corpus
- ``sweeps``: short learning-rate sweeps across widths (notebook 14)
- ``decoding``, ``evaluation``, ``checkpoint``: greedy and beam search, BLEU, safe checkpoints
- ``distributed``: DistributedDataParallel helpers (``torchrun``)
- ``train``, ``translate``: the command lines (``python -m course_lib.train`` / ``.translate``)
- ``builders``: where each sub-module of ``Transformer(config, parts=None)`` comes from (course_lib's own
  parts, or supplied ones in their places)
- ``probing``: which weight of an attention module plays which role, found by probing
- ``student`` (package: ``contracts``, ``package``, ``magic``, ``assembly``, ``compare``, ``bug_finder``,
  ``ownership``): the student's own parts, in one place (contracts, the ``%%my_part`` magic that saves
  them, the one importer, ``build_transformer``, "find my bug", whose code runs)
- ``plotting`` (package: ``style``, ``heatmaps``, ``attention``, ``masks``, ``distributions``, ``lines``,
  ``bars``), ``diagrams``, ``exercises``: figures and the self-checking exercises of the notebooks
- ``explorer``: the interactive attention explorer of a trained model (ipywidgets)
"""

__version__ = "0.1.0"
