"""``eqrewrite reduce``: the minimiser keeps the finding, makes the program smaller, and
writes reproducers that still fail on their own.

Findings come from backends that plant one fault (Dynamo only, no Inductor, so these run on
every CI run): integer outputs off by one, floating outputs poisoned with NaN. Reproducer
folders are written by the oracle's own ``write_reproducer``, exactly as the oracle writes
them for a ``compiler-bug`` verdict.
"""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from eqrewrite.oracle.harness.repro import write_reproducer  # noqa: E402
from eqrewrite.oracle.judging.compare import CompareOptions  # noqa: E402
from eqrewrite.oracle.judging.protocol import RunRequest, Variant  # noqa: E402
from eqrewrite.oracle.judging.settings import CompileSettings, Target, TargetForm  # noqa: E402
from eqrewrite.oracle.minimising import candidates as rp  # noqa: E402
from eqrewrite.oracle.minimising.passes import ddmin, setting_candidates  # noqa: E402
from eqrewrite.oracle.minimising.reduce import Budget, reduce_folder  # noqa: E402
from eqrewrite.oracle.minimising.signature import Signature  # noqa: E402
from eqrewrite.oracle.minimising.standalone import PROGRAM  # noqa: E402
from test_oracle_verdicts import BACKENDS as FAULTS  # noqa: E402

# The oracle's fault-injecting backends, and one that plants two faults at once.
BACKENDS = FAULTS + '''

def off_by_one_and_nan(gm, example_inputs):
    """Integer outputs off by one, and a NaN at the first element of floating outputs."""
    return nan_at_first(exact_off_by_one(gm, example_inputs), example_inputs)


def off_by_one_unless_small(gm, example_inputs):
    """Integer outputs off by one; a graph of fewer than three operations raises instead (a
    fault only the full backend has, which shrinking brings out)."""
    operations = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    if len(operations) >= 3:
        return exact_off_by_one(gm, example_inputs)

    def refuse(*args):
        raise RuntimeError("planted: a small graph")
    return refuse


def off_by_one_if_channels_last(gm, example_inputs):
    """Integer outputs off by one when an input is channels-last and not contiguous."""
    import torch

    if any(isinstance(t, torch.Tensor) and t.dim() == 4 and not t.is_contiguous()
           and t.is_contiguous(memory_format=torch.channels_last) for t in example_inputs):
        return exact_off_by_one(gm, example_inputs)
    return gm.forward


def off_by_one_with_fallback_random(gm, example_inputs):
    """Integer outputs off by one while ``inductor.fallback_random`` is on: a fault that
    needs one compile setting of the finding (and none of its others)."""
    import torch._inductor.config

    if torch._inductor.config.fallback_random:
        return exact_off_by_one(gm, example_inputs)
    return gm.forward


def crash_on_argmin(gm, example_inputs):
    """A compile crash: refuses every graph holding an argmin (its node count varies)."""
    import torch

    if any(node.target in (torch.argmin, "argmin") for node in gm.graph.nodes):
        raise RuntimeError(f"planted crash: argmin in a graph of {len(gm.graph.nodes)} nodes")
    return gm.forward
'''

# An argmin (the planted fault shows in its integer result) amid statements that do not
# matter, a parameter, a second output, a layout chain and a loop.
BULKY = '''
"""A program with one planted bug in a lot of noise."""
import torch
from torch import nn


class Program(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(8, 8))

    def forward(self, x0: torch.Tensor, x1: torch.Tensor):
        v0 = x0 @ self.weight
        v1 = v0.tanh() * 2.0
        v2 = torch.cumsum(x1, dim=0)
        v3 = (v1 + v2).transpose(0, 1).contiguous()
        for _ in range(2):
            v3 = v3 * 0.5
        v4 = v3.argmin(dim=1)
        v5 = v1.sum(dim=0)
        return v5, v4


def get_inputs():
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn((6, 8), generator=g)
    x1 = torch.randn((6, 8), generator=g)
    return [x0, x1]
'''

# Without its signature check the minimiser would drop the argmin: the float result is
# still a compiler bug under this backend (a NaN), but another finding.
ARGMIN = '''
import torch


def lowest(x: torch.Tensor):
    y = x * 3.0 + 1.0
    return y.argmin()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(5, 7)]
'''


# Two findings at once under off_by_one_and_nan: the argmin off by one (the first difference)
# and a NaN in the sum; a candidate without the argmin keeps only the NaN.
TWO_OUTPUTS = '''
import torch


def lowest(x: torch.Tensor):
    y = x * 3.0 + 1.0
    return y.argmin(), y.sum()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(5, 7)]
'''


