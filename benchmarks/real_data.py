"""Real-data benchmark: the course pipeline, ``nn.Transformer`` under the course recipe, and the classic
Multi30k recipe (see ``benchmarks/pipelines.py``), on the same files, threads and epochs, trained
INTERLEAVED epoch by epoch, one seed at a time, with a results file per pipeline and seed.

After every epoch each pipeline translates the whole validation and test splits greedily (with
``--test-last-only`` the test split only after the last epoch; ``--beam-last B`` adds beam search of
size B on both after the last epoch); both are scored (:func:`course_lib.evaluation.score_outputs`: detokenized output against the raw reference
lines, sacrebleu 13a, cased and lower-cased, plus the tokenized lower-cased figure of published
Multi30k results, with signatures; ``<unk>`` kept and counted). Choices (best epoch, recipe constants)
are to be read from ``valid`` only; ``benchmarks/report.py`` does so and reports ``test`` once.

Order: pipelines alternate (A B C in odd epochs, C B A in even ones), so a change in the machine's load
hits all alike. Clocks: ``train_seconds`` is wall-clock training time (evaluation excluded),
``train_cpu_seconds`` the process's CPU time over the same span (steadier on a busy machine);
``load_average`` (1 minute, after the epoch) above the thread count means other work competed.
Training tokens count the real target tokens of the batches.

Results: ``benchmarks/results/real_data/RUN/PIPELINE-seedN.json``, rewritten after every epoch
(``"complete": true`` once all epochs are in). A pipeline and seed whose file is complete with the same
settings is skipped, so a long benchmark resumes seed by seed::

    python -m benchmarks.real_data --data-dir ../shared/data/multi30k --threads 2 --epochs 10 --seeds 0 1 2 \\
        --run tutorial --d-model 256 --n-heads 8 --d-ff 512 --layers 3 --dropout 0.1 --min-freq 2
    python -m benchmarks.real_data --data-dir DIR --epochs 4 --pipelines course --run default   # the default model

Flags this script does not know are the course pipeline's: ``course_lib.train``'s parser reads them once into a
:class:`~course_lib.run_spec.RunSpec`, whose data and training fields this script then sets (``pipelines.CourseData``).
Files: ``DIR/{train,val,test_2016_flickr}.{de,en}`` or the same names with ``.gz``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

from benchmarks.pipelines import PIPELINES, ClassicPipeline, CourseData, CourseRecipePipeline
from benchmarks.results_io import git_commit, machine, now, write_atomic
from course_lib import data
from course_lib import train as cli
from course_lib.evaluation import score_outputs
from course_lib.model import TransformerConfig
from course_lib.run_spec import RunSpec
from course_lib.tokenization import Tokenizer
from course_lib.utils import configure_threads, get_device

RESULTS = Path(__file__).resolve().parent / "results" / "real_data"
FORMAT = 1


def find_file(folder: Path, name: str, lang: str) -> Path:
    """``folder/name.lang`` or ``folder/name.lang.gz``."""
    for candidate in (folder / f"{name}.{lang}", folder / f"{name}.{lang}.gz"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"--data-dir: neither {name}.{lang} nor {name}.{lang}.gz in {folder}")


@dataclass
class Settings:
    """The benchmark's own options (``--data-dir`` is ``data_dir``); the course pipeline's are its course flags.

    What a results file records of them (:func:`settings_key`) decides whether a finished seed is skipped.
    """

    data_dir: str  # folder with the Multi30k-style files
    splits: list[str] = field(default_factory=lambda: ["train", "val", "test_2016_flickr"])  # train, valid, test
    src_lang: str = "de"
    tgt_lang: str = "en"
    epochs: int = 10  # epochs the schedule plans for
    stop_after: int | None = None  # stop after this epoch, the schedule still planned for `epochs`
    valid_only: bool = False  # score only the validation split
    test_last_only: bool = False  # score the test split only after the last epoch
    beam_last: int | None = None  # after the last epoch also decode with beam search of this size
    threads: int = 2
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    pipelines: list[str] = field(default_factory=lambda: list(PIPELINES))
    run: str | None = None  # results folder name (None: from the size)
    results_dir: str = str(RESULTS)  # where run folders go
    force: bool = False  # re-run pipelines and seeds whose results are complete
    max_train_pairs: int | None = None  # first N training pairs only (smoke tests)
    max_eval_pairs: int | None = None  # first N validation and test pairs only (smoke tests)
    classic_batch_tokens: int = 4000
    classic_warmup: int = 800
    classic_peak_lr: float = 1e-3
    classic_min_freq: int = 2
    classic_dropout: float = 0.1
    classic_clip: float = 1.0

    def problem(self) -> str | None:
        """What is wrong with these settings, if anything (one line, as the command line reports it)."""
        unknown = [p for p in self.pipelines if p not in PIPELINES]
        if unknown or not self.pipelines:
            return f"--pipelines: unknown {unknown or 'nothing given'}; expected some of {', '.join(PIPELINES)}"
        if self.beam_last is not None and self.beam_last < 2:
            return f"--beam-last: expected a beam size of at least 2, got {self.beam_last}"
        if self.valid_only and self.test_last_only:
            return "--valid-only and --test-last-only: give one of them"
        if self.stop_after is not None and not 1 <= self.stop_after <= self.epochs:
            return f"--stop-after: expected an epoch from 1 to --epochs ({self.epochs}), got {self.stop_after}"
        return None


def parse_args(argv) -> tuple[Settings, list[str]]:
    """The benchmark's :class:`Settings` and the course flags (the options it does not know) of ``argv``."""
    defaults = Settings(data_dir="")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="folder with the Multi30k-style files")
    parser.add_argument("--splits", nargs=3, default=defaults.splits, metavar=("TRAIN", "VALID", "TEST"))
    parser.add_argument("--src-lang", default=defaults.src_lang)
    parser.add_argument("--tgt-lang", default=defaults.tgt_lang)
    parser.add_argument("--epochs", type=int, default=defaults.epochs, help="epochs the schedule plans for")
    parser.add_argument("--stop-after", type=int, metavar="EPOCH",
                        help="stop after this epoch, the schedule still planned for --epochs (sweeps of shorter runs)")
    parser.add_argument("--valid-only", action="store_true",
                        help="score only the validation split (sweeps: choices never see the test split)")
    parser.add_argument("--test-last-only", action="store_true",
                        help="score the test split only after the last epoch (validation after every epoch)")
    parser.add_argument("--beam-last", type=int, metavar="BEAM",
                        help="after the last epoch also decode validation and test with beam search of this size")
    parser.add_argument("--threads", type=int, default=defaults.threads)
    parser.add_argument("--seeds", type=int, nargs="+", default=defaults.seeds)
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help=f"comma-separated, of: {', '.join(PIPELINES)}")
    parser.add_argument("--run", help="results folder name under benchmarks/results/real_data (default: from the size)")
    parser.add_argument("--results-dir", default=defaults.results_dir, help="where run folders go")
    parser.add_argument("--force", action="store_true", help="re-run pipelines and seeds whose results are complete")
    parser.add_argument("--max-train-pairs", type=int, help="first N training pairs only (smoke tests)")
    parser.add_argument("--max-eval-pairs", type=int, help="first N validation and test pairs only (smoke tests)")
    parser.add_argument("--classic-batch-tokens", type=int, default=defaults.classic_batch_tokens)
    parser.add_argument("--classic-warmup", type=int, default=defaults.classic_warmup)
    parser.add_argument("--classic-peak-lr", type=float, default=defaults.classic_peak_lr)
    parser.add_argument("--classic-min-freq", type=int, default=defaults.classic_min_freq)
    parser.add_argument("--classic-dropout", type=float, default=defaults.classic_dropout)
    parser.add_argument("--classic-clip", type=float, default=defaults.classic_clip)
    args, course_flags = parser.parse_known_args(argv)
    args.pipelines = [p.strip() for p in args.pipelines.split(",") if p.strip()]
    settings = Settings(**vars(args))
    problem = settings.problem()
    if problem:
        parser.error(problem)
    return settings, course_flags


