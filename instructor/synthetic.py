"""Synthetic submissions, derived from the course notebooks (not hand-written copies of them).

Used by tests/test_instructor.py (grading three synthetic students) and by
instructor/verify_hidden_tests.py (every hidden test passes the course's solution and rejects a
lookup table of the public checker's cases).

* right: every exercise cell gets the code of its collapsed solution, inserted before the public check call;
* wrong: every exercise gets a plausible wrong answer (listed in WRONG below, per checker);
* hard-coded: every function exercise is replaced by a lookup table of the public checker's visible
  cases (recorded by spying on the public checker), which answers nothing else; one-value exercises get
  their (only) right value, which is all a quiz answer can be.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from instructor.exercise_cells import check_call, hidden_registry, is_solution_cell

ROOT = Path(__file__).resolve().parent.parent

CODE_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)

# A plausible mistake per exercise (the body of the exercise cell before its check call).
WRONG = {
    "check_head_shape": "answer_00_1 = (32, 20, 8, 16)",
    "check_longest_sentence": "def longest_sentence(pairs, tokenizer):\n    return max(g for g, _ in pairs)",
    "check_one_hot_embed": "def embed_via_one_hot(ids, weight):\n    return weight[ids.flip(-1)]  # tokens in the wrong order",
    "check_scaled_embedding": ("class ScaledEmbedding(nn.Module):  # the bug left in\n"
                               "    def __init__(self, vocab_size, d_model):\n"
                               "        super().__init__()\n"
                               "        self.embedding = nn.Embedding(vocab_size, d_model)\n\n"
                               "    def forward(self, x):\n"
                               "        return self.embedding(x) * math.sqrt(x.size(-1))"),
    "check_norms": "answer_02_3 = (16.0, 1.0, 11.31)",
    "check_dot_product_variance": "answer_04_1 = 8",
    "check_most_attended_key": 'answer_04_2 = "Katze"',
    "check_attention_by_hand": ("def attention_by_hand(q, k, v, mask=None):\n"
                                "    scores = q @ k.transpose(-2, -1)  # forgot / sqrt(d_k)\n"
                                "    if mask is not None:\n"
                                "        scores = scores.masked_fill(~mask, float('-inf'))\n"
                                "    return scores.softmax(dim=-1) @ v"),
    "check_decoder_mask": ("def decoder_mask(tgt, pad_id=0):\n"
                           "    n = tgt.size(1)\n"
                           "    return (tgt != pad_id)[:, None, None, :] & torch.ones(n, n, dtype=torch.bool).triu()"),
    "check_picture": "picture = [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]",
    "check_fixed_masks": ("def fixed_masks(src, tgt, pad_id=0):\n"
                          "    n = tgt.size(1)\n"
                          "    return (src == pad_id)[:, None, None, :], torch.ones(n, n, dtype=torch.bool).triu(1)"),
}

# Answers only the inputs the public checker showed it (compared value by value), garbage otherwise.
LOOKUP_TABLE = '''
def _same(a, b):
    import torch
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b

_visible = []
def _spy(*args):
    out = {name}(*args)
    _visible.append((args, out))
    return out

{module}.{checker}(_spy{rest}, quiet=True)  # record the visible cases and their answers
print(f"hard-coded {{len(_visible)}} visible cases")

def {name}(*args):
    for seen, out in _visible:
        if _same(seen, args):
            return out
    return _visible[0][1]  # an input it has never seen: answer anything
'''


# Solutions written as prose, without a code block: the answer in code.
PROSE_SOLUTIONS = {
    "check_recipe_fix": 'answer_10_4 = {"B", "D"}',
}


def solution_code(nb, index: int) -> str:
    """The Python code of the collapsed solution that follows cell ``index``."""
    for cell in nb.cells[index + 1:index + 3]:
        if is_solution_cell(cell):
            code = "\n".join(block.rstrip() for block in CODE_BLOCK.findall(cell.source))
            if code:
                return code
            found = check_call(nb.cells[index].source)
            if found and found[1] in PROSE_SOLUTIONS:
                return PROSE_SOLUTIONS[found[1]]
            raise LookupError(f"the solution after cell {index} has no code block: add it to PROSE_SOLUTIONS")
    raise LookupError(f"no solution cell after cell {index}")


def with_solution(before: str, solution: str) -> str:
    """The exercise code ``before`` its check call, answered with ``solution``.

    A solution that is a whole definition or assignment is appended (it replaces the stub); one that is
    a fragment (an indented line fixing one line of a given function) replaces the line it fixes.
    """
    try:
        compile(solution, "<solution>", "exec")
    except SyntaxError:
        lines = before.splitlines()
        for fix in solution.splitlines():
            lhs = fix.split("=")[0].rstrip()
            matches = [i for i, line in enumerate(lines) if line.split("=")[0].rstrip() == lhs]
            if not fix.strip() or len(matches) != 1:
                raise ValueError(f"cannot place the solution fragment {fix!r}") from None
            lines[matches[0]] = fix
        return "\n".join(lines)
    return f"{before}\n\n{solution}"


def hardcoded_source(before: str, solution: str, module: str, checker: str, arguments: str) -> str:
    """The exercise answered by a lookup table of the public checker's visible cases (see LOOKUP_TABLE)."""
    name, *others = [a.strip() for a in arguments.split(",")]
    rest = "".join(f", {a}" for a in others)
    table = LOOKUP_TABLE.format(name=name, module=module, checker=checker, rest=rest)
    return f"{with_solution(before, solution)}\n{table}"


