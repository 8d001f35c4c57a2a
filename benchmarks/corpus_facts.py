"""Facts about a Multi30k-style corpus that notebook 14 quotes, measured and written to a results file.

Words seen once, vocabulary sizes, the share of validation and test tokens that become ``<unk>`` (whole
words with ``min_freq`` 2, and BPE pieces), target lengths in words and in pieces, and the size of the
tutorial model with and without the shared output matrix. Everything is computed the way the command
line computes it (cased spaCy words, :mod:`course_lib.recipe`, :class:`course_lib.subword.SubwordTokenizer`).

    python -m benchmarks.corpus_facts --data-dir ../shared/data/multi30k     # -> benchmarks/results/corpus_facts/

Takes about a minute on one CPU core (spaCy tokenization of 31,000 sentence pairs dominates).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks import results_io
from benchmarks.real_data import find_file
from course_lib import data, loading
from course_lib.model import Transformer, TransformerConfig
from course_lib.recipe import SINGLETON_SHARE, singleton_share
from course_lib.utils import configure_threads

TUTORIAL = {"d_model": 256, "n_heads": 8, "d_ff": 512, "n_encoder_layers": 3, "n_decoder_layers": 3, "dropout": 0.1}


def parameters(src_vocab: int, tgt_vocab: int, tie: bool) -> int:
    config = TransformerConfig(src_vocab_size=src_vocab, tgt_vocab_size=tgt_vocab, tie_embeddings=tie, **TUTORIAL)
    return Transformer(config).num_parameters()


def measure(tokens: dict, merges: int) -> dict:
    """The facts for tokenized ``{"train", "valid", "test"}`` pairs."""
    train = tokens["train"]
    facts = {"train_pairs": len(train),
             "singleton_share": {"src": singleton_share(s for s, _ in train), "tgt": singleton_share(t for _, t in train)}}
    src_vocab, tgt_vocab = data.build_vocabs(train, min_freq=2)
    facts["words"] = {"min_freq": 2, "vocab": {"src": len(src_vocab), "tgt": len(tgt_vocab)},
                      "mean_target_length": sum(len(t) for _, t in train) / len(train),
                      "unknown": {split: dict(zip(("src", "tgt"), loading.unknown_rate(tokens[split], src_vocab, tgt_vocab),
                                                  strict=True)) for split in ("valid", "test")}}
    all_words = data.build_vocabs(train, min_freq=1)
    facts["words"]["vocab_min_freq_1"] = {"src": len(all_words[0]), "tgt": len(all_words[1])}
    facts["tutorial_model"] = {"size": TUTORIAL, "parameters_tied": parameters(len(src_vocab), len(tgt_vocab), True),
                               "parameters_untied": parameters(len(src_vocab), len(tgt_vocab), False)}
    if merges:
        from course_lib.subword import SubwordTokenizer

        cutters = (SubwordTokenizer.train([s for s, _ in train], merges), SubwordTokenizer.train([t for _, t in train], merges))
        pieces = {split: [(cutters[0].tokenize(s), cutters[1].tokenize(t)) for s, t in pairs]
                  for split, pairs in tokens.items()}
        share = max(singleton_share(s for s, _ in pieces["train"]), singleton_share(t for _, t in pieces["train"]))
        piece_min_freq = 2 if share > SINGLETON_SHARE else 1  # the recipe's rule, as the command line applies it
        piece_vocab = data.build_vocabs(pieces["train"], min_freq=piece_min_freq)
        facts["subwords"] = {"merges": merges, "min_freq": piece_min_freq,
                             "vocab": {"src": len(piece_vocab[0]), "tgt": len(piece_vocab[1])},
                             "mean_target_length": sum(len(t) for _, t in pieces["train"]) / len(train),
                             "unknown": {split: dict(zip(("src", "tgt"), loading.unknown_rate(pieces[split], *piece_vocab),
                                                         strict=True)) for split in ("valid", "test")}}
    return facts


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--splits", nargs=3, default=["train", "val", "test_2016_flickr"])
    parser.add_argument("--merges", type=int, default=4000, help="BPE merges per language (0: no subword facts)")
    parser.add_argument("--record", metavar="PATH", help="results file (default: benchmarks/results/corpus_facts/NAME.json)")
    args = parser.parse_args(argv)
    configure_threads(1)
    folder = Path(args.data_dir)
    pairs = {name: data.read_parallel_files(find_file(folder, split, "de"), find_file(folder, split, "en"))
             for name, split in zip(("train", "valid", "test"), args.splits, strict=True)}
    tokens = {name: data.tokenize_pairs(p, data.default_tokenizers()) for name, p in pairs.items()}
    facts = measure(tokens, args.merges)
    toy = {name: data.tokenize_pairs(data.load_toy_corpus(name)) for name in ("train", "valid", "test")}
    facts["toy"] = measure(toy, 0)  # the course corpus, for the side-by-side table
    toy_vocabs = data.build_vocabs(toy["train"], min_freq=1)  # the recipe keeps min_freq 1 there
    facts["toy"]["words_min_freq_1"] = {"vocab": {"src": len(toy_vocabs[0]), "tgt": len(toy_vocabs[1])},
                                        "unknown_test": dict(zip(("src", "tgt"), loading.unknown_rate(
                                            toy["test"], *toy_vocabs), strict=True))}
    config = TransformerConfig(src_vocab_size=len(toy_vocabs[0]), tgt_vocab_size=len(toy_vocabs[1]))
    facts["toy"]["default_model_parameters"] = Transformer(config).num_parameters()
    record = {**results_io.header("corpus_facts", {**vars(args), "data_dir": folder.name}, threads=1), "facts": facts}
    path = Path(args.record) if args.record else results_io.RESULTS / "corpus_facts" / f"{folder.name}.json"
    results_io.write_atomic(path, record)
    print(f"{path}: {facts}")
    return facts


if __name__ == "__main__":
    main(sys.argv[1:])
