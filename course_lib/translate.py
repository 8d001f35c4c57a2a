"""Command line: translate sentences with a trained checkpoint.

::

    python -m course_lib.translate data/checkpoints/toy_de_en.pt "Der Hund sieht die Katze."
    echo "Heute spielt das Kind im Garten." | python -m course_lib.translate data/checkpoints/toy_de_en.pt
    python -m course_lib.translate data/checkpoints/toy_de_en.pt --beam 4 < sentences.de

Sentences come from the arguments, or one per line on standard input; translations are printed
one per line in the same order. Tokenizers are spaCy's rule-based ones for the languages stored
in the checkpoint (German and English by default). Input words the model never saw in training
become ``<unk>``; they are listed on standard error, since the translation then cannot be right.
A missing or unreadable checkpoint, or input that is not UTF-8, ends the command with one line on
standard error (exit status 2).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .checkpoint import CheckpointError, load_checkpoint
from .cli_common import OneLineParser, UsageError, _positive_int, subword_tokenizers
from .decoding import translate_sentences
from .devices import DeviceUnavailable, get_device
from .tokenization import Tokenizer, Vocab
from .utils import configure_threads


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m course_lib.translate", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="a checkpoint written by python -m course_lib.train")
    parser.add_argument("sentences", nargs="*", help="sentences to translate (default: read lines from stdin)")
    parser.add_argument("--beam", type=_positive_int, default=1, help="beam size; 1 = greedy decoding (default %(default)s)")
    parser.add_argument("--alpha", type=float, default=0.6, help="GNMT length penalty for beam search")
    parser.add_argument("--batch-size", type=_positive_int, default=96, help="sentences per decoding batch")
    parser.add_argument("--threads", type=_positive_int, help="torch CPU threads (default: COURSE_NUM_THREADS or 1)")
    parser.add_argument("--device", help="cpu, cuda, ... (default: CUDA if available)")
    parser.add_argument("--my-parts", metavar="DIR", help="the checkpoint was trained with the parts saved in "
                        "DIR/my_transformer/ (train --my-parts DIR): build the model from them")
    return parser


def unknown_words(sentences: Sequence[str], tokenizer: Tokenizer, vocab: Vocab) -> list[str]:
    """The distinct tokens of ``sentences`` that ``vocab`` does not know, in order of appearance."""
    seen: dict[str, None] = {}
    for sentence in sentences:
        for token in tokenizer(sentence):
            if token not in vocab:
                seen.setdefault(token)
    return list(seen)


def read_stdin_lines() -> list[str]:
    """Standard input's lines, stripped; text that is not UTF-8 is a :class:`UsageError` naming line and byte."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream without bytes underneath (e.g. replaced in a test)
        return [line.strip() for line in sys.stdin]
    raw = stream.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UsageError(f"standard input is not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line} "
                         f"cannot be decoded (save the file as UTF-8)") from None
    return [line.strip() for line in text.splitlines()]


def main(argv: Sequence[str] | None = None) -> int:
    """Translate; a missing or unreadable checkpoint gives one line on stderr and exit status 2."""
    args = build_parser().parse_intermixed_args(argv)  # options may come before or after the sentences
    configure_threads(args.threads)
    try:
        parts = None
        if args.my_parts:
            from .student.contracts import PartContractError
            from .student.package import load_my_parts

            try:
                parts = load_my_parts(args.my_parts, model="transformer")  # the translator's parts only
            except PartContractError as exc:
                raise CheckpointError(f"--my-parts {args.my_parts}: {exc}") from None
            if not parts:
                raise CheckpointError(f"--my-parts {args.my_parts}: no saved parts in {args.my_parts}/my_transformer/")
        model, src_vocab, tgt_vocab, checkpoint = load_checkpoint(args.checkpoint, get_device(args.device), parts)
    except (CheckpointError, DeviceUnavailable) as exc:
        print(f"python -m course_lib.translate: error: {exc}", file=sys.stderr)
        return 2
    try:
        sentences = list(args.sentences) or read_stdin_lines()
    except UsageError as exc:
        print(f"python -m course_lib.translate: error: {exc}", file=sys.stderr)
        return 2
    keep = [i for i, s in enumerate(sentences) if s]  # blank input lines give blank output lines
    train_config = checkpoint.get("train_config") or {}
    tokenizer = Tokenizer(train_config.get("src_lang", "de"))
    try:
        subwords = subword_tokenizers(train_config)
    except UsageError as exc:
        print(f"python -m course_lib.translate: error: {exc}", file=sys.stderr)
        return 2
    if subwords is not None:  # the checkpoint was trained on BPE pieces: cut the words the same way
        words = tokenizer
        tokenizer = lambda text: subwords[0].tokenize(words(text))  # noqa: E731
    unknown = unknown_words([sentences[i] for i in keep], tokenizer, src_vocab)
    if unknown:
        print(f"warning: {len(unknown)} input word(s) unknown to the model, translated as <unk>: "
              f"{', '.join(unknown[:20])}{' ...' if len(unknown) > 20 else ''}", file=sys.stderr)
    outputs = translate_sentences(model, [sentences[i] for i in keep], src_vocab, tgt_vocab, tokenizer,
                                  batch_size=args.batch_size, beam_size=args.beam, length_penalty_alpha=args.alpha)
    translations = [""] * len(sentences)
    for i, text in zip(keep, outputs, strict=True):
        translations[i] = text
    print("\n".join(translations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