def reproducer(tmp_path: Path, monkeypatch, source: str, name: str, attribute: str,
               form: TargetForm, backend: str, verdict: str = "compiler-bug") -> Path:
    """A reproducer folder for ``source`` (written as ``tree/<name>``) and a planted backend."""
    (tmp_path / "planted.py").write_text(BACKENDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / name).write_text(textwrap.dedent(source))
    target = Target(f"{name}::{attribute}", attribute, form, Path(name))
    state = _state(tree, name, attribute) if form is TargetForm.MODULE else None
    request = RunRequest(target, CompileSettings(backend=f"planted:{backend}"), Variant.EAGER,
                         seed=0, state=state)
    script = write_reproducer(tmp_path / "finding", tree, request, CompareOptions(), verdict)
    return script.parent


def _state(tree: Path, name: str, attribute: str) -> bytes:
    """The module's weights as the oracle saves them: built under the seed."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bulky_for_state", tree / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    buffer = io.BytesIO()
    torch.save(getattr(module, attribute)().state_dict(), buffer)
    return buffer.getvalue()


def run_script(script: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script)], cwd=script.parent, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def bulky(tmp_path_factory):
    """The bulky program reduced once (verification left to the tests)."""
    tmp_path = tmp_path_factory.mktemp("bulky")
    with pytest.MonkeyPatch.context() as monkeypatch:
        folder = reproducer(tmp_path, monkeypatch, BULKY, "prog.py", "Program",
                            TargetForm.MODULE, "exact_off_by_one")
        lines: list[str] = []
        result = reduce_folder(folder.parent, budget=Budget(max_tests=200), say=lines.append,
                               verify=False)
    return folder, result, lines


def test_reduction_is_strictly_smaller(bulky):
    _, result, _ = bulky
    assert result.after["statements"] < result.before["statements"]
    assert result.after["tokens"] < result.before["tokens"] * 0.6
    assert result.after["input_elements"] < result.before["input_elements"]
    assert result.tally.tried > result.tally.accepted > 0
    reduced = (result.reduced / "tree" / "prog.py").read_text()
    assert "argmin" in reduced
    for noise in ("cumsum", "tanh", "contiguous", "for _ in", "self.weight"):
        assert noise not in reduced, reduced
    assert result.weights_dropped and not (result.reduced / "state.pt").exists()


def test_reduced_reproducer_fails_with_the_same_signature(bulky):
    folder, result, _ = bulky
    original = run_script(folder / "repro.py")
    reduced = run_script(result.reduced / "repro.py")
    assert original.returncode == reduced.returncode == 1, reduced.stdout + reduced.stderr
    for run in (original, reduced):
        assert "result['output'][1]: 1 of" in run.stdout
        assert "compares exactly" in run.stdout
        assert "compiler-bug:" in run.stdout
    recorded = json.loads((result.reduced / "reduction.json").read_text())
    assert recorded["signature"]["differences"] == [["result['output'][1]", "exact"]]


def test_minimal_script_is_standalone_and_shows_the_divergence(bulky, tmp_path):
    _, result, _ = bulky
    text = result.minimal.read_text()
    assert "_eqrewrite_oracle" not in text and "eqrewrite.oracle" not in text
    assert "torch.compile(fn, backend=backend)" in text
    moved = tmp_path / "minimal.py"  # it needs nothing beside it
    moved.write_text(text)
    run = run_script(moved)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "compiled differs from eager: Scalars are not equal!" in run.stderr
    assert "Expected 0 but got 1." in run.stderr and "item [1]" in run.stderr
    assert "expected (eager):" in run.stdout


def test_progress_reports_sizes(bulky):
    _, _, lines = bulky
    assert lines[1].startswith("reproduces: compiler-bug: exact at result['output'][1]")
    assert any("statements kept" in line for line in lines)


def test_a_candidate_that_changes_the_signature_is_rejected(tmp_path, monkeypatch):
    folder = reproducer(tmp_path, monkeypatch, ARGMIN, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "off_by_one_and_nan")
    result = reduce_folder(folder, budget=Budget(max_tests=60), verify=False)
    reduced = (result.reduced / "tree" / "argmin.py").read_text()
    # Dropping .argmin() (a NaN in a float output) or the whole computation was tried and
    # rejected; the arithmetic around it was not needed.
    assert "argmin()" in reduced and "3.0" not in reduced, reduced
    assert result.tally.by_pass["expressions"][0] > result.tally.by_pass["expressions"][1]
    assert result.signature.differences == (("result['output']", "exact"),)
    run = run_script(result.reduced / "repro.py")
    assert run.returncode == 1 and "compares exactly" in run.stdout


def test_a_compile_crash_is_reduced_keeping_its_error(tmp_path, monkeypatch):
    folder = reproducer(tmp_path, monkeypatch, BULKY, "prog.py", "Program",
                        TargetForm.MODULE, "crash_on_argmin", verdict="compile-error")
    original = run_script(folder / "repro.py")
    assert original.returncode == 1, original.stdout + original.stderr
    assert "compile-error:" in original.stdout
    result = reduce_folder(folder.parent, budget=Budget(max_tests=120))
    assert result.signature.verdict == "compile-error" and result.signature.differences == ()
    # The node count in the message changes as statements go: masked in the signature.
    assert "planted crash: argmin in a graph of N nodes" in result.signature.error
    assert result.after["statements"] < result.before["statements"]
    reduced = (result.reduced / "tree" / "prog.py").read_text()
    assert "argmin" in reduced and "cumsum" not in reduced and "tanh" not in reduced, reduced
    assert result.verified == {"reduced/repro.py": 1, "minimal.py": 1}
    run = run_script(result.minimal)
    # The compiled call's crash propagates: a traceback, exit 1.
    assert run.returncode == 1 and "planted crash: argmin" in run.stderr
    assert "Traceback (most recent call last)" in run.stderr
    recorded = json.loads((result.reduced / "reduction.json").read_text())
    assert recorded["signature"]["error"] == result.signature.error


def test_a_compile_crash_signature_needs_the_same_error():
    def answer(error, exceptions=(None, "torch._dynamo.exc.BackendCompilerFailed"),
               verdict="compile-error"):
        return {"verdict": verdict, "exceptions": list(exceptions), "differences": [],
                "compiled_error": error, "inputs": []}

    base = Signature.of(answer("BackendCompilerFailed: planted crash: argmin in 12 nodes"))
    assert base.kept_by(answer("BackendCompilerFailed: planted crash: argmin in 5 nodes"))
    assert not base.kept_by(answer("BackendCompilerFailed: planted crash: argmax in 5 nodes"))
    assert not base.kept_by(answer("BackendCompilerFailed: planted crash: argmin in 5 nodes",
                                   exceptions=(None, "builtins.RuntimeError")))
    assert not base.kept_by(answer("planted crash: argmin in 5 nodes", verdict="compiler-bug"))
    assert base.describe().startswith("compile-error: compiled raised BackendCompilerFailed")


def test_reduction_is_deterministic(tmp_path, monkeypatch):
    folder = reproducer(tmp_path, monkeypatch, ARGMIN, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "exact_off_by_one")
    runs = [reduce_folder(folder, tmp_path / f"out{i}", Budget(max_tests=10), verify=False)
            for i in range(2)]
    texts = [(r.reduced / "tree" / "argmin.py").read_text() for r in runs]
    assert texts[0] == texts[1] != textwrap.dedent(ARGMIN)
    assert runs[0].tally == runs[1].tally and runs[0].tally.tried == 10
    assert runs[0].stopped == "--max-tests 10 reached"


def test_signature_matching():
    base = Signature.of({"verdict": "compiler-bug", "exceptions": [None, None],
                         "differences": [["result['output'][1]", "exact", ""],
                                         ["result['grads']['input0']", "value", ""]]})

    def answer(differences, verdict="compiler-bug", exceptions=(None, None)):
        return {"verdict": verdict, "exceptions": list(exceptions), "inputs": [],
                "differences": [[p, k, ""] for p, k in differences]}

    assert base.kept_by(answer([("result['output'][1]", "exact")]))
    assert not base.kept_by(answer([("result['output'][1]", "nan")]))          # other kind
    assert not base.kept_by(answer([("result['output'][0]", "exact")]))        # other path
    assert not base.kept_by(answer([("result['grads']['input0']", "value")]))  # first lost
    assert not base.kept_by(answer([("result['output'][1]", "exact"),
                                    ("result['output'][0]", "exact")]))        # a new one
    assert not base.kept_by(answer([("result['output'][1]", "exact")], "numerical-noise"))
    assert not base.kept_by(answer([("result['output'][1]", "exact")],
                                   exceptions=(None, "builtins.RuntimeError")))
    assert not base.kept_by(None) and not base.kept_by({"error": "NameError"})


# -- errors ---------------------------------------------------------------------------------


def eqrewrite(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", *args],
                          capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing", "not a folder"),
    (lambda p: p, "no reproducer (repro.py)"),
    (lambda p: (p / "repro.py").write_text("print('hi')\n") and p,
     "not an eqrewrite reproducer (no ROOT, TARGET"),
    (lambda p: (p / "repro.py").write_text("def (:\n") and p, "repro.py:1: not Python source"),
])
def test_bad_folder_is_a_clear_error_with_exit_2(tmp_path, make, message):
    done = eqrewrite("reduce", str(make(tmp_path)))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_source_is_exit_2_and_a_passing_reproducer_exit_1(tmp_path, monkeypatch):
    folder = reproducer(tmp_path, monkeypatch, ARGMIN, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "exact_off_by_one")
    script = folder / "repro.py"
    script.write_text(script.read_text().replace("'planted:exact_off_by_one'", "'eager'"))
    passing = eqrewrite("reduce", str(folder), "-q")
    assert passing.returncode == 1, passing.stderr
    assert "does not reproduce: the verdict is passed" in passing.stderr
    (tmp_path / "tree" / "argmin.py").unlink()
    missing = eqrewrite("reduce", str(folder), "-q")
    assert missing.returncode == 2, missing.stderr
    assert "cannot read the target's source" in missing.stderr and "argmin.py" in missing.stderr


# -- the candidates (no torch needed) -------------------------------------------------------


def test_removed_assignment_is_replaced_by_what_it_read():
    text = "def f(x):\n    a = x.sin()\n    b = a * 2\n    return b + a\n"
    body = rp.body_lengths(text).index(3)
    kept = rp.keep_statements(text, body, frozenset({2}))
    assert kept == "def f(x):\n    return x + x\n"
    emptied = rp.keep_statements("def f(x):\n    if x:\n        y = 1\n", 2, frozenset())
    assert emptied == "def f(x):\n    if x:\n        pass\n"


def test_expression_candidates():
    text = ("import torch\n\ndef f(x, y):\n    return torch.sin(x).sum(dim=0) + y, x\n\n"
            "def get_inputs():\n    return [torch.randn(3), torch.randn(3)]\n")
    made = {candidate for _, candidate in rp.expression_candidates(text)}
    assert "    return torch.sin(x).sum(dim=0), x\n" in "".join(made)
    assert any("return torch.sin(x).sum() + y, x" in c for c in made)     # keyword dropped
    assert any("return torch.sin(x) + y, x" in c for c in made)           # receiver
    assert any("return None, x" in c for c in made)                       # output kept in place
    assert not any("return [None" in c for c in made)                     # never an input
    assert not any("torch + y" in c for c in made)                        # never a module


def test_shape_and_constant_candidates():
    text = "import torch\n\ndef get_inputs():\n    return [torch.randn(4, 6), torch.zeros((4,))]\n"
    shapes = list(rp.shape_candidates(text))
    assert shapes[0].endswith("[torch.randn(4, 1), torch.zeros((4,))]\n")
    assert any(s.endswith("[torch.randn(2, 6), torch.zeros((2,))]\n") for s in shapes)
    assert list(rp.constant_candidates(text)) == []    # shapes are the shape pass's
    numbers = [t for _, t in rp.constant_candidates("y = x * 93 + 1.5\n")]
    assert numbers == ["y = x * 0 + 1.5\n", "y = x * 1 + 1.5\n", "y = x * 2 + 1.5\n",
                       "y = x * -1 + 1.5\n", "y = x * -2 + 1.5\n", "y = x * 46 + 1.5\n",
                       "y = x * 93 + 0.0\n", "y = x * 93 + 1.0\n"]
    negated = [t for _, t in rp.constant_candidates("y = torch.min(x, -3)\n")]
    assert negated[0] == "y = torch.min(x, 0)\n" and "-0" not in "".join(negated)


def test_tidy_removes_parentheses_around_atoms_only():
    assert rp.tidy("y = (v / (s))\nz = (x.t())[0] + (1, 2)[0]\n") == (
        "y = (v / s)\nz = x.t()[0] + (1, 2)[0]\n")


def test_ddmin_finds_a_one_minimal_subset():
    calls = []

    def needs_3_and_7(keep):
        calls.append(keep)
        return {3, 7} <= set(keep)

    assert ddmin(list(range(12)), needs_3_and_7) == [3, 7]
    assert len(calls) < 40


# -- issue 20, item 2: cheaper candidates ------------------------------------------------------


def test_parallel_reduction_reduces_the_same_program_as_serial(tmp_path, monkeypatch):
    """Two checking processes judge the next candidates of a pass at once; the first kept one
    in the pass's order wins, so the program, the candidates counted and kept, and the
    budget spent are a serial run's."""
    folder = reproducer(tmp_path, monkeypatch, TWO_OUTPUTS, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "off_by_one_and_nan")
    runs = [reduce_folder(folder, tmp_path / f"j{jobs}", Budget(max_tests=40), verify=False,
                          jobs=jobs) for jobs in (1, 2)]
    serial, parallel = runs
    texts = [(r.reduced / "tree" / "argmin.py").read_text() for r in runs]
    assert texts[0] == texts[1] != textwrap.dedent(TWO_OUTPUTS)
    assert "argmin()" in texts[0]
    for field_name in ("tried", "accepted", "cached", "by_pass", "timeouts", "errors",
                       "screened_eager", "screened_triage", "screened_forward"):
        assert getattr(serial.tally, field_name) == getattr(parallel.tally, field_name), \
            field_name
    assert serial.stopped == parallel.stopped
    assert (serial.jobs, parallel.jobs) == (1, 2)
    assert serial.tally.speculative == 0 < parallel.tally.speculative
    # Candidates that lose the argmin show a NaN instead: rejected before the triage, and
    # before the compiled backward (the NaN is in the forward's output).
    assert serial.tally.screened_forward == parallel.tally.screened_forward > 0
    assert parallel.per_minute > 0
    recorded = json.loads((parallel.reduced / "reduction.json").read_text())
    assert recorded["jobs"] == 2 and recorded["candidates"]["per_minute"] > 0


