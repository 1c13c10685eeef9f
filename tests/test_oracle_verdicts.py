"""The oracle's verdicts on differences of every kind, with small targets and backends that
inject one known fault each (no Inductor needed, so they run on every CI run).

Each test names the point of the oracle-verdicts issue it covers; every one of them failed
before the verdict rules were rewritten (exact values filed as noise, no float64 reference
for tensors the target makes, NaN patterns never triaged, generators drained into lists,
module state not observed, no Dynamo switches, Dynamo-only default backend, reproducers with
their own comparison).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from eqrewrite.oracle.harness.targets import find_target  # noqa: E402
from eqrewrite.oracle.judging.judge import Verdict  # noqa: E402
from eqrewrite.oracle.judging.settings import CompileSettings  # noqa: E402
from oracle_support import eager_harness, write_targets  # noqa: E402

BACKENDS = '''
"""Backends that each inject one kind of fault (or legitimate numerics) into a graph."""
import torch


def _outputs(outputs, change):
    single = not isinstance(outputs, (tuple, list))
    items = [outputs] if single else list(outputs)
    items = [change(t) if isinstance(t, torch.Tensor) else t for t in items]
    return items[0] if single else type(outputs)(items)


def noting_state(gm, example_inputs):
    """Runs the graph and appends to the target's module-level TRACED list: Python state
    that only the compiled run changes."""
    import sys

    def run(*args):
        for module in list(sys.modules.values()):
            if getattr(module, "__file__", "") and module.__file__.endswith("module_state.py"):
                module.TRACED.append("compiled")
        return gm(*args)
    return run


def exact_off_by_one(gm, example_inputs):
    """Integer and bool outputs: the first element wrong (argmin on a transposed input)."""
    def bump(t):
        if t.dtype == torch.bool:
            t = t.clone(); t.view(-1)[0] = ~t.view(-1)[0]; return t
        if not t.is_floating_point():
            t = t.clone(); t.view(-1)[0] += 1
        return t
    return lambda *args: _outputs(gm(*args), bump)


def upcast(gm, example_inputs):
    """Computes a float16 graph in float32 and rounds the outputs back, as Inductor does."""
    def run(*args):
        wide = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.float16 else a
                for a in args]
        return _outputs(gm(*wide), lambda t: t.half() if t.dtype == torch.float32 else t)
    return run


def more_precise(gm, example_inputs):
    """Computes in float64 and rounds back: a legitimate, more accurate evaluation order."""
    def run(*args):
        wide = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                for a in args]
        return _outputs(gm(*wide), lambda t: t.float() if t.dtype == torch.float64 else t)
    return run


def ulp(gm, example_inputs):
    """Moves the first element of each floating input by one ulp: the rounding of another
    evaluation order."""
    def nudge(a):
        if not (isinstance(a, torch.Tensor) and a.is_floating_point()):
            return a
        flat = a.detach().reshape(-1)
        step = torch.zeros_like(flat)
        step[0] = torch.nextafter(flat[0], torch.tensor(float("inf"))) - flat[0]
        return a + step.reshape(a.shape)
    return lambda *args: gm(*[nudge(a) for a in args])


def ulp_down(gm, example_inputs):
    """Moves the first element of each floating input down by one ulp."""
    def nudge(a):
        if not (isinstance(a, torch.Tensor) and a.is_floating_point()):
            return a
        flat = a.detach().reshape(-1)
        step = torch.zeros_like(flat)
        step[0] = torch.nextafter(flat[0], torch.tensor(float("-inf"))) - flat[0]
        return a + step.reshape(a.shape)
    return lambda *args: gm(*[nudge(a) for a in args])


def nan_at_first(gm, example_inputs):
    """A NaN where there is none."""
    def poison(t):
        if t.is_floating_point():
            t = t.clone(); t.view(-1)[0] = float("nan")
        return t
    return lambda *args: _outputs(gm(*args), poison)


def nan_to_zero(gm, example_inputs):
    """NaNs silently replaced by 0 (a NaN-propagation bug)."""
    return lambda *args: _outputs(gm(*args), lambda t: torch.nan_to_num(t, nan=0.0)
                                  if t.is_floating_point() else t)


def half_a_unit(gm, example_inputs):
    """A plain wrong value: the first element off by 0.5."""
    def wrong(t):
        if t.is_floating_point():
            t = t.clone(); t.view(-1)[0] += 0.5
        return t
    return lambda *args: _outputs(gm(*args), wrong)


def floor_of_quotient(gm, example_inputs):
    """Floating floor division lowered to floor(a / b), as Inductor lowers it (pytorch#197895):
    a quotient just below an integer rounds up to it before the floor."""
    import operator
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in (operator.floordiv,
                                                          torch.floor_divide):
            with gm.graph.inserting_before(node):
                quotient = gm.graph.call_function(operator.truediv, tuple(node.args))
                floored = gm.graph.call_function(torch.floor, (quotient,))
            node.replace_all_uses_with(floored)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


def transposed_strides(gm, example_inputs):
    """Right values, other strides (a column-major copy of a row-major output)."""
    return lambda *args: _outputs(gm(*args), lambda t: t.t().contiguous().t()
                                  if t.dim() == 2 else t)
'''

TARGETS = {
    "floor_divide.py": '''
        import torch


        def floor_div(a, b):
            return torch.floor_divide(a, b)


        def get_inputs():
            return [torch.rand(6, 5) * 10, torch.rand(6, 5) + 1]
    ''',
    # pytorch#197895: 1.0 // 0.1 is 9 (the exact quotient of the float32 operands is
    # 9.99999985), but floor(1.0 / 0.1) is 10.
    "bucket.py": '''
import torch


def bucket(a, b):
    return a // b


def get_inputs():
    return [torch.tensor([1.0, 0.5, 6.0, 1.0, 7.0]), torch.tensor([0.1, 0.1, 0.2, 1 / 3, 2.0])]
''',
    # pytorch#145466: floor(cos(x)) in float16, where rounding cos(x) to float16 makes 1.0.
    "cos_floor.py": '''
import torch


def cos_floor(x):
    return torch.floor(torch.cos(x))


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(32, 32, dtype=torch.float16)]
''',
    # The floor of a rounding residue of an exact 0 (the mechanism of pytorch#188432).
    "floor_residue.py": '''
import torch


def floor_residue(x):
    return torch.floor(x - x.mean(dim=-1, keepdim=True))


def get_inputs():
    return [torch.full((4, 37), 0.5)]
''',
    "argmin.py": '''
import torch


def argmin_rows(x: torch.Tensor):
    return (x.t() + 1).argmin(dim=1), x.sum() > 0


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(5, 4)]
''',
    "fp16_overflow.py": '''
import torch


def ratio(x: torch.Tensor):
    y = x * 1000
    return (y * y) / (y * y + 1)  # y*y overflows float16 (inf / inf is NaN); the ratio is ~1


def get_inputs():
    return [torch.tensor([0.5, 10.0, 20.0, 0.001], dtype=torch.float16)]
''',
    "makes_tensors.py": '''
import torch


def project(x: torch.Tensor):
    weights = torch.linspace(-1.0, 1.0, 64).reshape(8, 8)  # made inside, default dtype
    noise = torch.randn(4, 8)  # a random draw inside the target
    return torch.tanh(x @ weights + noise).sum(dim=1) * 1e3


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 8)]
''',
    "log_of_negative.py": '''
import torch


def logs(x: torch.Tensor):
    return torch.log(x)  # NaN where x < 0, genuinely


def get_inputs():
    return [torch.tensor([1.0, -1.0, 2.0, 3.0])]
''',
    "well_conditioned.py": '''
import torch


def smooth(x: torch.Tensor):
    return torch.sin(x) * 2 + x.exp()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(16)]
''',
    "ill_conditioned.py": '''
import torch


def normalised(x: torch.Tensor):
    centred = x - x.mean()  # x is constant: mathematically 0, in float32 a rounding residue
    return centred / centred.abs().clamp(min=1e-6)


def get_inputs():
    return [torch.full((7,), 0.1)]
''',
    "exact_mean.py": '''
import torch


def normalised(x: torch.Tensor):
    centred = x - x.mean()  # exactly 0 in float32 and float64; one ulp away it is not
    return centred / centred.abs().clamp(min=1e-6)


def get_inputs():
    return [torch.full((8,), 0.5)]
''',
    "reinterprets.py": '''
import torch


def bits(x: torch.Tensor):
    return x.view(torch.int32).float() * 1e-9 + x  # float32 bits: no float64 reference


def get_inputs():
    return [torch.tensor([1.0, 2.0, 3.0])]
''',
    "matrix.py": '''
import torch


def double(x: torch.Tensor):
    return x * 2


def get_inputs():
    return [torch.arange(6.0).reshape(2, 3)]
''',
    "module_state.py": '''
import torch

TRACED = []


def noted(x: torch.Tensor):
    return x + 1  # the faults:noting_state backend appends to TRACED, compiled only


def get_inputs():
    return [torch.ones(3)]
''',
    "iterator.py": '''
import torch


def pieces(x: torch.Tensor):
    def gen():
        yield x + 1
        return "done"
    if torch.compiler.is_compiling():
        return iter((x + 1,))  # a tuple_iterator, and no return value
    return gen()


def get_inputs():
    return [torch.ones(3)]
''',
    "scalar.py": '''
import torch


def scaled(x: torch.Tensor):
    return x * x.sum().item()


def get_inputs():
    return [torch.ones(4)]
''',
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = write_targets(tmp_path_factory.mktemp("verdicts"), TARGETS)
    (root / "faults.py").write_text(BACKENDS)
    return root


@pytest.fixture(scope="module")
def harness(tree, tmp_path_factory):
    with eager_harness(tree, tmp_path_factory.mktemp("repro")) as handle:
        yield handle


def judge(harness, tree, name: str, backend: str, **settings):
    target = find_target(tree, tree / name)
    target.settings.update(backend=f"faults:{backend}" if backend != "eager" else backend,
                           **settings)
    return harness.validate(target)


def compiler_finding(report):
    (finding,) = [f for f in report.findings if f.right.endswith("compiled")]
    return finding


# -- point 1: exact dtypes, shapes, strides are never noise ------------------------------------


def test_wrong_integer_and_bool_outputs_are_compiler_bugs(harness, tree):
    report = judge(harness, tree, "argmin.py", "exact_off_by_one")
    assert report.verdict is Verdict.COMPILER_BUG, report.detail
    kinds = {d.kind for d in compiler_finding(report).differences}
    assert kinds == {"exact"}
    assert compiler_finding(report).evidence.reference == "eager"


def test_other_strides_of_an_output_are_a_compiler_bug(harness, tree):
    report = judge(harness, tree, "matrix.py", "transposed_strides")
    assert report.verdict is Verdict.COMPILER_BUG, report.detail
    assert [d.kind for d in compiler_finding(report).differences] == ["stride"]


# -- point 2: a reference for targets that make their own tensors ------------------------------


def test_tensors_made_inside_still_get_a_float64_reference(harness, tree):
    # The target builds a matrix and draws noise itself: float32 unless the reference run
    # makes them float64 (a float64 input times a float32 matrix fails).
    report = judge(harness, tree, "makes_tensors.py", "half_a_unit")
    evidence = compiler_finding(report).evidence
    assert evidence.reference == "eager", evidence
    assert evidence.eager_error < 1e-3 and evidence.compiled_error == pytest.approx(0.5, 1e-3)
    assert report.verdict is Verdict.COMPILER_BUG


def test_an_unavailable_reference_is_said_and_does_not_decide(harness, tree):
    report = judge(harness, tree, "reinterprets.py", "half_a_unit")
    finding = compiler_finding(report)
    assert finding.evidence.reference == "unavailable"
    assert "float64 run" in finding.evidence.reference_note
    assert report.verdict is Verdict.COMPILER_BUG


# -- point 3: NaN and infinity, in both directions --------------------------------------------


def test_float16_overflow_avoided_by_upcasting_is_numerics(harness, tree):
    report = judge(harness, tree, "fp16_overflow.py", "upcast")
    finding = compiler_finding(report)
    assert "nan" in {d.kind for d in finding.differences}
    assert finding.evidence.reference == "compiled"
    assert report.verdict is Verdict.NUMERICAL_NOISE, report.detail


def test_a_nan_the_reference_does_not_have_is_a_bug(harness, tree):
    report = judge(harness, tree, "well_conditioned.py", "nan_at_first")
    assert report.verdict is Verdict.COMPILER_BUG
    assert compiler_finding(report).evidence.reference == "eager"


def test_a_nan_lost_by_the_compiled_run_is_a_bug(harness, tree):
    report = judge(harness, tree, "log_of_negative.py", "nan_to_zero")
    assert report.verdict is Verdict.COMPILER_BUG
    assert compiler_finding(report).evidence.reference == "eager"


# -- numerics that only look like bugs: the program's own sensitivity --------------------------


def test_rounding_amplified_by_an_ill_conditioned_program_is_numerics(harness, tree):
    report = judge(harness, tree, "ill_conditioned.py", "ulp")
    finding = compiler_finding(report)
    assert report.verdict is Verdict.NUMERICAL_NOISE, report.detail
    assert finding.evidence.excused_by in ("reference", "sensitivity")
    assert finding.evidence.sensitivity is None or finding.evidence.sensitivity > 0.1


def test_sensitivity_excuses_what_the_reference_cannot(harness, tree):
    # Eager and float64 both give exactly 0; compiled, one ulp off, gives 0.06. Only the
    # perturbed runs show that the program itself turns an ulp into that much.
    report = judge(harness, tree, "exact_mean.py", "ulp")
    evidence = compiler_finding(report).evidence
    assert evidence.reference == "eager" and evidence.excused_by == "sensitivity", evidence
    assert evidence.sensitivity > 0.01
    assert report.verdict is Verdict.NUMERICAL_NOISE


def test_one_ulp_on_a_well_conditioned_program_is_not_a_difference(harness, tree):
    assert judge(harness, tree, "well_conditioned.py", "ulp").verdict is Verdict.PASSED


def test_a_real_error_in_a_well_conditioned_program_stays_a_bug(harness, tree):
    report = judge(harness, tree, "well_conditioned.py", "half_a_unit")
    finding = compiler_finding(report)
    assert report.verdict is Verdict.COMPILER_BUG
    assert finding.evidence.reference == "eager"
    assert finding.evidence.compiled_error == pytest.approx(0.5, rel=1e-3)


# -- point 4: Python-level results ------------------------------------------------------------


def test_module_state_changed_only_by_the_compiled_run_is_a_bug(harness, tree):
    report = judge(harness, tree, "module_state.py", "noting_state")
    assert report.verdict is Verdict.COMPILER_BUG, report.detail
    (difference,) = compiler_finding(report).differences
    assert difference.path.startswith("result['module_state']['TRACED']")


def test_an_iterator_of_another_type_without_return_value_is_told_apart(harness, tree):
    # The compiled run returns another iterator because the program asks whether it is
    # being compiled: the difference is reported, and the program's question excuses it.
    report = judge(harness, tree, "iterator.py", "eager")
    assert report.verdict is Verdict.UNDEFINED_BEHAVIOUR, report.detail
    assert "compile-dependent-path" in report.detail and "iterator.py:" in report.detail
    messages = " ".join(d.message for d in compiler_finding(report).differences)
    assert "generator" in messages and "tuple_iterator" in messages


# -- point 5: Dynamo switches -----------------------------------------------------------------


def test_dynamo_switch_from_the_header_is_applied_and_reset(harness, tree):
    captured = judge(harness, tree, "scalar.py", "eager",
                     **{"dynamo.capture_scalar_outputs": True})
    assert captured.verdict is Verdict.PASSED
    assert captured.breaks["original"].breaks == 0
    assert captured.settings.dynamo_config == (("capture_scalar_outputs", True),)
    plain = judge(harness, tree, "scalar.py", "eager")
    assert plain.breaks["original"].breaks >= 1  # the switch did not leak into the next run


def _oracle(*args, cwd=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", "oracle", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=timeout)


def test_dynamo_switch_on_the_command_line_and_unknown_switches(tree):
    result = _oracle(str(tree / "scalar.py"), "--backend", "eager", "--format", "json",
                     "--dynamo-config", "capture_scalar_outputs=true")
    assert result.returncode == 0, result.stderr
    (record,) = json.loads(result.stdout)["targets"]
    assert record["breaks"]["original"]["breaks"] == 0
    wrong = _oracle(str(tree / "scalar.py"), "--dynamo-config", "capture_scalar_output=true")
    assert wrong.returncode == 2
    assert "capture_scalar_outputs" in wrong.stderr  # the close match is suggested


def test_dynamo_table_in_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.eqrewrite.oracle]\nbackend = 'eager'\n"
        "[tool.eqrewrite.oracle.dynamo]\ncapture_scalar_outputs = true\n")
    (tmp_path / "scalar.py").write_text(textwrap.dedent(TARGETS["scalar.py"]))
    result = _oracle(str(tmp_path / "scalar.py"), "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["settings"]["dynamo_config"] == [["capture_scalar_outputs", True]]
    assert document["targets"][0]["breaks"]["original"]["breaks"] == 0


def test_unknown_oracle_keys_and_backends_are_usage_errors(tmp_path):
    (tmp_path / "scalar.py").write_text(textwrap.dedent(TARGETS["scalar.py"]))
    (tmp_path / "pyproject.toml").write_text("[tool.eqrewrite.oracle]\nbakend = 'eager'\n")
    result = _oracle(str(tmp_path / "scalar.py"))
    assert result.returncode == 2 and "unknown key 'bakend'" in result.stderr
    (tmp_path / "pyproject.toml").write_text("")
    result = _oracle(str(tmp_path / "scalar.py"), "--backend", "nonsense")
    assert result.returncode == 2 and "unknown backend 'nonsense'" in result.stderr
    (tmp_path / "no_target.py").write_text("import torch\n\ndef f(x):\n    return x\n")
    result = _oracle(str(tmp_path / "no_target.py"))
    assert result.returncode == 2 and "declares no target" in result.stderr


# -- point 6: Inductor by default ---------------------------------------------------------------


def test_the_default_backend_is_inductor_and_the_report_says_so(tree):
    assert CompileSettings().backend == "inductor"
    result = _oracle(str(tree / "matrix.py"), "--no-breaks")
    assert result.returncode == 0, result.stderr
    assert "backend=inductor" in result.stdout.splitlines()[0]


# -- point 7: reproducers agree with the verdict and go where asked -----------------------------


def test_reproducer_exits_one_exactly_for_compiler_bugs(harness, tree):
    report = judge(harness, tree, "argmin.py", "exact_off_by_one")
    script = Path(compiler_finding(report).reproducer)
    alone = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           cwd="/", timeout=300)
    assert alone.returncode == 1, alone.stdout + alone.stderr
    assert "compiler-bug" in alone.stdout
    noise = judge(harness, tree, "fp16_overflow.py", "upcast")
    assert compiler_finding(noise).reproducer is None  # no bug, no reproducer


def test_reproducers_never_land_in_the_current_folder(tree, tmp_path):
    report_file = tmp_path / "out" / "report.json"
    report_file.parent.mkdir()
    work = tmp_path / "cwd"
    work.mkdir()
    result = _oracle(str(tree / "argmin.py"), "--backend", "faults:exact_off_by_one",
                     "--no-breaks", "--format", "json", "-o", str(report_file), cwd=work)
    assert result.returncode == 1, result.stderr
    assert list(work.iterdir()) == []
    (target,) = json.loads(report_file.read_text())["targets"]
    reproducer = Path(target["findings"][0]["reproducer"])
    assert reproducer.parent.parent == report_file.parent / "report-reproducers"


# -- point 8: confidence and order -------------------------------------------------------------


def test_findings_state_their_evidence_and_confirmed_bugs_come_first(harness, tree):
    from eqrewrite.oracle.harness.report import confidence, ordered

    confirmed = judge(harness, tree, "argmin.py", "exact_off_by_one")
    noise = judge(harness, tree, "fp16_overflow.py", "upcast")
    passed = judge(harness, tree, "matrix.py", "eager")
    evidence = compiler_finding(confirmed).evidence
    assert evidence.deterministic and evidence.reference == "eager"
    assert confidence(confirmed) == "confirmed"
    assert [r.target for r in ordered([passed, noise, confirmed])] == [
        confirmed.target, noise.target, passed.target]


def _decide_with(emulated_output: torch.Tensor | None, backend: str = "inductor"):
    """``decide`` on one bfloat16 value difference that neither the float64 reference (it
    agrees with neither side) nor the program's sensitivity (perturbed runs equal eager)
    explains; the run compiled with ``emulate_precision_casts`` returns ``emulated_output``.
    Returns the verdict, the evidence and the requests made."""
    from dataclasses import replace as with_changes

    from eqrewrite.oracle.judging import compare as cmp
    from eqrewrite.oracle.judging.judge import decide, differ
    from eqrewrite.oracle.judging.protocol import RunRequest, RunResult, Variant

    def observed(*values: float) -> dict:
        return {"output": torch.tensor(values, dtype=torch.bfloat16)}

    eager, compiled = RunResult(observed(1.0, 25.25)), RunResult(observed(1.0, 31.5))
    outputs = {Variant.REFERENCE: RunResult({"output": torch.tensor([1.0, 24.0],
                                                                    dtype=torch.float64)}),
               Variant.PERTURBED: eager, Variant.CHECKED: eager}  # no undefined behaviour
    made = []

    def call(request: RunRequest) -> RunResult:
        made.append(request)
        if request.variant is Variant.COMPILED:
            assert dict(request.settings.inductor_config) == {"emulate_precision_casts": True}
            return RunResult({"output": emulated_output})
        return outputs[request.variant]

    base = RunRequest(None, CompileSettings(backend=backend), Variant.EAGER)  # type: ignore[arg-type]
    options = cmp.CompareOptions()
    differences = differ(eager, compiled, options)
    verdict, evidence = decide(differences, eager, compiled, call, with_changes(base), options)
    return verdict, evidence, made


def test_a_difference_rounding_like_eager_removes_is_numerics():
    """Inductor keeps bf16 intermediates in fp32; compiled with emulate_precision_casts
    (eager's rounding) the value agrees with eager: numerical noise, and the evidence says
    why. The same difference that emulation does not remove stays a compiler bug, and a
    backend other than Inductor is not asked (the switch is Inductor's)."""
    from eqrewrite.oracle.judging.protocol import Variant

    verdict, evidence, made = _decide_with(torch.tensor([1.0, 25.25], dtype=torch.bfloat16))
    assert verdict is Verdict.NUMERICAL_NOISE and evidence.excused_by == "precision casts"
    assert [r.variant for r in made].count(Variant.COMPILED) == 1
    verdict, evidence, _ = _decide_with(torch.tensor([1.0, 31.5], dtype=torch.bfloat16))
    assert verdict is Verdict.COMPILER_BUG and evidence.excused_by == ""
    verdict, _, made = _decide_with(None, backend="aot_eager")
    assert verdict is Verdict.COMPILER_BUG
    assert Variant.COMPILED not in [r.variant for r in made]


def test_an_output_without_a_derivative_is_compared_without_input_gradients(harness, tree):
    """floor_divide has no derivative: eagerly only its backward fails, while AOT autograd
    fails at compile time. Gradients cannot be compared then, so the target runs without
    input gradients and is judged on its outputs (it was a compile error before)."""
    target = find_target(tree, tree / "floor_divide.py")
    target.settings.update(backend="aot_eager")
    report = harness.validate(target)
    assert report.verdict is Verdict.PASSED, report.detail


# -- issue 20, item 4: integer jumps -----------------------------------------------------------


def test_a_floor_division_jump_the_exact_answer_decides_is_a_bug(harness, tree):
    """pytorch#197895 (Inductor's floor(a / b) lowering, emulated by a backend): every
    quotient is a rounding away from an integer, so perturbed eager runs jump as well and the
    sensitivity used to excuse it; the float64 reference, steady under nudged inputs, equals
    eager, so compiled jumped to the wrong side: a compiler bug, and the evidence says why."""
    report = judge(harness, tree, "bucket.py", "floor_of_quotient")
    finding = compiler_finding(report)
    assert report.verdict is Verdict.COMPILER_BUG, report.detail
    assert finding.evidence.cause == "integer-jump", finding.evidence
    assert finding.evidence.reference == "eager" and finding.evidence.compiled_error == 1
    assert "4 values" in finding.evidence.cause_note  # 7 // 2 is not near a boundary
    assert "__floordiv__" in finding.evidence.cause_note
    assert "integer-jump" in report.detail


def test_a_jump_on_the_eager_side_is_numerics(harness, tree):
    """pytorch#145466's mechanism: eager rounds cos(x) to float16 (1.0) before the floor,
    the float32 evaluation does not (0.9999): the reference sides with compiled."""
    report = judge(harness, tree, "cos_floor.py", "upcast")
    finding = compiler_finding(report)
    assert report.verdict is Verdict.NUMERICAL_NOISE, report.detail
    assert finding.evidence.reference == "compiled" and finding.evidence.cause == ""


def test_a_jump_at_a_tie_of_the_exact_answer_is_left_to_the_sensitivity(harness, tree):
    """floor(x - mean(x)) of a constant row: the reference's 0 equals eager's, but it is an
    exact tie that nudged inputs flip, so no integer jump: the sensitivity excuses it."""
    report = judge(harness, tree, "floor_residue.py", "ulp_down")
    finding = compiler_finding(report)
    assert report.verdict is Verdict.NUMERICAL_NOISE, report.detail
    assert finding.evidence.reference == "eager" and finding.evidence.cause == ""
    assert finding.evidence.excused_by == "sensitivity"


def _decide_jump(eager_values, compiled_values, reference_values, *, nudged=None,
                 called=("floor_divide",), perturbed=None):
    """``decide`` on recorded float32 outputs: the reference (and each nudged reference,
    default: the same values) as given, the perturbed eager runs ``perturbed`` (default: they
    move as far as compiled, as near an integer boundary they do). Returns the verdict, the
    evidence and the variants run."""
    from eqrewrite.oracle.judging import compare as cmp
    from eqrewrite.oracle.judging.judge import decide, differ
    from eqrewrite.oracle.judging.protocol import RunRequest, RunResult, Variant

    def result(values, dtype=torch.float32, **extra):
        return RunResult({"output": torch.tensor(values, dtype=dtype)}, **extra)

    eager, compiled = result(eager_values), result(compiled_values)
    made = []

    def call(request: RunRequest) -> RunResult:
        made.append((request.variant, request.perturbation))
        if request.variant is Variant.REFERENCE:
            values = reference_values if request.perturbation == 0 else (
                nudged or reference_values)
            return result(values, torch.float64, called=tuple(called))
        if request.variant is Variant.PERTURBED:
            return result(perturbed or compiled_values)
        if request.variant is Variant.CHECKED:  # the semantics triage: nothing undefined
            return eager
        raise AssertionError(request.variant)

    base = RunRequest(None, CompileSettings(backend="aot_eager"), Variant.EAGER)  # type: ignore[arg-type]
    options = cmp.CompareOptions()
    verdict, evidence = decide(differ(eager, compiled, options), eager, compiled, call, base,
                               options)
    return verdict, evidence, made


def test_integer_jumps_on_recorded_outputs():
    """The rule on recorded outputs (pytorch#197895's values: eager 9, 4, 29, 2; compiled
    10, 5, 30, 3): a compiler bug when the steady reference equals eager, with no perturbed
    runs needed; noise otherwise, whatever side the perturbed runs take."""
    from eqrewrite.oracle.judging.protocol import Variant

    eager, compiled = [9.0, 4.0, 29.0, 2.0, 3.0], [10.0, 5.0, 30.0, 3.0, 3.0]
    verdict, evidence, made = _decide_jump(eager, compiled, eager)
    assert verdict is Verdict.COMPILER_BUG and evidence.cause == "integer-jump"
    assert "4 values" in evidence.cause_note
    # the semantics check, the reference, four nudged
    assert [v for v, _ in made] == [Variant.CHECKED] + [Variant.REFERENCE] * 5
    assert sorted(p for v, p in made if v is Variant.REFERENCE) == [0, 1, 2, 3, 4]

    # Exact arithmetic sides with compiled: eager jumped (it rounded first).
    verdict, evidence, _ = _decide_jump(eager, compiled, compiled)
    assert verdict is Verdict.NUMERICAL_NOISE and evidence.cause == ""

    # The reference's answer is a tie that a nudge flips: left to the sensitivity.
    verdict, evidence, _ = _decide_jump(eager, compiled, eager,
                                        nudged=[9.0, 5.0, 29.0, 2.0, 3.0])
    assert verdict is Verdict.NUMERICAL_NOISE and evidence.excused_by == "sensitivity"

    # The program calls no rounding operation (sign, where, a comparison): not recognised.
    verdict, evidence, _ = _decide_jump(eager, compiled, eager, called=("sign", "sub"))
    assert verdict is Verdict.NUMERICAL_NOISE and evidence.cause == ""

    # The reference sides with eager at some values and with compiled at others: rounding
    # both ways, no integer jump.
    verdict, evidence, _ = _decide_jump(eager, compiled, [9.0, 4.0, 29.0, 3.0, 3.0])
    assert verdict is Verdict.NUMERICAL_NOISE and evidence.cause == ""

    # Values that are not whole numbers are no integer jump.
    verdict, evidence, _ = _decide_jump([9.5, 4.0], [10.5, 4.0], [9.5, 4.0],
                                        perturbed=[10.5, 4.0])
    assert verdict is Verdict.NUMERICAL_NOISE and evidence.cause == ""

    # A division with a rounding mode, recorded by name and mode, counts.
    verdict, evidence, _ = _decide_jump(eager, compiled, eager, called=("div:floor",))
    assert verdict is Verdict.COMPILER_BUG and "div:floor" in evidence.cause_note


def test_the_reference_records_what_the_program_calls():
    from eqrewrite.oracle.judging.reference import float64_reference

    a, b = torch.tensor([1.0, 2.0]), torch.tensor([0.1, 0.3])
    with float64_reference() as mode:
        a // b
        torch.div(a, b, rounding_mode="trunc")
        torch.floor(torch.cos(a))
    assert {"__floordiv__", "div:trunc", "floor", "cos"} <= mode.called
