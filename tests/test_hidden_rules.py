"""The hidden tests enforce the exercises' rules (instructor/hidden_tests/rules.py).

For every graded coding exercise of notebooks 00-14 (found from the notebooks' ``nbNN.check_...`` calls and
the hidden tests' registry), answers are written the way a kernel runs them (one fake cell file per cell,
its source in ``linecache``, as ipykernel does) and graded with ``hidden_tests.evaluate``:

* the course's own solution (the collapsed solution cell, as ``instructor/synthetic.py`` reads it) earns
  full points;
* answers that use course_lib's solution score 0 with an "own code" reason: an alias of the course_lib
  function or class, a wrapper calling it through a name imported in another cell, ``import course_lib as
  c`` in the exercise cell, ``__import__`` inside the function, and a name built at run time that only the
  call trace can see. With the rules switched off the wrapper passes the hidden test: the rule, not a
  wrong value, is what stops it;
* answers that break a "without X" rule (softmax in 04.3, ``weight[ids]`` in 02.1, loops in 03.2, ...)
  score 0 with a "without"/"no loops" reason, and pass with the rules switched off.

Runs in about 30 s on one thread.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import re
from pathlib import Path

import nbformat
import pytest

from instructor import hidden_tests, partial_credit
from instructor.exercise_cells import check_call, is_solution_cell
from instructor.hidden_tests.rules import rules_enforced

ROOT = Path(__file__).resolve().parent.parent

CODE_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
CELL_DIR = Path("/tmp/ipykernel_hidden_rules")  # a kernel's cells live in files like /tmp/ipykernel_<pid>/<n>.py
_cells = itertools.count()

# exercise -> (course_lib module, attribute that solves it, wrapper: the answer calling it through {ref}).
# The wrapper must compute the right answer (checked with the rules off).
CHEATS = {
    "00.2": ("course_lib.exercises.nb00", "_reference_longest",
             "def longest_sentence(pairs, tokenizer):\n    return {ref}(pairs, tokenizer)"),
    "01.1": ("course_lib.exercises.nb01", "_reference_encode", "def encode(tokens, stoi):\n    return {ref}(tokens, stoi)"),
    "01.4": ("course_lib.bpe", "merge_pair", "def merge_pair_mine(word_symbols, pair):\n    return {ref}(word_symbols, pair)"),
    "02.1": ("course_lib.exercises.nb02", "_reference_one_hot_embed",
             "def embed_via_one_hot(ids, weight):\n    return {ref}(ids, weight)"),
    "02.2": ("course_lib.embeddings", "TokenEmbedding",
             "class ScaledEmbedding(nn.Module):\n    def __init__(self, vocab_size, d_model):\n        super().__init__()\n"
             "        self.inner = {ref}(vocab_size, d_model)\n        self.embedding = self.inner.embedding\n\n"
             "    def forward(self, x):\n        return self.inner(x)"),
    "03.1": ("course_lib.embeddings", "sinusoidal_table", "def fixed_table(max_len, d_model):\n    return {ref}(max_len, d_model)"),
    "03.2": ("course_lib.exercises.nb03", "reference_encode_positions",
             "def encode_positions(positions, d_model):\n    return {ref}(positions, d_model)"),
    "04.3": ("course_lib.attention", "scaled_dot_product_attention",
             "def attention_by_hand(q, k, v, mask=None):\n    return {ref}(q, k, v, mask)[0]"),
    "05.1": ("course_lib.exercises.nb05", "_reference_split", "def split_heads(x, n_heads):\n    return {ref}(x, n_heads)"),
    "05.3": ("course_lib.attention.MultiHeadAttention", "forward",
             "def multi_head_attention(x, mha):\n    return {ref}(mha, x, x, x)"),
    "06.1": ("course_lib.masks", "decoder_self_attention_mask", "def decoder_mask(tgt, pad_id=0):\n    return {ref}(tgt, pad_id)"),
    "06.3": ("course_lib.masks", "decoder_self_attention_mask",
             "def fixed_masks(src, tgt, pad_id=0):\n    return (src != pad_id)[:, None, None, :], {ref}(tgt, pad_id)"),
    "06.4": ("course_lib.compat", "to_torch_attn_mask",
             "def to_pytorch(src_mask, tgt_mask):\n    return ~src_mask[:, 0, 0], {ref}(tgt_mask, as_additive=True)"),
    "07.1": ("course_lib.exercises.nb07", "reference_fold_layer_norm",
             "def fold_layer_norm(norm, linear):\n    return {ref}(norm, linear)"),
    "07.2": ("course_lib.exercises.nb07", "_layer_norm",
             "def fixed_norm(x, weight, bias, eps=1e-5):\n    return {ref}(x, weight, bias, eps)"),
    "07.4": ("course_lib.exercises.nb07", "_reference_pre_norm",
             "def pre_norm_sublayer(x, sublayer, norm):\n    return {ref}(x, sublayer, norm)"),
    "08.2": ("course_lib.layers.EncoderLayer", "forward",
             "def post_norm_layer(parts, x, src_mask):\n    return {ref}(parts, x, src_mask)"),
    "09.1": ("course_lib.exercises.nb09", "reference_shift_right", "def shift_right(ids):\n    return {ref}(ids)"),
    "09.3": ("course_lib.exercises.nb09", "reference_greedy_step",
             "def greedy_step(model, memory, src, tokens):\n    return {ref}(model, memory, src, tokens)"),
    "10.1": ("course_lib.schedule", "noam_lr",
             "def warmup_lr(step, d_model, warmup, factor):\n    return {ref}(step, d_model, warmup, factor)"),
    "10.2": ("course_lib.losses", "smoothed_target_distribution",
             "def smoothed_targets(target, num_classes, smoothing, pad_id=0):\n"
             "    return {ref}(target, num_classes, smoothing, pad_id)"),
    "10.3": ("course_lib.data", "padding_fraction",
             "def batch_padding_fraction(lengths):\n    return {ref}([list(range(len(lengths)))], lengths)"),
    "11.1": ("course_lib.exercises.nb11", "reference_beam_step",
             "def beam_step(scores, log_probs, k):\n    return {ref}(scores, log_probs, k)"),
    "12.1": ("course_lib.exercises.nb12", "reference_rms_norm", "def rms_norm(x, weight, eps=1e-6):\n    return {ref}(x, weight, eps)"),
    "12.2": ("course_lib.model", "Transformer",
             "def count_parameters(config):\n    with torch.device('meta'):\n        return {ref}(config).num_parameters()"),
    "12.3": ("course_lib.exercises.nb12", "reference_rotate_pair",
             "def rotate_pair(pair, positions, theta):\n    return {ref}(pair, positions, theta)"),
    "13.1": ("course_lib.layers", "LayerNorm",
             "class RepairedLayerNorm(nn.Module):\n    def __init__(self, d_model, eps=1e-5):\n        super().__init__()\n"
             "        self.d_model, self.eps, self.use_fused = d_model, eps, True\n"
             "        self.weight = nn.Parameter(torch.ones(d_model))\n        self.bias = nn.Parameter(torch.zeros(d_model))\n\n"
             "    def forward(self, x):\n        return {ref}.forward(self, x)"),
    "14.1": ("course_lib.recipe", "peak_lr_for", "def peak_lr(d_model, layers):\n    return {ref}(d_model, layers)"),
    "14.2": ("course_lib.loading", "unknown_rate",
             "def unknown_rate_of(token_lists, vocab):\n    return {ref}([(s, s) for s in token_lists], vocab, vocab)[0]"),
    "15.1": ("course_lib.gpt", "next_token_probs",
             "def next_token_probs_mine(logits, temperature=1.0, top_k=None):\n    return {ref}(logits, temperature, top_k)"),
    "15.2": ("course_lib.gpt", "language_model_loss",
             "def language_model_loss_mine(logits, ids, pad_id):\n    return {ref}(logits, ids, pad_id)"),
}

# Right answers that break a "without X" rule: (exercise, what it does, the exercise cell's answer, expected rule).
WITHOUT = [
    ("04.3", "torch.softmax", "def attention_by_hand(q, k, v, mask=None):\n{scores}\n    return torch.softmax(s, dim=-1) @ v",
     "without"),
    ("04.3", "F.softmax", "def attention_by_hand(q, k, v, mask=None):\n{scores}\n    return F.softmax(s, -1) @ v", "without"),
    ("04.3", "Tensor.softmax", "def attention_by_hand(q, k, v, mask=None):\n{scores}\n    return s.softmax(-1) @ v", "without"),
    ("04.3", "nn.Softmax", "def attention_by_hand(q, k, v, mask=None):\n{scores}\n    return nn.Softmax(dim=-1)(s) @ v",
     "without"),
    ("04.3", "log_softmax then exp", "def attention_by_hand(q, k, v, mask=None):\n{scores}\n"
     "    return s.log_softmax(-1).exp() @ v", "without"),
    ("04.3", "softmax renamed in another cell", "_normalise = torch.softmax\n\n"
     "def attention_by_hand(q, k, v, mask=None):\n{scores}\n    return _normalise(s, -1) @ v", "without"),
    ("04.3", "softmax reached with getattr", "def attention_by_hand(q, k, v, mask=None):\n{scores}\n"
     "    return getattr(torch, 'soft' + 'max')(s, -1) @ v", "without"),
    ("04.3", "F.scaled_dot_product_attention", "def attention_by_hand(q, k, v, mask=None):\n"
     "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)", "without"),
    ("02.1", "F.one_hot", "def embed_via_one_hot(ids, weight):\n"
     "    return F.one_hot(ids, weight.size(0)).to(weight.dtype) @ weight", "without"),
    ("02.1", "weight[ids]", "def embed_via_one_hot(ids, weight):\n    return weight[ids]", "without"),
    ("02.1", "F.embedding", "def embed_via_one_hot(ids, weight):\n    return F.embedding(ids, weight)", "without"),
    ("02.1", "rows of an identity matrix", "def embed_via_one_hot(ids, weight):\n"
     "    return torch.eye(weight.size(0), dtype=weight.dtype)[ids] @ weight", "without"),
    ("03.2", "a comprehension", "def encode_positions(positions, d_model):\n"
     "    omega = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)\n"
     "    rows = [torch.stack([torch.sin(p * omega), torch.cos(p * omega)], -1).flatten() for p in positions.double()]\n"
     "    return torch.stack(rows).float()", "no loops"),
    ("03.2", "a for loop", "def encode_positions(positions, d_model):\n"
     "    pe = torch.zeros(len(positions), d_model)\n    for i in range(0, d_model, 2):\n"
     "        angle = positions.double() / 10000 ** (i / d_model)\n"
     "        pe[:, i], pe[:, i + 1] = torch.sin(angle), torch.cos(angle)\n    return pe", "no loops"),
    ("07.2", "F.layer_norm", "def fixed_norm(x, weight, bias, eps=1e-5):\n"
     "    return torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)", "without"),
    ("13.1", "nn.LayerNorm inside", "class RepairedLayerNorm(nn.Module):\n    def __init__(self, d_model, eps=1e-5):\n"
     "        super().__init__()\n        self.norm = nn.LayerNorm(d_model, eps=eps)\n\n"
     "    def forward(self, x):\n        return self.norm(x)", "without"),
    ("12.1", "F.rms_norm", "def rms_norm(x, weight, eps=1e-6):\n    return F.rms_norm(x, x.shape[-1:], weight, eps)",
     "without"),
    ("12.3", "complex numbers", "def rotate_pair(pair, positions, theta):\n"
     "    z = torch.view_as_complex(pair.contiguous())\n"
     "    return torch.view_as_real(z * torch.polar(torch.ones_like(positions.double()), positions.double() * theta))",
     "without"),
    ("08.2", "the layer's own forward", "def post_norm_layer(parts, x, src_mask):\n    return parts(x, src_mask)", "own code"),
    ("09.3", "course_lib's greedy decoding", "def greedy_step(model, memory, src, tokens):\n"
     "    from course_lib.decoding import greedy_decode as gd\n    return gd(model, src)", "own code"),
]
SCORES = ("    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
          "    if mask is not None:\n        s = s.masked_fill(~mask, float('-inf'))")
WITHOUT_OFF_FAILS = {"08.2", "09.3", "12.3"}  # wrong anyway or not comparable with the rules off: not checked there


def _notebook(module: str) -> Path:
    return next((ROOT / "notebooks").glob(f"{module[2:]}_*.ipynb"))


def _exercises() -> dict[str, dict]:
    """exercise -> module, checker, arguments, the cell's code before its check call, the solution, the imports."""
    registry = hidden_tests.load_all()
    found = {}
    for test in registry.values():
        if test.kind != hidden_tests.FUNCTION:
            continue
        nb = nbformat.read(_notebook(test.module), as_version=4)
        imports = []
        for cell in nb.cells:
            if cell.cell_type != "code" or cell.source.lstrip().startswith("%%"):
                continue  # a cell magic (%%my_part) is not Python
            source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line  # line magics: blank lines
                                for line in cell.source.splitlines())
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            imports += [ast.get_source_segment(source, node) for node in tree.body
                        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
                            isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant))]
        for index, cell in enumerate(nb.cells):
            call = check_call(cell.source) if cell.cell_type == "code" else None
            if not call or call[:2] != (test.module, test.checker):
                continue
            solution = next((c for c in nb.cells[index + 1:index + 3] if is_solution_cell(c)), None)
            if solution is None:
                continue
            lines = cell.source.rstrip().splitlines()
            cut = max(i for i, line in enumerate(lines) if re.match(r"nb\d\d\.check_", line))
            code = "\n".join(block.rstrip() for block in CODE_BLOCK.findall(solution.source))
            found[test.exercise] = {"module": test.module, "checker": test.checker, "arguments": call[2],
                                    "before": "\n".join(lines[:cut]), "solution": code, "imports": imports}
    return found


