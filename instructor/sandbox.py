"""The sandbox a student's kernel runs in while ``scripts/grade.py`` grades a notebook.

Checked on Debian 12 with bubblewrap 0.8 (``apt-get install bubblewrap``), as root and as a user.

With bubblewrap (``bwrap``) the kernel sees only:

* the operating system and the Python installation, read-only (``/usr``, ``/etc``, the interpreter, ``.venv``);
* ``course_lib/`` and ``data/`` of this repository, read-only (the notebooks import and read them);
* its private working folder (a temporary copy of the notebook), writable;
* the folder of its own kernel sockets (Unix sockets: the kernel has no network at all), writable;
* a private ``/tmp``, ``/proc`` of its own process namespace and a minimal ``/dev`` (when the repository
  lies under ``/tmp``, the folders around its read-only parts are on that private ``/tmp``: a write there
  stays in the sandbox and disappears with it);

Not visible: ``instructor/`` (hidden tests), ``notebooks/``, ``build/`` (the gradebook), the submissions
folder and the instructor's home. It runs in new user, PID, IPC, UTS, cgroup and network namespaces, as
user ``nobody``, with every capability dropped, and dies with the grader. On top of that ``prlimit``
bounds its CPU seconds, address space, open files and file size, and a seccomp filter lets the kernel start
threads but no new process (``fork``, ``vfork``, ``clone`` without ``CLONE_THREAD``; see :func:`no_new_processes`):
the limits of ``prlimit`` hold per process, so forked children would each get their own CPU seconds and
address space and keep running after the cell that started them (``--nproc`` cannot stand in for that: it is
not enforced when the grader runs as root, and for any other user it counts all of that user's processes).

Without bubblewrap the same command runs the kernel as a separate process with the same resource limits
and, where ``unshare`` can create a network namespace, without network; the files of the machine stay
visible to it. :func:`isolation` says which of the two is in use, and ``grade.py`` prints it.
"""

from __future__ import annotations

import os
import platform
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STRONG, WEAK = "bubblewrap", "process"
NOBODY = 65534


@dataclass(frozen=True)
class Limits:
    """Resource limits of one graded notebook.

    Attributes:
        cpu_seconds: CPU time of the kernel process (SIGXCPU, then killed, beyond it).
        memory_bytes: address space of the kernel (torch reserves a lot of it: keep at least 2 GiB).
        cell_seconds: wall time of one cell before it is interrupted.
        notebook_seconds: wall time of the whole notebook; later cells are not run after it.
        file_bytes: the largest file the kernel may write.
    """

    cpu_seconds: int = 900
    memory_bytes: int = 4 << 30
    cell_seconds: float = 120.0
    notebook_seconds: float = 1200.0
    file_bytes: int = 256 << 20

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "memory_bytes", "cell_seconds", "notebook_seconds", "file_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")


