"""A student's kernel in the sandbox, and running code in it with time limits (used by ``instructor/executor.py``).

The executor talks to the kernel with ``jupyter_client`` directly (the layer nbclient and nbgrader are
built on): the kernel is started by ``instructor/sandbox.py``'s command over Unix sockets (the sandbox
has no network), every cell runs under a wall-time limit and is interrupted after it, and a dead kernel
(a crash, the memory or CPU limit, ``exit()``) is noticed within a second instead of at the timeout.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

from instructor import sandbox

HERE = Path(__file__).resolve().parent
KERNEL_SIDE = HERE / "grader_kernel_side.py"


class KernelDied(RuntimeError):
    """The kernel is gone; nothing more can run in it."""


@dataclass
class Execution:
    """What one piece of code did: ``status`` is "ok", "error", "timeout" or "dead"."""

    status: str
    outputs: list = field(default_factory=list)
    error: str = ""


class SandboxedKernel:
    """A fresh kernel for one notebook, in its own sandbox, with its own private folders.

    Args:
        notebook_copy: bytes of the notebook, written into the private working folder.
        name: the notebook's file name there.
        limits: the sandbox's resource limits.
        extra_files: more files to put next to the notebook (e.g. pages the notebook links to).
    """

    def __init__(self, notebook_copy: bytes, name: str, limits: sandbox.Limits, extra_files: tuple[Path, ...] = ()):
        self.limits = limits
        self.tmp = Path(tempfile.mkdtemp(prefix="course-grading-"))
        self.workdir = self.tmp / "work"
        self.sockets = self.tmp / "sockets"
        self.grader_dir = self.tmp / "grader"
        self.exchange = self.sockets / "exchange"
        for folder in (self.workdir, self.exchange, self.grader_dir, self.tmp / "spec" / "sandboxed"):
            folder.mkdir(parents=True)
        (self.workdir / name).write_bytes(notebook_copy)
        for extra in extra_files:
            shutil.copy2(extra, self.workdir / extra.name)
        shutil.copy2(KERNEL_SIDE, self.grader_dir / KERNEL_SIDE.name)  # the rules come with each graded call
        argv = sandbox.kernel_command(self.workdir, self.sockets, self.grader_dir, limits)
        spec = {"argv": argv, "display_name": "sandboxed python3", "language": "python",
                "interrupt_mode": "message"}  # a signal would hit bubblewrap, not the kernel
        (self.tmp / "spec" / "sandboxed" / "kernel.json").write_text(json.dumps(spec))
        self.km = KernelManager(kernel_name="sandboxed", transport="ipc", ip=str(self.sockets / "k"),
                                kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(self.tmp / "spec")]))
        self.km.connection_file = str(self.sockets / "connection.json")
        self.client = None
        self.boot_threads: tuple[int, ...] = ()  # the kernel's threads before any cell ran

    def start(self, startup_seconds: float = 120.0) -> None:
        """Start the kernel, wait until it answers, and import the grader's helper in it."""
        self.km.start_kernel(cwd=str(self.workdir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = self.km.client()
        self.client.start_channels()
        try:
            self.client.wait_for_ready(timeout=startup_seconds)
        except RuntimeError as exc:
            raise KernelDied(f"the kernel did not start: {exc}") from None
        # The helper is loaded from its file, as the module "grader_kernel_side" (the name the grader's requests
        # use in the kernel), without adding the grader's folder to the kernel's import path.
        helper = str(self.grader_dir / KERNEL_SIDE.name)
        boot = ("import sys\nimport importlib.util as _grader_util\n"
                f"_grader_spec = _grader_util.spec_from_file_location('grader_kernel_side', {helper!r})\n"
                "sys.modules['grader_kernel_side'] = _grader_util.module_from_spec(_grader_spec)\n"
                "_grader_spec.loader.exec_module(sys.modules['grader_kernel_side'])\n"
                f"sys.modules['grader_kernel_side'].EXCHANGE = {str(self.exchange)!r}\n"
                "del _grader_util, _grader_spec\n"
                "print(sorted(sys._current_frames()))")
        result = self.execute(boot, timeout=60, silent=False)
        if result.status != "ok":
            raise KernelDied(f"the grader's helper could not start in the kernel: {result.error}")
        printed = "".join(str(o.get("text", "")) for o in result.outputs if o.get("output_type") == "stream")
        self.boot_threads = tuple(int(n) for n in printed.strip().strip("[]").split(",") if n.strip())

    def alive(self) -> bool:
        return self.km.is_alive()

    def interrupt(self) -> None:
        if self.alive():
            self.km.interrupt_kernel()

    def execute(self, code: str, timeout: float, silent: bool = False) -> Execution:
        """Run ``code``; interrupt it after ``timeout`` seconds; notice a dead kernel within a second."""
        if not self.alive():
            return Execution("dead", error="the kernel is not running")
        msg_id = self.client.execute(code, silent=silent, store_history=not silent, allow_stdin=False)
        outputs, error, deadline, status = [], "", time.monotonic() + timeout, None
        interrupted_at = None
        while True:
            try:
                msg = self.client.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                msg = None
            if msg is not None and msg.get("parent_header", {}).get("msg_id") == msg_id:
                kind = msg["msg_type"]
                if kind == "status" and msg["content"]["execution_state"] == "idle":
                    break
                if kind in ("stream", "display_data", "execute_result", "error"):
                    outputs.append(nbformat.v4.output_from_msg(msg))
                    if kind == "error":
                        error = f"{msg['content'].get('ename')}: {msg['content'].get('evalue')}"
                continue
            if msg is not None:
                continue
            if not self.alive():
                return Execution("dead", outputs, error or "the kernel died")
            now = time.monotonic()
            if interrupted_at is None and now > deadline:
                self.interrupt()
                interrupted_at, status = now, "timeout"
            elif interrupted_at is not None and now > interrupted_at + 15:
                self.shutdown()  # it does not even answer the interrupt
                return Execution("dead", outputs, "the kernel did not answer an interrupt")
        try:
            reply = self.client.get_shell_msg(timeout=10)
            while reply.get("parent_header", {}).get("msg_id") != msg_id:
                reply = self.client.get_shell_msg(timeout=10)
        except queue.Empty:
            reply = {"content": {"status": "error"}}
        if status is None:
            status = "ok" if reply["content"].get("status") == "ok" else "error"
        return Execution(status, outputs, error)

    def shutdown(self) -> None:
        try:
            if self.client is not None:
                self.client.stop_channels()
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=True)
        except Exception:  # best effort: the folder goes anyway
            pass

    def close(self) -> None:
        self.shutdown()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> SandboxedKernel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