EXERCISES = _exercises()


@pytest.fixture(scope="module")
def namespaces():
    """One namespace per notebook with its imports done (as the kernel has them when the exercise runs)."""
    cache: dict[str, dict] = {}

    def get(module: str) -> dict:
        if module not in cache:
            namespace = {"__name__": "__main__"}
            exercise = next(e for e in EXERCISES.values() if e["module"] == module)
            for statement in exercise["imports"]:
                try:
                    exec(statement, namespace)
                except Exception:  # plotting or widget imports this test does not need
                    pass
            cache[module] = namespace
        return cache[module]

    return get


def run_cell(source: str, namespace: dict) -> None:
    """Execute ``source`` as a kernel runs a cell: from its own file, with its source in linecache."""
    filename = str(CELL_DIR / f"{next(_cells)}.py")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)


def grade(exercise: str, answer: str, namespaces, setup: str = "", honest_first: bool = True):
    """The verdict of the exercise cell answered with ``answer`` (after the course's solution, so that the
    other functions of a two-function exercise stay right), ``setup`` run in a cell of its own before."""
    e = EXERCISES[exercise]
    namespace = dict(namespaces(e["module"]))
    if setup:
        run_cell(setup, namespace)
    solution = _with_solution(e["before"], e["solution"])
    run_cell(f"{solution}\n\n{answer}" if honest_first else f"{e['before']}\n\n{answer}", namespace)
    args = eval(e["arguments"], namespace)
    args = args if isinstance(args, tuple) else (args,)
    return hidden_tests.evaluate(e["module"], e["checker"], *args)


