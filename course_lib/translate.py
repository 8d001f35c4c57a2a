"""Command line: translate sentences with a trained checkpoint.

::

    python -m course_lib.translate data/checkpoints/toy_de_en.pt "Der Hund sieht die Katze."
    echo "Heute spielt das Kind im Garten." | python -m course_lib.translate data/checkpoints/toy_de_en.pt
    python -m course_lib.translate data/checkpoints/toy_de_en.pt --beam 4 < sentences.de

Sentences come from the arguments, or one per line on standard input; translations are printed
one per line in the same order. Tokenizers are spaCy's rule-based ones for the languages stored
in the checkpoint (German and English by default).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .checkpoint import load_checkpoint
from .decoding import translate_sentences
from .tokenization import Tokenizer
from .utils import configure_threads, get_device


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m course_lib.translate", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="a checkpoint written by python -m course_lib.train")
    parser.add_argument("sentences", nargs="*", help="sentences to translate (default: read lines from stdin)")
    parser.add_argument("--beam", type=int, default=1, help="beam size; 1 = greedy decoding (default %(default)s)")
    parser.add_argument("--alpha", type=float, default=0.6, help="GNMT length penalty for beam search")
    parser.add_argument("--batch-size", type=int, default=96, help="sentences per decoding batch")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: COURSE_NUM_THREADS or 1)")
    parser.add_argument("--device", help="cpu, cuda, ... (default: CUDA if available)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_intermixed_args(argv)  # options may come before or after the sentences
    configure_threads(args.threads)
    model, src_vocab, tgt_vocab, checkpoint = load_checkpoint(args.checkpoint, get_device(args.device))
    sentences = list(args.sentences) or [line.strip() for line in sys.stdin]
    keep = [i for i, s in enumerate(sentences) if s]  # blank input lines give blank output lines
    src_lang = (checkpoint.get("train_config") or {}).get("src_lang", "de")
    outputs = translate_sentences(model, [sentences[i] for i in keep], src_vocab, tgt_vocab, Tokenizer(src_lang),
                                  batch_size=args.batch_size, beam_size=args.beam, length_penalty_alpha=args.alpha)
    translations = [""] * len(sentences)
    for i, text in zip(keep, outputs, strict=True):
        translations[i] = text
    print("\n".join(translations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
