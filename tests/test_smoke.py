"""The package imports and a default model runs forward."""

import torch

from course_lib.model import Transformer, TransformerConfig


def test_default_model_forward_shape():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(src_vocab_size=30, tgt_vocab_size=20)).eval()
    src = torch.randint(4, 30, (2, 5))
    tgt = torch.randint(4, 20, (2, 4))
    assert model(src, tgt).shape == (2, 4, 20)