def _with_solution(before: str, solution: str) -> str:
    try:
        compile(solution, "<solution>", "exec")
    except SyntaxError:  # a fragment fixing one line of the given code
        lines = before.splitlines()
        for fix in solution.splitlines():
            lhs = fix.split("=")[0].rstrip()
            lines[next(i for i, line in enumerate(lines) if line.split("=")[0].rstrip() == lhs)] = fix
        return "\n".join(lines)
    return f"{before}\n\n{solution}"


def test_every_graded_coding_exercise_is_covered():
    coding = {t.exercise for t in hidden_tests.load_all().values() if t.kind == hidden_tests.FUNCTION}
    assert len(coding) == 31
    assert set(EXERCISES) == coding, "an exercise without a solution cell in its notebook"
    assert set(CHEATS) == coding, "add the course_lib solution of the new exercise to CHEATS"
    table = hidden_tests.rules_table()
    assert all(f"| {exercise} |" in table for exercise in coding)


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_each_test_states_the_cases_the_course_solution_goes_through(exercise, namespaces):
    """Partial credit is a share of the cases a test states (``cases=N``): the course's solution, graded case by
    case as the grader does, passes exactly that many."""
    e = EXERCISES[exercise]
    namespace = dict(namespaces(e["module"]))
    run_cell(_with_solution(e["before"], e["solution"]), namespace)
    args = eval(e["arguments"], namespace)
    test = hidden_tests.lookup(e["module"], e["checker"])
    outcome = partial_credit.run_test(test, list(args if isinstance(args, tuple) else (args,)), {})
    assert (outcome.status, len(outcome.cases), outcome.total) == ("passed", test.cases, test.cases), outcome.message