def _judged_with_forward_screen(tmp_path: Path, monkeypatch, refuse: bool) -> list[str]:
    """``replay.judge`` of TWO_OUTPUTS under ``off_by_one_and_nan`` with a ``wanted_forward``
    that refuses (or accepts) everything; the variants whose backward ran, in order."""
    from eqrewrite.oracle.judging import observe, replay, worker

    (tmp_path / "planted.py").write_text(BACKENDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "argmin.py").write_text(textwrap.dedent(TWO_OUTPUTS))
    target = Target("argmin.py::lowest", "lowest", TargetForm.FUNCTION, Path("argmin.py"))
    request = RunRequest(target, CompileSettings(backend="planted:off_by_one_and_nan"),
                         Variant.EAGER, seed=0)
    backwards: list[str] = []
    attempt, gradients = worker.Session._attempt, observe.gradients

    def recording_attempt(self, asked, *args, **kwargs):
        monkeypatch.setattr(observe, "gradients", lambda *a, **k: (
            backwards.append(asked.variant.value), gradients(*a, **k))[1])
        return attempt(self, asked, *args, **kwargs)
    monkeypatch.setattr(worker.Session, "_attempt", recording_attempt)
    judgement = None
    sys.modules.pop("planted", None)  # judged in this process: these backends, no other's
    try:
        judgement = replay.judge(str(tmp_path / "tree"), request, CompareOptions(),
                                 wanted_forward=lambda found: not refuse)
    except replay.Unwanted as unwanted:
        assert refuse and unwanted.before_backward
        assert {d.path for d in unwanted.differences} >= {"result['output'][0]"}
    finally:
        sys.modules.pop("planted", None)  # nor are they any later test's
    assert refuse or judgement.verdict.value == "compiler-bug"
    return backwards


