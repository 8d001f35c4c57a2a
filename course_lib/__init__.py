"""course_lib: the finished, tested parts of the Transformer-from-scratch course.

Each notebook builds one of these pieces step by step and then proves that its version equals
the one here; later notebooks import the finished piece. Modules:

- ``tokenization``: spaCy rule-based tokenizers and the ``Vocab``
- ``bpe``: byte-pair encoding (subword tokens), learned from word counts
- ``embeddings``: token embeddings and positional encodings
- ``masks``: padding and causal masks (True = may attend)
- ``attention``: scaled dot-product and multi-head attention
- ``layers``: LayerNorm, feed-forward block, encoder and decoder layers
- ``model``: ``TransformerConfig`` and the encoder-decoder ``Transformer``
- ``compat``: copy weights from PyTorch's built-in modules (for equality checks)
"""

__version__ = "0.1.0"