def _split_check(source: str) -> tuple[str, str]:
    """(source before the check call, the check call line)."""
    lines = source.rstrip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"nb\d\d\.check_", lines[i]):
            return "\n".join(lines[:i]), "\n".join(lines[i:])
    raise ValueError("no check call in the exercise cell")


def make_submission(course_nb: Path, student_nb: Path, kind: str, target: Path) -> None:
    """Write ``target``: the student edition ``student_nb`` with every exercise answered the ``kind`` way."""
    course = nbformat.read(course_nb, as_version=4)
    answers = {}  # checker -> new source of the exercise cell
    registry = hidden_registry()
    for index, cell in enumerate(course.cells):
        found = check_call(cell.source) if cell.cell_type == "code" else None
        if not found:
            continue
        module, checker, arguments = found
        before, check = _split_check(cell.source)
        solution = solution_code(course, index)
        if kind == "right":
            answers[checker] = f"{with_solution(before, solution)}\n\n{check}"
        elif kind == "wrong":
            answers[checker] = f"{before}\n\n{WRONG[checker]}\n\n{check}"
        elif kind == "hardcoded":
            test = registry[(module, checker)]
            if test.kind == "value":
                answers[checker] = f"{with_solution(before, solution)}\n\n{check}"
            else:
                answers[checker] = f"{hardcoded_source(before, solution, module, checker, arguments)}\n{check}"
        else:
            raise ValueError(f"kind must be right, wrong or hardcoded, got {kind!r}")
    nb = nbformat.read(student_nb, as_version=4)
    for cell in nb.cells:
        found = check_call(cell.source) if cell.cell_type == "code" else None
        if found and found[1] in answers:
            cell.source = answers.pop(found[1])
    if answers:
        raise LookupError(f"exercise cells not found in the student edition: {sorted(answers)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)


# ------------------------------------------------------------------------------------------------
# attack notebooks (tests/test_grading.py): each must earn exactly what its honest work earns
# ------------------------------------------------------------------------------------------------

REPLACE_GRADER = '''import sys, types, torch
fake = types.ModuleType("hidden_tests")
fake.grade = lambda *a, **k: print("the hidden tests pass")
sys.modules["hidden_tests"] = fake
torch.allclose = lambda *a, **k: True
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
for name in list(sys.modules):
    if "grader" in name and hasattr(sys.modules[name], "OBJECTS"):
        sys.modules[name].OBJECTS = {}  # the grader's handles to the answers
'''

SPY = '''import glob, os
found = []
for pattern in ("/work/*/instructor/hidden_tests/*.py", "{root}/instructor/hidden_tests/*.py", "/tmp/*/*/*.py",
                "/tmp/*/*/*/*.py"):
    found += [p for p in glob.glob(pattern) if "hidden_tests" in p and not p.endswith("rules.py")]
for path in found:
    print("HIDDEN SOURCE", path, open(path).read())
for target in ("{root}/instructor/hidden_tests/pwned.py", "{submissions}/pwned.txt", "{root}/pwned.txt"):
    try:
        open(target, "w").write("pwned")
        print("WROTE", target)
    except OSError as exc:
        print("cannot write", target)
try:
    print("OTHERS", os.listdir("{submissions}"))
except OSError:
    print("cannot list the submissions")
'''

# Asks for 4x the sandbox's address-space limit at once (bytearray and torch), then keeps adding 100 MB chunks
# until refused, and lets them go so that the honest work after it can still run. The chunks are torch.empty
# (address space, which is what the limit counts, but not yet memory): filling them (bytearray) runs at about
# 300 MB/s on a loaded 2-core VM, so the cell timeout, not the memory limit, would stop it in the tests.
MEMORY = '''import resource, torch
limit = resource.getrlimit(resource.RLIMIT_AS)[0]
limit = 16 << 30 if limit == resource.RLIM_INFINITY else limit
for grab in (lambda: bytearray(4 * limit), lambda: torch.empty(4 * limit, dtype=torch.uint8)):
    try:
        grab()
        print("GOT 4x the memory limit")
    except (MemoryError, RuntimeError) as exc:
        print("refused:", type(exc).__name__)
hog = []
try:
    while True:
        hog.append(torch.empty(100 << 20, dtype=torch.uint8))
finally:
    print(f"stopped after {len(hog)} chunks of 100 MB")
    hog.clear()
'''

# Many ``sleep`` children, and one double-forked grandchild in its own session (out of the kernel's process
# tree), all sleeping for FORK_SECONDS, longer than the grading takes: the sandbox must refuse them or end them.
FORK = '''import os, subprocess
children = []
for _ in range({n}):
    try:
        children.append(subprocess.Popen(["sleep", "{seconds}"]))
    except OSError as exc:
        print("refused after", len(children), "children:", type(exc).__name__)
        break
print("started", len(children), "children")
pid = os.fork()
if pid == 0:
    try:
        if os.fork() == 0:
            os.setsid()
            os.execvp("sleep", ["sleep", "{seconds}"])
    finally:
        os._exit(0)
_ = os.waitpid(pid, 0)
'''
FORK_SECONDS = "600.4217"  # an unusual duration: the leftover processes are recognised by it

# Burns CPU on every core it can get: forked processes that spin forever (they would outlive the cell, each with
# a CPU-time limit of its own), then matrix products on one thread per core until the cell is stopped.
CPU_BURN = '''import multiprocessing, os, torch
def spin():
    while True:
        pass
burners = []
try:
    for _ in range({n}):
        burners.append(multiprocessing.get_context("fork").Process(target=spin, daemon=True))
        burners[-1].start()
except OSError as exc:
    print("refused after", len(burners) - 1, "processes:", type(exc).__name__)
torch.set_num_threads(os.cpu_count())
a = torch.randn(512, 512)
while True:
    a = (a @ a).tanh()
'''

ATTACKS = ("replace_grader", "spy", "loop", "crash", "moved_cells", "truncated", "memory", "fork", "cpu_burn")


def make_attack(honest: Path, attack: str, target: Path, root: Path, submissions: Path) -> None:
    """Write ``target``: the honest submission ``honest`` with one attack added (see ATTACKS)."""
    if attack == "truncated":
        data = honest.read_bytes()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data[: len(data) // 2])
        return
    nb = nbformat.read(honest, as_version=4)
    exercise_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and check_call(c.source)]
    tests = [i for i, c in enumerate(nb.cells) if "graded-exercise" in c.metadata.get("tags", [])]
    first = exercise_cells[0]
    if attack == "replace_grader":
        nb.cells.insert(first, nbformat.v4.new_code_cell(REPLACE_GRADER))
        nb.cells.append(nbformat.v4.new_code_cell(REPLACE_GRADER))
    elif attack == "spy":
        nb.cells.insert(first, nbformat.v4.new_code_cell(SPY.format(root=root, submissions=submissions)))
    elif attack == "loop":
        nb.cells.insert(first + 1, nbformat.v4.new_code_cell("while True:\n    pass"))
    elif attack == "crash":
        nb.cells.insert(first + 1, nbformat.v4.new_code_cell("import os\nos._exit(1)"))
    elif attack == "memory":
        nb.cells.insert(first, nbformat.v4.new_code_cell(MEMORY))
    elif attack == "fork":
        nb.cells.insert(first, nbformat.v4.new_code_cell(FORK.format(n=200, seconds=FORK_SECONDS)))
    elif attack == "cpu_burn":
        nb.cells.insert(first, nbformat.v4.new_code_cell(CPU_BURN.format(n=4)))
    elif attack == "moved_cells":  # the last test cell deleted, the first one moved to the top
        moved = nb.cells[tests[0]]
        for index in sorted({tests[0], tests[-1]}, reverse=True):
            del nb.cells[index]
        nb.cells.insert(0, moved)
    else:
        raise ValueError(f"attack must be one of {ATTACKS}, got {attack!r}")
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