@lru_cache(maxsize=1)
def isolation() -> str:
    """``"bubblewrap"`` when ``bwrap`` can create a sandbox on this machine, else ``"process"``."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return WEAK
    probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
                           capture_output=True, timeout=30)
    return STRONG if probe.returncode == 0 else WEAK


@lru_cache(maxsize=1)
def _unshare_net() -> list[str]:
    """``unshare`` arguments that take the network away, when this machine allows it (weak isolation only)."""
    unshare = shutil.which("unshare")
    if not unshare:
        return []
    for args in ([unshare, "--net"], [unshare, "--map-root-user", "--net"]):
        if subprocess.run([*args, "true"], capture_output=True, timeout=30).returncode == 0:
            return args
    return []


def _prlimit(limits: Limits) -> list[str]:
    prlimit = shutil.which("prlimit")
    if not prlimit:
        raise RuntimeError("prlimit (util-linux) is needed to limit a graded kernel's CPU time and memory")
    return [prlimit, f"--cpu={limits.cpu_seconds}", f"--as={limits.memory_bytes}", "--nofile=512",
            f"--fsize={limits.file_bytes}", "--core=0"]


# seccomp: the architecture as the kernel names it, and the numbers of clone, clone3, fork and vfork on it.
_AUDIT_ARCH = {"x86_64": (0xC000003E, 56, 435, (57, 58)), "aarch64": (0xC00000B7, 220, 435, ())}
_CLONE_THREAD, _X32_SYSCALL_BIT = 0x00010000, 0x40000000
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38


def no_new_processes() -> bytes | None:
    """A seccomp filter (classic BPF, as ``bwrap --seccomp`` reads it) that refuses new processes, or None.

    ``fork``/``vfork``, and ``clone`` without ``CLONE_THREAD``, fail with EPERM (Python raises
    ``PermissionError``); threads are allowed (they share the process's CPU-time and memory limits).
    ``clone3`` fails with ENOSYS, as on an older Linux, so the C library falls back to ``clone``, whose flags
    a filter can read. System calls of another ABI (32-bit x86, x32) are refused. None on an architecture
    this table does not know (the kernel can then start processes).
    """
    known = _AUDIT_ARCH.get(platform.machine())
    if known is None:
        return None
    arch, clone, clone3, forks = known
    deny, allow, nosys = _ERRNO | _EPERM, _ALLOW, _ERRNO | _ENOSYS
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ/JGE/JSET|K, BPF_RET|K
    prog = [(ld, 0, 0, 4),  # seccomp_data.arch
            (jeq, 1, 0, arch), (ret, 0, 0, deny),
            (ld, 0, 0, 0),  # seccomp_data.nr
            (jge, 0, 1, _X32_SYSCALL_BIT), (ret, 0, 0, deny),
            (jeq, 0, 1, clone3), (ret, 0, 0, nosys)]
    for number in forks:
        prog += [(jeq, 0, 1, number), (ret, 0, 0, deny)]
    prog += [(jeq, 1, 0, clone), (ret, 0, 0, allow),
             (ld, 0, 0, 16),  # the low 32 bits of seccomp_data.args[0]: clone's flags
             (jset, 1, 0, _CLONE_THREAD), (ret, 0, 0, deny), (ret, 0, 0, allow)]
    return b"".join(struct.pack("=HBBI", *op) for op in prog)


def _python_dirs() -> list[Path]:
    """Folders the interpreter of this environment needs: the venv and the base installation."""
    dirs = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parent.parent}
    return sorted(d for d in dirs if not str(d).startswith("/usr"))


def environment(workdir: str) -> dict[str, str]:
    """The only environment variables a graded kernel gets."""
    return {
        "HOME": workdir, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/matplotlib", "COURSE_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1", "TQDM_DISABLE": "1", "COURSE_GRADING": "1",
    }


def kernel_command(workdir: Path, socket_dir: Path, grader_dir: Path, limits: Limits) -> list[str]:
    """The command that starts a student's kernel in the sandbox; ``{connection_file}`` is filled in by jupyter.

    Args:
        workdir: the private working folder (writable; holds the copy of the notebook).
        socket_dir: the folder of the kernel's connection file and Unix sockets (writable).
        grader_dir: read-only folder with the kernel-side helper of the grader (``kernel_side.py``); the
            seccomp filter (:func:`no_new_processes`) is written there too.
        limits: the resource limits.
    """
    python = [str(Path(sys.prefix) / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    if isolation() == WEAK:
        return [*_prlimit(limits), *_unshare_net(), "env", "-i",
                *[f"{k}={v}" for k, v in environment(str(workdir)).items()], *python]
    bwrap = [shutil.which("bwrap"), "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
             "--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL",
             "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
             "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = Path("/") / link
        if target.is_symlink():
            bwrap += ["--symlink", os.readlink(target), str(target)]
        elif target.is_dir():
            bwrap += ["--ro-bind", str(target), str(target)]
    for folder in _python_dirs():
        bwrap += ["--ro-bind", str(folder), str(folder)]
    for folder in (ROOT / "course_lib", ROOT / "data"):
        bwrap += ["--ro-bind", str(folder), str(folder)]
    bwrap += ["--ro-bind", str(grader_dir), str(grader_dir),
              "--bind", str(socket_dir), str(socket_dir),
              "--bind", str(workdir), str(workdir), "--chdir", str(workdir),
              "--remount-ro", "/"]  # the sandbox's own root (holding the mount points) is read-only too
    for key, value in environment(str(workdir)).items():
        bwrap += ["--setenv", key, value]
    seccomp = no_new_processes()
    if seccomp is None:
        return [*_prlimit(limits), *bwrap, *python]
    # bwrap reads the filter from a file descriptor; jupyter closes inherited ones, so a shell opens it
    (grader_dir / "seccomp.bpf").write_bytes(seccomp)
    return [*_prlimit(limits), "/bin/sh", "-c", 'exec "$@" 3<"$0"', str(grader_dir / "seccomp.bpf"),
            *bwrap, "--seccomp", "3", *python]


def describe() -> str:
    """One line for the grader's output: how submissions are isolated here."""
    if isolation() == STRONG:
        processes = "no new processes; " if no_new_processes() else ""
        return ("sandbox: bubblewrap (no network; only course_lib/, data/ and the notebook's private copy visible; "
                f"{processes}CPU, memory and time limits)")
    net = "no network" if _unshare_net() else "network NOT blocked (unshare unavailable)"
    return (f"sandbox: WEAK isolation (bubblewrap unavailable: apt-get install bubblewrap): separate process, "
            f"private working copy, CPU/memory/time limits, {net}; the machine's files are visible to student code")