def test_a_refused_forward_difference_skips_the_compiled_backward(tmp_path, monkeypatch):
    """``wanted_forward`` sees the compiled call's differences (gradients left out of both
    runs) before the compiled backward is compiled and run: a refusal ends the judgement
    there; an acceptance lets it finish with the compiled gradients compared."""
    assert _judged_with_forward_screen(tmp_path, monkeypatch, refuse=True) == [
        "eager", "eager"]


def test_an_accepted_forward_difference_goes_on_to_the_backward(tmp_path, monkeypatch):
    assert _judged_with_forward_screen(tmp_path, monkeypatch, refuse=False)[:3] == [
        "eager", "eager", "compiled"]


def test_a_cheaper_backend_that_shows_the_finding_screens_candidates(tmp_path, monkeypatch):
    """When the original fails the same way with a cheaper backend, candidates go to the
    full backend only when the cheaper one keeps the finding. Here the cheaper backend only
    plants the integer fault: candidates that drop the argmin (a NaN in a float output under
    the full backend, another finding) are rejected without the full backend."""
    from eqrewrite.oracle.minimising import reduce as reducing

    folder = reproducer(tmp_path, monkeypatch, ARGMIN, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "off_by_one_and_nan")
    plain = reduce_folder(folder, tmp_path / "plain", Budget(max_tests=30), verify=False)
    monkeypatch.setitem(reducing.CHEAPER, "planted:off_by_one_and_nan",
                        ("planted:nan_to_zero", "planted:exact_off_by_one"))
    screened = reduce_folder(folder, tmp_path / "screened", Budget(max_tests=30),
                             verify=False)
    assert plain.screen_backend is None and plain.tally.screened_backend == 0
    # nan_to_zero does not show the finding; exact_off_by_one does.
    assert screened.screen_backend == "planted:exact_off_by_one"
    assert screened.tally.screened_backend > 0
    assert screened.tally.screened_eager > 0 and plain.tally.screened_eager > 0
    texts = [(r.reduced / "tree" / "argmin.py").read_text() for r in (plain, screened)]
    assert texts[0] == texts[1]
    run = run_script(screened.reduced / "repro.py")
    assert run.returncode == 1  # judged with the full backend, as every kept candidate was