def run_name(args, course: RunSpec) -> str:
    if args.run:
        return args.run
    return f"d{course.d_model}-h{course.n_heads}-ff{course.d_ff}-l{course.layers or 'default'}-e{args.epochs}"


def settings_key(args, course_flags) -> dict:
    """The settings a results file must share to count as the same experiment."""
    keep = {k: v for k, v in vars(args).items() if k not in ("seeds", "pipelines", "force", "run", "results_dir")}
    for optional in ("stop_after", "valid_only", "test_last_only", "beam_last"):  # recorded only when used, so older results keep their key
        if not keep.get(optional):
            keep.pop(optional, None)
    keep["data_dir"] = Path(args.data_dir).name
    return {"args": keep, "course_flags": list(course_flags)}


def is_complete(path: Path, key: dict) -> bool:
    if not path.is_file():
        return False
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return bool(record.get("complete")) and record.get("settings") == key


def build_pipelines(wanted, seed, args, course: RunSpec, files, device):
    pipelines = []
    seeded = argparse.Namespace(**{**vars(args), "seed": seed})
    size = None
    if {"course", "torch_recipe"} & set(wanted):
        shared = CourseData(files, seeded, course)
        size = shared.config
        pipelines += [CourseRecipePipeline(name, shared, seed) for name in ("course", "torch_recipe") if name in wanted]
    if "classic" in wanted:
        if size is None:
            layers = {} if course.layers is None else {"n_encoder_layers": course.layers, "n_decoder_layers": course.layers}
            size = TransformerConfig(d_model=course.d_model, n_heads=course.n_heads, d_ff=course.d_ff, **layers)
        splits = {name: data.read_parallel_files(files["src"][i], files["tgt"][i])
                  for i, name in enumerate(("train", "valid", "test"))}
        if args.max_train_pairs:
            splits["train"] = splits["train"][: args.max_train_pairs]
        if args.max_eval_pairs:
            splits = {k: v if k == "train" else v[: args.max_eval_pairs] for k, v in splits.items()}
        pipelines.append(ClassicPipeline(splits, seeded, size, device))
    return [p for name in PIPELINES for p in pipelines if p.name == name]


