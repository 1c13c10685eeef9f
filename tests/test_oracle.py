"""The oracle harness end to end, with real worker processes and small real modules."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from eqrewrite.oracle.harness.harness import Harness, HarnessOptions
from eqrewrite.oracle.harness.targets import find_target
from eqrewrite.oracle.judging.settings import CompileSettings, TargetForm
from oracle_support import MLP, eager_harness, write_targets

CASES = {
    "good.py": MLP,
    "nested.py": '''
import collections
import dataclasses
import torch


class Output(collections.OrderedDict):
    """Like Hugging Face's ModelOutput: a dict with attributes."""


@dataclasses.dataclass
class Stats:
    mean: torch.Tensor
    count: int


def summarize(x: torch.Tensor):
    out = Output(logits=torch.log(x), extra=(x.sum(), [x.max(), {"n": 3}]))
    return out, Stats(x.mean(), x.numel())


def get_inputs():
    return [torch.tensor([1.0, -1.0, 2.0, -3.0])]  # log of negatives: NaN positions
''',
    "generator.py": '''
import torch


def chunks(x: torch.Tensor):
    for piece in x.split(2):  # a generator: drained and compared item by item
        yield piece * 2


def get_inputs():
    return [torch.arange(6.0)]
''',
    "nondet.py": '''
import os
import torch


def noisy(x: torch.Tensor):
    return x + os.urandom(1)[0]  # a different number on every run


def get_inputs():
    return [torch.ones(3)]
''',
    "crash.py": '''
import os
import signal
import torch


def boom(x: torch.Tensor):
    os.kill(os.getpid(), signal.SIGSEGV)


def get_inputs():
    return [torch.ones(1)]
''',
    "hog.py": '''
import torch


def hog(x: torch.Tensor):
    return torch.empty(2**42) + x  # 16 TiB: beyond any memory limit


def get_inputs():
    return [torch.ones(1)]
''',
    "hang.py": '''
import time
import torch


def wait(x: torch.Tensor):
    time.sleep(600)


def get_inputs():
    return [torch.ones(1)]
''',
    "inplace.py": '''
import torch


def scale_(x: torch.Tensor):
    x.mul_(2)  # mutates its input: the input after the call is an output too
    return x.sum()


def get_inputs():
    return [torch.arange(4.0)]
''',
}

CORRUPT_BACKEND = '''
import torch


def corrupt(gm, example_inputs):
    """A broken 'compiler': runs the graph, then perturbs one output element."""
    def run(*args):
        outputs = gm(*args)
        first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
        with torch.no_grad():
            first.view(-1)[0] += 0.5
        return outputs
    return run


def crash(gm, example_inputs):
    """A 'compiler' that fails on every graph holding a multiplication."""
    if any(node.target is torch.mul or getattr(node.target, "__name__", "") == "mul"
           for node in gm.graph.nodes):
        raise RuntimeError("cannot lower mul")
    return gm