# Under off_by_one_unless_small, the argmin's finding needs three operations in the graph;
# under exact_off_by_one (the screen), one is enough.
CHAIN = '''
import torch


def lowest(x: torch.Tensor):
    a = x * 3.0
    b = a + 1.0
    c = b * 0.5
    d = c - 2.0
    return d.argmin()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(5, 7)]
'''


def _operations(source: str) -> int:
    return sum(source.count(f" {op} ") for op in "*+-") + source.count(".argmin(")


def test_candidates_kept_by_the_screen_are_confirmed_by_the_full_backend(tmp_path,
                                                                        monkeypatch):
    """With a cheaper backend showing the finding, candidates are kept on its word and the
    full backend confirms the program every ``confirm_every`` kept ones and at the end; a
    program it does not keep is undone (bisected back to one it keeps) and the passes go on
    from there. The result is the full backend's finding, the same serially and in
    parallel; with ``confirm_every=0`` every candidate is judged by the full backend."""
    from eqrewrite.oracle.minimising import reduce as reducing

    folder = reproducer(tmp_path, monkeypatch, CHAIN, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "off_by_one_unless_small")
    monkeypatch.setitem(reducing.CHEAPER, "planted:off_by_one_unless_small",
                        ("planted:exact_off_by_one",))
    runs = {name: reduce_folder(folder, tmp_path / name, Budget(max_tests=60,
                                                                confirm_every=every),
                                verify=False, jobs=jobs)
            for name, every, jobs in (("j1", 2, 1), ("j2", 2, 2), ("each", 0, 1))}
    texts = {name: (r.reduced / "tree" / "argmin.py").read_text() for name, r in runs.items()}
    assert texts["j1"] == texts["j2"]
    for name in ("tried", "accepted", "cached", "by_pass", "confirmations", "reverted"):
        assert getattr(runs["j1"].tally, name) == getattr(runs["j2"].tally, name), name
    deferred, each = runs["j1"], runs["each"]
    assert deferred.screen_backend == each.screen_backend == "planted:exact_off_by_one"
    assert deferred.tally.confirmations > 0 and deferred.tally.reverted > 0
    assert each.tally.confirmations == each.tally.reverted == 0
    recorded = json.loads((deferred.reduced / "reduction.json").read_text())
    assert recorded["confirm_every"] == 2 and recorded["candidates"]["reverted"] > 0
    for name, text in texts.items():  # the screen alone would have gone down to one
        assert 3 <= _operations(text) < _operations(CHAIN), (name, text)
    assert run_script(deferred.reduced / "repro.py").returncode == 1