@pytest.mark.parametrize("exercise", sorted(CHEATS))
def test_own_code_rule(exercise, namespaces):
    module, attribute, wrapper = CHEATS[exercise]
    e = EXERCISES[exercise]
    name = wrapper.split("(")[0].split()[-1]
    test = hidden_tests.lookup(e["module"], e["checker"])

    honest = grade(exercise, "", namespaces)
    assert (honest.status, honest.points) == ("passed", test.points), honest.message

    owner, _, inner = module.partition(".")
    sub = inner  # e.g. "attention" or "attention.MultiHeadAttention"
    path = f"{module}.{attribute}"
    package, _, klass = module.rpartition(".") if module.split(".")[-1][:1].isupper() else (module, "", "")
    importer = f"__import__({package!r}, fromlist=['x'])" + (f".{klass}" if klass else "")
    runtime_name = ("getattr(__import__('_'.join(['course', 'lib']) + " + repr("." + package.partition(".")[2])
                    + ", fromlist=['x'])" + (f", {klass!r}).{attribute}" if klass else f", {attribute!r})"))
    variants = {
        "alias": (f"import {package} as _m", f"{name} = _m{('.' + klass) if klass else ''}.{attribute}"),
        "wrapper": (f"from {package} import {klass or attribute} as _course_ref",
                    wrapper.format(ref=f"_course_ref.{attribute}" if klass else "_course_ref")),
        "import course_lib as c": ("", f"import {owner} as c\n\n" + wrapper.format(ref=f"c.{sub}.{attribute}")),
        "__import__": ("", wrapper.format(ref=f"{importer}.{attribute}")),
        "a name built at run time": ("", wrapper.format(ref=runtime_name)),
    }
    for variant, (setup, answer) in variants.items():
        verdict = grade(exercise, answer, namespaces, setup)
        assert (verdict.status, verdict.rule, verdict.points) == ("broke a rule", "own code", 0), \
            f"{exercise} {variant}: {verdict.message}"
        assert "course_lib" in verdict.message and verdict.message.startswith(f"Exercise {exercise}: 0 points"), \
            verdict.message
    with rules_enforced(False):
        verdict = grade(exercise, variants["wrapper"][1], namespaces, variants["wrapper"][0])
    assert verdict.status == "passed", f"{exercise}: the wrapper of {path} is not a right answer: {verdict.message}"