def evaluate(pipeline, references: dict, tokenizer, splits=("valid", "test"), beam_size: int = 1) -> dict:
    result = {}
    for split in splits:
        start = time.perf_counter()
        outputs = pipeline.translate(split, beam_size)
        seconds = time.perf_counter() - start
        scores = score_outputs(outputs, references[split], tokenizer)
        scores["decode_seconds"] = round(seconds, 2)
        result[split] = scores
    return result


def run_seed(seed, args, course: RunSpec, files, references, tokenizer, device, folder: Path, key: dict) -> None:
    todo = [name for name in args.pipelines
            if args.force or not is_complete(folder / f"{name}-seed{seed}.json", key)]
    if not todo:
        print(f"seed {seed}: complete, skipped", flush=True)
        return
    pipelines = build_pipelines(todo, seed, args, course, files, device)
    records = {}
    last = args.stop_after or args.epochs
    splits = ("valid",) if args.valid_only else ("valid", "test")
    for p in pipelines:
        print(f"seed {seed} {p.name}: {p.description}\n  unknown test words: {100 * p.unknown['test'][0]:.1f}% "
              f"{args.src_lang}, {100 * p.unknown['test'][1]:.1f}% {args.tgt_lang}", flush=True)
        records[p.name] = {
            "benchmark": "real_data", "format": FORMAT, "run": folder.name, "pipeline": p.name, "seed": seed,
            "commit": git_commit(), "started": now(),
            "machine": machine(), "threads": args.threads, "settings": key, "description": p.description,
            "parameters": p.num_parameters(), "lowercased_output": p.lowercased_output,
            "unknown_words": {split: {"src": rate[0], "tgt": rate[1]} for split, rate in p.unknown.items()},
            "epochs_planned": args.epochs, "stop_after": last, "epochs": [], "complete": False,
            "interleaved_with": sorted(q.name for q in pipelines if q is not p),
        }
    for epoch in range(1, last + 1):
        order = pipelines if epoch % 2 == 1 else pipelines[::-1]
        for p in order:
            wall, cpu = time.perf_counter(), time.process_time()
            row = p.run_epoch()
            row["train_seconds"] = round(time.perf_counter() - wall, 2)
            row["train_cpu_seconds"] = round(time.process_time() - cpu, 2)
            row["tokens_per_s"] = round(row["tokens"] / row["train_seconds"], 1)
            row["load_average"] = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None  # > threads: disturbed
            final = epoch == last
            row.update(evaluate(p, references, tokenizer, splits if final or not args.test_last_only else ("valid",)))
            if final and args.beam_last:
                row["beam"] = {"size": args.beam_last, **evaluate(p, references, tokenizer, splits, args.beam_last)}
            row["epoch"] = epoch
            record = records[p.name]
            record["epochs"].append(row)
            record["complete"] = final
            record["updated"] = now()
            write_atomic(folder / f"{p.name}-seed{seed}.json", record)
            test = (f" test {row['test']['bleu_lc']:5.2f}  (tok lc test {row['test']['bleu_tok_lc']:5.2f}, "
                    f"<unk> {100 * row['test']['unk_share']:.1f}%)") if "test" in row else ""
            if "beam" in row:
                beam = row["beam"]
                test += (f"; beam {beam['size']}: valid {beam['valid']['bleu_lc']:5.2f}" +
                         (f" test {beam['test']['bleu_lc']:5.2f} (tok lc {beam['test']['bleu_tok_lc']:5.2f})"
                          if "test" in beam else ""))
            print(f"seed {seed} epoch {epoch:2d}  {p.name:12s} step {row['step']:5d}  train {row['train_seconds']:7.1f}s  "
                  f"{row['tokens_per_s']:7.0f} tok/s  loss {row['train_loss']:.3f}  BLEU lc valid "
                  f"{row['valid']['bleu_lc']:5.2f}{test}", flush=True)


