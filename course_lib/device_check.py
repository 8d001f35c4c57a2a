"""Check an accelerator before an hour of training: one batch through the course model on the CPU and on it.

Learners of other courses keep meeting a GPU or Apple MPS set-up that runs but computes something else
(NaN, or numbers that drift from the CPU's). :func:`check_device` builds the course's default model with
fixed weights, runs the same batch on the CPU and on the accelerator (float32, then the mixed precision that
training would use) and one training step on each, and compares: logits, loss and gradients. A working
set-up agrees to float32 rounding (about 1e-5); mixed precision to about 1e-2. Run it as
``python -m course_lib.device_check`` or from notebook 00's set-up check.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .devices import autocast, autocast_dtype, describe_device, describe_precision, get_device
from .model import Transformer, TransformerConfig

FLOAT32_TOLERANCE = 1e-3  # largest |logit difference| accepted in float32 (rounding gives ~1e-5)
MIXED_TOLERANCE = 0.25  # in bfloat16/float16 (rounding gives ~1e-2 on logits of size ~5)
GRADIENT_COSINE = 0.999  # the two gradients must point the same way


@dataclass
class DeviceCheck:
    """What :func:`check_device` found.

    Attributes:
        device: the accelerator checked (``"cpu"`` when there is none).
        lines: one line per comparison, for printing.
        ok: True when every comparison held (also True when there was nothing to compare).
    """

    device: str
    lines: list[str] = field(default_factory=list)
    ok: bool = True

    def add(self, what: str, value: float, limit: float, good: bool) -> None:
        self.ok = self.ok and good
        self.lines.append(f"{'ok  ' if good else 'FAIL'} {what}: {value:.2e} (limit {limit:.0e})")

    def __str__(self) -> str:
        verdict = "the accelerator computes what the CPU computes" if self.ok else \
            "the accelerator disagrees with the CPU: fix the set-up (driver, PyTorch build) or train with --device cpu"
        return "\n".join([*self.lines, verdict]) if self.lines else self.lines_for_cpu()

    def lines_for_cpu(self) -> str:
        return "no accelerator found (CUDA or Apple MPS): the course runs on the CPU, nothing to compare"


def _batch(config: TransformerConfig, generator: torch.Generator):
    src = torch.randint(4, config.src_vocab_size, (8, 12), generator=generator)  # (batch, src_len)
    tgt = torch.randint(4, config.tgt_vocab_size, (8, 10), generator=generator)  # (batch, tgt_len + 1)
    src[:4, 9:] = config.pad_id  # some padding, so the masks are exercised
    return src, tgt[:, :-1], tgt[:, 1:]


def _step(model: Transformer, batch, device: torch.device, dtype: torch.dtype | None):
    """Logits, loss and parameter gradients (on the CPU) of one forward and backward pass on ``device``."""
    model = model.to(device).train()
    src, tgt_in, tgt_out = (t.to(device) for t in batch)
    with autocast(device, dtype):
        logits = model(src, tgt_in)  # (batch, tgt_len, vocab)
    loss = F.cross_entropy(logits.float().flatten(0, 1), tgt_out.flatten(), ignore_index=model.config.pad_id)
    model.zero_grad()
    loss.backward()
    gradient = torch.cat([p.grad.flatten().float().cpu() for p in model.parameters() if p.grad is not None])
    return logits.detach().float().cpu(), float(loss.detach()), gradient


def check_device(device: str | torch.device | None = None, precision: str = "auto", seed: int = 0) -> DeviceCheck:
    """Compare the course model on ``device`` with the same model on the CPU.

    Args:
        device: the accelerator; default :func:`~course_lib.devices.get_device` (the CPU means nothing to check).
        precision: the mixed precision to check besides float32, as in training (``"auto"``: bf16 or fp16 on CUDA).
        seed: seeds the weights and the batch.

    Returns:
        A :class:`DeviceCheck`; ``print()`` it.
    """
    device = get_device(device)
    report = DeviceCheck(describe_device(device))
    if device.type == "cpu":
        return report
    generator = torch.Generator().manual_seed(seed)
    config = TransformerConfig(src_vocab_size=200, tgt_vocab_size=180, dropout=0.0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Transformer(config)
    batch = _batch(config, generator)
    cpu_logits, cpu_loss, cpu_gradient = _step(copy.deepcopy(model), batch, torch.device("cpu"), None)
    report.lines.append(f"device: {report.device}")
    runs = [("float32", None)]
    mixed = autocast_dtype(device, precision)
    if mixed is not None:
        runs.append((describe_precision(device, precision), mixed))
    for name, dtype in runs:
        logits, loss, gradient = _step(copy.deepcopy(model), batch, device, dtype)
        limit = FLOAT32_TOLERANCE if dtype is None else MIXED_TOLERANCE
        finite = bool(torch.isfinite(logits).all()) and bool(torch.isfinite(gradient).all())
        difference = float((logits - cpu_logits).abs().max()) if finite else float("inf")
        report.add(f"{name}: largest logit difference", difference, limit, finite and difference <= limit)
        report.add(f"{name}: loss difference", abs(loss - cpu_loss), limit / 10, abs(loss - cpu_loss) <= limit / 10)
        cosine = float(F.cosine_similarity(gradient, cpu_gradient, dim=0)) if finite else 0.0
        report.add(f"{name}: 1 - gradient cosine", 1 - cosine, 1 - GRADIENT_COSINE, cosine >= GRADIENT_COSINE)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m course_lib.device_check [--device cuda] [--precision auto]``: exit status 1 if a check fails."""
    parser = argparse.ArgumentParser(prog="python -m course_lib.device_check", description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="the accelerator to check (default: $COURSE_DEVICE, else CUDA, else MPS)")
    parser.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16", "fp16"))
    args = parser.parse_args(argv)
    report = check_device(args.device, args.precision)
    print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