CHANNELS_LAST = '''
import torch


def lowest(x: torch.Tensor):
    return (x * 3.0).argmin()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)]
'''


def test_shrunk_inputs_that_change_layout_are_refused_before_any_run(tmp_path, monkeypatch):
    """A shape candidate whose input loses its layout class (a channels-last input with one
    channel, or one row and column, is contiguous too) is refused once its inputs are built,
    before the eager run or any compile; the input stays channels-last and not contiguous."""
    folder = reproducer(tmp_path, monkeypatch, CHANNELS_LAST, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "off_by_one_if_channels_last")
    result = reduce_folder(folder, tmp_path / "out", Budget(max_tests=40), verify=False)
    assert result.tally.screened_layout > 0
    assert result.after["input_elements"] < 120
    namespace: dict = {}
    exec((result.reduced / "tree" / "argmin.py").read_text(), namespace)
    (x,) = namespace["get_inputs"]()
    assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()


def test_ddmin_asks_for_a_rounds_tests_at_once():
    from eqrewrite.oracle.minimising.passes import ddmin_first

    rounds = []

    def first(subsets):
        rounds.append(len(subsets))
        return next((i for i, keep in enumerate(subsets) if {3, 7} <= set(keep)), None)

    assert ddmin_first(list(range(12)), first) == [3, 7]
    assert max(rounds) > 2  # subsets and complements of a round come together


def test_a_candidate_without_the_target_is_never_judged():
    """The names a candidate binds at top level: a candidate that lost the target's class
    (or its inputs function) is "bad" before any judge sees it."""
    from eqrewrite.oracle.minimising.standalone import module_level_names

    text = ("import torch as t\nfrom x import y\nclass Program:\n    pass\n"
            "def get_inputs():\n    return []\nN = 3\nif t:\n    M = 1\n")
    assert module_level_names(ast.parse(text)) >= {"t", "y", "Program", "get_inputs", "N",
                                                    "M"}
    assert "Program" not in module_level_names(ast.parse("import torch\n"))