@pytest.mark.parametrize("exercise, what, answer, rule", WITHOUT, ids=[f"{e}-{w}" for e, w, _, _ in WITHOUT])
def test_without_rules(exercise, what, answer, rule, namespaces):
    answer = answer.replace("{scores}", SCORES)
    verdict = grade(exercise, answer, namespaces)
    assert (verdict.status, verdict.rule, verdict.points) == ("broke a rule", rule, 0), f"{what}: {verdict.message}"
    if exercise not in WITHOUT_OFF_FAILS:
        with rules_enforced(False):
            verdict = grade(exercise, answer, namespaces)
        assert verdict.status == "passed", f"{what} is not a right answer, so the test proves nothing: {verdict.message}"


def test_helpers_and_defaults_are_traced(namespaces):
    """course_lib reached through a helper in another cell, a default argument or functools.partial."""
    helper = ("def _helper(q, k, v, mask):\n    from course_lib.attention import scaled_dot_product_attention\n"
              "    return scaled_dot_product_attention(q, k, v, mask)[0]")
    cases = {
        "a helper from another cell": (helper, "def attention_by_hand(q, k, v, mask=None):\n    return _helper(q, k, v, mask)"),
        "a default argument": ("import course_lib.attention as _a", "def attention_by_hand(q, k, v, mask=None, "
                               "_f=_a.scaled_dot_product_attention):\n    return _f(q, k, v, mask)[0]"),
        "switching off the trace": ("import sys as _sys", "def attention_by_hand(q, k, v, mask=None):\n"
                                    "    _sys.setprofile(None)\n    s = q @ k.transpose(-2, -1)\n    return s @ v"),
        "functools.partial": ("import functools, course_lib.exercises.nb04 as _n",
                              "attention_by_hand = functools.partial(_n._reference)"),
    }
    for what, (setup, answer) in cases.items():
        verdict = grade("04.3", answer, namespaces, setup)
        assert (verdict.status, verdict.rule) == ("broke a rule", "own code"), f"{what}: {verdict.message}"