def main(argv=None) -> Path:
    """The command line: run the benchmark for every seed; returns the run's results folder."""
    return run(*parse_args(argv))


def run(args: Settings, course_flags: list[str]) -> Path:
    """Run the benchmark for every seed of ``args``; returns the run's results folder.

    ``course_flags``: the course pipeline's options, as written on the command line (results files record them,
    and a finished seed is skipped only when they match); ``course_lib.train``'s parser reads them once.
    """
    problem = args.problem()
    if problem:
        raise ValueError(problem)
    course = cli.parse_run_spec(course_flags)  # the course pipeline's run: the flags passed on, parsed once
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
    warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
    threads = configure_threads(args.threads)
    folder = Path(args.data_dir)
    files = {"src": [str(find_file(folder, n, args.src_lang)) for n in args.splits],
             "tgt": [str(find_file(folder, n, args.tgt_lang)) for n in args.splits]}
    references = {name: [tgt for _, tgt in data.read_parallel_files(files["src"][i], files["tgt"][i])]
                  for i, name in ((1, "valid"), (2, "test"))}
    if args.max_eval_pairs:
        references = {k: v[: args.max_eval_pairs] for k, v in references.items()}
    tokenizer = Tokenizer(args.tgt_lang)
    device = get_device(None)
    out = Path(args.results_dir) / run_name(args, course)
    key = settings_key(args, course_flags)
    print(f"torch {torch.__version__}, {threads} thread(s), device {device}; data {folder}; results {out}", flush=True)
    for seed in args.seeds:
        run_seed(seed, args, course, files, references, tokenizer, device, out, key)
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