def test_modules_of_every_tree_judged_before_are_forgotten(tmp_path, monkeypatch):
    """The baseline may judge the reproducer's own source tree; its module shares the
    target's name with every candidate's, and one left in ``sys.modules`` was judged in
    place of the candidates (a campaign's reduction kept an empty file that way)."""
    from eqrewrite.oracle.minimising import reduceworker

    for folder in ("source", "trees/c000001"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "gen_target.py").write_text(f"WHERE = {folder!r}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "source"))
    import gen_target

    assert gen_target.WHERE == "source"
    reduceworker._forget([tmp_path / "trees"])
    assert "gen_target" in sys.modules  # another tree's module: not a candidate's
    reduceworker._forget([tmp_path / "trees", tmp_path / "source"])
    assert "gen_target" not in sys.modules


# -- settings and inputs reduced too ------------------------------------------------------------

# One op amid noise, inputs drawn from the seed, compiled with four settings of which the
# finding needs one (inductor.fallback_random, which the planted backend reads).
SETTLED = """
import torch


def lowest(x: torch.Tensor):
    y = x.t() * 3.0 + 1.0
    return y.argmin(), y.sum()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(6, 5)]
"""


@pytest.fixture(scope="module")
def settled(tmp_path_factory):
    """SETTLED's finding reduced once, its two reproducers run at the end."""
    tmp_path = tmp_path_factory.mktemp("settled")
    (tmp_path / "planted.py").write_text(BACKENDS)
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "prog.py").write_text(SETTLED)
    settings = CompileSettings(backend="planted:off_by_one_with_fallback_random",
                               dynamic=False, fullgraph=True,
                               inductor_config=(("cpp.simdlen", 1), ("fallback_random", True)))
    target = Target("prog.py::lowest", "lowest", TargetForm.FUNCTION, Path("prog.py"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.syspath_prepend(str(tmp_path))
        script = write_reproducer(tmp_path / "finding", tmp_path / "tree", RunRequest(
            target, settings, Variant.EAGER, seed=0), CompareOptions(), "compiler-bug")
        result = reduce_folder(script.parent, budget=Budget(max_tests=150))
    return result


def test_settings_the_finding_does_not_need_are_dropped(settled):
    assert settled.dropped == ["inductor.cpp.simdlen", "dynamic", "fullgraph", "gradients"]
    assert settled.tally.by_pass["settings"][1] == 4
    assert settled.verified == {"reduced/repro.py": 1, "minimal.py": 1}, settled.errors
    repro = (settled.reduced / "repro.py").read_text()
    assert "inductor_config=(('fallback_random', True),)" in repro
    assert "dynamic=None, fullgraph=False" in repro and "grad_inputs=False" in repro
    text = settled.minimal.read_text()
    assert "torch._inductor.config.fallback_random = True" in text
    assert "simdlen" not in text and "dynamic" not in text and "fullgraph" not in text
    recorded = json.loads((settled.reduced / "reduction.json").read_text())
    assert recorded["settings_dropped"] == settled.dropped


def test_random_inputs_become_small_literals_and_the_harness_only_what_is_needed(settled):
    reduced = (settled.reduced / "tree" / "prog.py").read_text()
    assert "randn" not in reduced and "manual_seed" not in reduced, reduced
    assert re.search(r"return \[torch\.tensor\(\[[-0-9., \[\]]+\]\)\]", reduced), reduced
    assert settled.after["input_elements"] < settled.before["input_elements"] == 30
    text = settled.minimal.read_text()
    # No seed (nothing draws random numbers), no input gradients, no projection, no backward.
    for needless in ("SEED", "manual_seed", "requires_grad", "projection", "backward",
                     "isinstance(args, dict)"):
        assert needless not in text, needless
    program = text.split(PROGRAM, 1)[1].split('if __name__ == "__main__":')[0]
    code = [line for line in program.splitlines()
            if line.strip() and not line.lstrip().startswith(("#", '"""'))]
    assert len(code) <= 15, "\n".join(code)
    assert "    return fn(*args)" in code
    assert "        fn = torch.compile(fn, backend=backend)" in code


def test_a_program_that_draws_random_numbers_keeps_its_seed(tmp_path, monkeypatch):
    # The inputs are literals; the call draws (one candidate judged: the program stays).
    drawing = ARGMIN.replace("y = x * 3.0 + 1.0", "y = x * 3.0 + torch.rand(2)").replace(
        "torch.manual_seed(0)\n    return [torch.randn(5, 7)]", "return [torch.ones(2)]")
    folder = reproducer(tmp_path, monkeypatch, drawing, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "exact_off_by_one")
    result = reduce_folder(folder, budget=Budget(max_tests=1), verify=False)
    assert "torch.rand(2)" in (result.reduced / "tree" / "argmin.py").read_text()
    text = result.minimal.read_text()
    assert "SEED = 0" in text and "    torch.manual_seed(SEED)\n    return fn(*args)" in text


def test_setting_candidates_drop_one_setting_at_a_time():
    settings = {"backend": "inductor", "mode": "max-autotune", "dynamic": False,
                "fullgraph": False, "inductor_config": [["a", 1], ["b.c", True]],
                "dynamo_config": [["compiled_autograd", True]]}
    assert list(setting_candidates(settings)) == [
        ("inductor.a", {"inductor_config": [["b.c", True]]}),
        ("inductor.b.c", {"inductor_config": [["a", 1]]}),
        ("dynamo.compiled_autograd", {"dynamo_config": []}),
        ("mode", {"mode": None}), ("dynamic", {"dynamic": None})]
    assert list(setting_candidates({"backend": "inductor"})) == []


def test_literal_inputs_replace_what_get_inputs_computes():
    source = textwrap.dedent(ARGMIN)
    made = rp.literal_inputs(source, ["torch.tensor([1.5, -2.0], dtype=torch.float16)"])
    assert made is not None and "return [torch.tensor([1.5, -2.0], dtype=torch.float16)]" in made
    assert "randn" not in made and "manual_seed" not in made and "argmin()" in made
    aliased = source.replace("import torch", "import torch as th").replace("torch.", "th.")
    made = rp.literal_inputs(aliased, ["torch.tensor([[1.0]]).t()"], as_tuple=True)
    assert made is not None and "return (th.tensor([[1.0]]).t(),)" in made
    assert rp.literal_inputs("import torch\n\n\ndef f(x):\n    return x\n", ["1"]) is None
    long = rp.literal_inputs(source, ["torch.tensor([" + "1.0, " * 20 + "])", "3"])
    assert long is not None and "    return [\n        torch.tensor([" in long
    ast.parse(long)


@pytest.mark.parametrize("make", [
    lambda: torch.tensor([[0.1, -2.5], [3.0, float("nan")]]),
    lambda: torch.tensor([[1.0, 2.0, 3.0], [4.0, -0.0, 6.0]]).t(),
    lambda: torch.arange(16, dtype=torch.float32).reshape(1, 4, 2, 2).to(
        memory_format=torch.channels_last),
    lambda: torch.tensor([0.1, 1e-30, 65504.0], dtype=torch.float16),
    lambda: torch.tensor([1, -7], dtype=torch.int32),
    lambda: torch.tensor([True, False]),
    lambda: torch.tensor(2.5),
])
def test_an_input_literal_makes_the_same_tensor_again(make):
    from eqrewrite.oracle.minimising.reduceworker import _literal

    value = make()
    text = _literal(value)
    assert text is not None
    again = eval(text, {"torch": torch})  # noqa: S307 - the literal written for it
    assert again.dtype == value.dtype and again.shape == value.shape
    assert again.stride() == value.stride()
    assert torch.equal(again.nan_to_num(), value.nan_to_num())
    assert torch.equal(again.signbit(), value.signbit()) if value.is_floating_point() else True


def test_inputs_without_a_small_literal_keep_their_code():
    from eqrewrite.oracle.minimising.reduceworker import _literal

    assert _literal(torch.randn(3, 1).expand(3, 4)) is None  # expanded
    assert _literal(torch.randn(4, 4)[:, :2]) is None  # gaps
    assert _literal(torch.randn(5)[1:]) is None  # offset
    assert _literal(torch.randn(40)) is None  # not small
    assert _literal(torch.randn(2, requires_grad=True)) is None
    assert _literal([torch.tensor([1.0]), 2, None]) == "[torch.tensor([1.0]), 2, None]"


def test_input_literals_read_as_the_usual_spellings():
    from eqrewrite.oracle.minimising.reduceworker import _literal

    assert _literal(torch.tensor([[1.0, 2.0], [3.0, 4.0]]).t()) == (
        "torch.tensor([[1.0, 2.0], [3.0, 4.0]]).t()")
    last = torch.zeros(2, 2, 1, 2).contiguous(memory_format=torch.channels_last)
    assert _literal(last) == ("torch.tensor([[[[0.0, 0.0]], [[0.0, 0.0]]], [[[0.0, 0.0]], "
                              "[[0.0, 0.0]]]]).contiguous(memory_format=torch.channels_last)")
    assert _literal(torch.tensor([0.1, 2.0, float("-inf")])) == (
        "torch.tensor([0.1, 2.0, -float('inf')])")
    assert _literal(torch.tensor([3], dtype=torch.uint8)) == "torch.tensor([3], dtype=torch.uint8)"