def test_allowed_helpers_and_handed_over_objects(namespaces):
    """torch and math stay allowed; the objects an exercise hands over (model.decode, the tokenizer) may be used."""
    own_softmax = ("def attention_by_hand(q, k, v, mask=None):\n" + SCORES + "\n"
                   "    def softmax(x):  # the student's own function may be called softmax\n"
                   "        e = (x - x.amax(-1, keepdim=True)).exp()\n        return e / e.sum(-1, keepdim=True)\n"
                   "    return softmax(s) @ v")
    verdict = grade("04.3", own_softmax, namespaces)
    assert verdict.status == "passed", verdict.message


def test_value_policy():
    """One-value answers: the hidden test only confirms the value; the point goes to a justification graded by hand."""
    tests = hidden_tests.load_all().values()
    values = [t for t in tests if t.kind == hidden_tests.VALUE]
    assert len(values) == 17
    for test in values:
        assert (test.auto_points, test.manual_points) == (0, test.points)
        cell = hidden_tests.justification_cell(test)
        meta = cell["metadata"]["nbgrader"]
        assert meta["grade"] and meta["solution"] and meta["points"] == test.points
        assert meta["grade_id"] == f"why_{test.module}_{test.checker}"
    assert all(t.auto_points == t.points for t in tests if t.kind == hidden_tests.FUNCTION)
    verdict = hidden_tests.evaluate("nb04", "check_dot_product_variance", 64)
    assert (verdict.status, verdict.points) == ("passed", 0)


def test_each_hidden_test_names_its_exercise_and_works_through_its_grader():
    """A hidden test is linked to the exercise's declaration (the object, not its name), one per exercise; it
    reaches the student's code only through the grader it is given, so a grader can record instead of stop."""
    import sys

    from course_lib.exercises import load_all as declared_exercises

    declared = declared_exercises()
    registry = hidden_tests.load_all()
    assert sorted(t.exercise for t in registry.values()) == sorted(declared)
    for test in registry.values():
        assert test.declared is declared[test.exercise]
        assert (test.module, test.checker, test.points) == (test.declared.module, test.declared.name,
                                                            test.declared.points)
        assert not {"call", "expect", "unpack"} & set(vars(sys.modules[test.test.__module__])), test.test.__module__

    compared = []

    class Recording(hidden_tests.Grader):
        def expect(self, case, got, expected, atol=1e-5, rtol=1e-4):
            compared.append((case, hidden_tests.difference(got, expected, atol, rtol)))

    test = hidden_tests.lookup("nb01", "check_encode")
    cell = {}
    run_cell("def encode(tokens, stoi):\n    return [stoi['<bos>'], stoi['<eos>']]", cell)  # right only when empty
    test.run_with(Recording(test), cell["encode"])
    assert len(compared) == test.cases
    assert [why is None for _, why in compared] == [False, False, False, False, True]