'''


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = write_targets(tmp_path_factory.mktemp("targets"), CASES)
    (root / "corrupt_backend.py").write_text(CORRUPT_BACKEND)
    return root


@pytest.fixture(scope="module")
def harness(tree, tmp_path_factory):
    with eager_harness(tree, tmp_path_factory.mktemp("repro")) as handle:
        yield handle


def validate(harness, tree, name, **settings):
    target = find_target(tree, tree / name)
    if settings:
        target.settings.update(settings)
    return harness.validate(target)


def test_target_convention(tree):
    target = find_target(tree, tree / "good.py")
    assert (target.attribute, target.form, target.has_init_inputs) == (
        "Mlp", TargetForm.MODULE, True)
    assert find_target(tree, tree / "corrupt_backend.py") is None  # no inputs: no target


def test_correct_module_passes_with_breaks_counted(harness, tree):
    report = validate(harness, tree, "good.py")
    assert report.verdict == "passed", report.detail
    assert report.breaks["original"].breaks == 0
    assert report.breaks["original"].graph_count == 1


def test_breaks_counted_apart_also_say_whether_fullgraph_compiles(tree):
    separate = Harness(tree, None, HarnessOptions(CompileSettings(backend="eager"), timeout=120,
                                           separate_break_count=True))
    try:
        report = validate(separate, tree, "good.py")
    finally:
        separate.close()
    assert report.verdict == "passed", report.detail
    counted = report.breaks["original"]
    assert (counted.breaks, counted.graph_count, counted.fullgraph_ok) == (0, 1, True)


def test_nested_outputs_and_nan_positions_compare_equal(harness, tree):
    report = validate(harness, tree, "nested.py")
    assert report.verdict == "passed", report.detail


def test_generator_outputs_are_drained_and_compared(harness, tree):
    report = validate(harness, tree, "generator.py")
    assert report.verdict == "passed", report.detail
    from eqrewrite.oracle.judging.observe import settle, to_plain

    def numbers():
        yield 1
        return "done"

    drained = to_plain(settle([numbers(), iter((3,))]))
    assert [(r.type, r.fields) for r in drained] == [
        ("builtins.generator", {"yielded": [1], "returned": "done"}),
        ("builtins.tuple_iterator", {"yielded": [3], "returned": None})]


def test_nondeterministic_target_is_reported_as_such(harness, tree):
    report = validate(harness, tree, "nondet.py")
    assert report.verdict == "nondeterministic"
    assert "two eager runs" in report.detail


def test_segfault_is_contained(harness, tree):
    report = validate(harness, tree, "crash.py")
    assert report.verdict == "crash" and "SIGSEGV" in report.detail
    assert validate(harness, tree, "inplace.py").verdict == "passed"  # the run goes on


def test_out_of_memory_is_contained(harness, tree):
    report = validate(harness, tree, "hog.py")
    assert report.verdict == "oom" and "allocate" in report.detail
    assert validate(harness, tree, "inplace.py").verdict == "passed"


def test_hang_is_contained(tree):
    # Long enough for a fresh worker's first Dynamo compile on a busy machine.
    impatient = Harness(tree, None, HarnessOptions(CompileSettings(backend="eager"), timeout=30,
                                            count_breaks=False))
    try:
        report = validate(impatient, tree, "hang.py")
        assert report.verdict == "timeout" and "30 s" in report.detail
        assert validate(impatient, tree, "inplace.py").verdict == "passed"
    finally:
        impatient.close()


def test_corrupting_backend_is_a_compiler_bug_with_a_failing_reproducer(harness, tree):
    report = validate(harness, tree, "good.py", backend="corrupt_backend:corrupt")
    assert report.verdict == "compiler-bug", report.detail
    (finding,) = [f for f in report.findings if f.verdict == "compiler-bug"]
    assert finding.left == "original eager" and finding.right == "original compiled"
    assert any(d.kind == "value" and d.max_abs == pytest.approx(0.5, rel=1e-3)
               for d in finding.differences)
    script = Path(finding.reproducer)
    alone = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           cwd=script.parent, timeout=120)
    assert alone.returncode == 1, alone.stdout + alone.stderr
    assert "compiler-bug: reference agrees with eager" in alone.stdout


def test_a_compile_crash_gets_a_reproducer_that_fails_while_compiling_raises(harness, tree):
    """A crash is minimised like a bug (``eqrewrite reduce``): the oracle writes its
    reproducer folder too, and the script exits 1 while compiling raises."""
    report = validate(harness, tree, "good.py", backend="corrupt_backend:crash")
    assert report.verdict == "compile-error", report.detail
    (finding,) = [f for f in report.findings if f.verdict == "compile-error"]
    assert "cannot lower mul" in finding.detail
    script = Path(finding.reproducer)
    alone = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           cwd=script.parent, timeout=120)
    assert alone.returncode == 1, alone.stdout + alone.stderr
    assert "cannot lower mul" in alone.stdout + alone.stderr


WRONG_PACK = """\
rules:
  - id: swap-sub
    description: deliberately wrong - swaps the operands of a subtraction
    pattern: $a - $b
    rewrite: torch.sub($b, $a)
    where:
      - tensor: $a
    examples:
      - before: |
          import torch
          def f(x: torch.Tensor):
              return x - 1
        after: |
          import torch
          def f(x: torch.Tensor):
              return torch.sub(1, x)
  - id: neg
    description: correct
    pattern: -$a
    rewrite: torch.neg($a)
    where:
      - tensor: $a
    examples:
      - before: |
          import torch
          def f(x: torch.Tensor):
              return -x
        after: |
          import torch
          def f(x: torch.Tensor):
              return torch.neg(x)
"""


@pytest.fixture
def wrong_setup(tmp_path) -> tuple[Path, Path]:
    """A source tree with the MLP target, and the pack with one wrong rule."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "good.py").write_text(textwrap.dedent(MLP))
    pack = tmp_path / "wrong.yaml"
    pack.write_text(WRONG_PACK)
    return source, pack


def test_wrong_rule_is_caught_and_rolled_back(wrong_setup, tmp_path):
    source, pack = wrong_setup
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "eqrewrite.rewriter", str(source), "--rules", str(pack), "--oracle",
         "--rollback", "--out", str(out), "--no-cache", "--backend", "eager", "--no-breaks"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reverted in good.py::Mlp: good.py:13 swap-sub" in result.stdout
    assert "passed" in result.stdout
    rewritten = (out / "good.py").read_text()
    assert "return (h - y) * 2 + torch.neg(h)" in rewritten  # the correct edit stays


def test_wrong_rule_without_rollback_fails_the_run(wrong_setup, tmp_path):
    source, pack = wrong_setup
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", str(source), "--rules", str(pack),
                    "--out", str(out), "--no-cache"], check=True, capture_output=True)
    result = subprocess.run(
        [sys.executable, "-m", "eqrewrite.rewriter", "oracle", str(source), "--format", "json",
         "--no-breaks", "--backend", "eager", "--rewritten", str(out)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    (record,) = json.loads(result.stdout)["targets"]
    assert record["verdict"] == "rewrite-changed-behaviour"
    assert record["findings"][0]["left"] == "original eager"


def test_oracle_step_with_json_prints_one_document(wrong_setup, tmp_path):
    source, _ = wrong_setup
    result = subprocess.run(
        [sys.executable, "-m", "eqrewrite.rewriter", str(source), "--oracle", "--format",
         "json", "--out", str(tmp_path / "out"), "--no-cache", "--backend", "eager"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)  # the whole of stdout is one JSON document
    (target,) = document["steps"]["oracle"]["targets"]
    assert target["verdict"] == "passed" and document["summary"]
    assert "passed" in result.stderr  # the table, for people, on stderr


ORPHAN_SCRIPT = """
import sys, time
from pathlib import Path
from eqrewrite.oracle.harness.harness import Harness, HarnessOptions
from eqrewrite.oracle.judging.settings import CompileSettings
from eqrewrite.oracle.harness.targets import find_target

if __name__ == "__main__":
    tree = Path(sys.argv[1])
    harness = Harness(tree, tree, HarnessOptions(CompileSettings(backend="eager"), timeout=600))
    harness.worker.call("purge")
    print(harness.worker.process.pid, flush=True)
    harness.validate(find_target(tree, tree / "hang.py"))
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


def test_workers_die_with_a_killed_oracle(tree, tmp_path):
    import os
    import signal
    import time

    script = tmp_path / "orphan.py"
    script.write_text(ORPHAN_SCRIPT)
    parent = subprocess.Popen([sys.executable, str(script), str(tree)], stdout=subprocess.PIPE,
                              text=True)
    pids = [int(p) for p in parent.stdout.readline().split()]
    assert len(pids) == 1 and all(_alive(pid) for pid in pids)
    time.sleep(1.0)  # the hanging target is running now
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids)


def test_a_worker_ends_a_run_that_overstays_its_own_deadline(tree):
    from dataclasses import replace

    from eqrewrite.oracle.harness.pool import Worker
    from eqrewrite.oracle.judging import worker as worker_module
    from eqrewrite.oracle.judging.protocol import FailureKind, RunRequest, Variant

    handle = Worker({"original": tree})
    try:
        target = find_target(tree, tree / "hang.py")
        request = RunRequest(target, CompileSettings(backend="eager"), Variant.EAGER,
                             deadline=1.0)
        assert handle.submit(replace(request)) is None
        # The parent waits far longer than the run's deadline: the worker itself must stop it.
        result = handle.receive(timeout=worker_module.DEADLINE_GRACE + 60)
        assert result.failure.kind is FailureKind.CRASH
        assert "status 71" in result.failure.message
    finally:
        handle.close()


def test_a_wrapped_compile_error_is_described_with_its_cause():
    """``BackendCompilerFailed`` says only "backend='inductor' raised:" on its first line;
    the cause on the next line is part of the description (campaign signatures used to
    lump every Inductor crash together, and reproducers did not say what failed)."""
    from eqrewrite.oracle.judging.protocol import RaisedException

    wrapped = RaisedException(
        "torch._dynamo.exc.BackendCompilerFailed",
        "backend='inductor' raised:\nRuntimeError: as_strided_scatter: sizes [3, 1] are out "
        "of bounds\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace", ())
    assert wrapped.describe() == ("BackendCompilerFailed: backend='inductor' raised: "
                                  "RuntimeError: as_strided_scatter: sizes [3, 1] are out of "
                                  "bounds")
    plain = RaisedException("builtins.ValueError", "width must be even:\n  got 3", ())
    assert plain.describe() == "ValueError: width must be even: got 3"
    one_line = RaisedException("builtins.KeyError", "'x'\nmore text", ())
    assert one_line.describe() == "KeyError: 'x'"
