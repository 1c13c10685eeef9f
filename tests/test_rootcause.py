"""One finding per root cause: findings of a campaign grouped by their reduced programs."""

from __future__ import annotations

import json
from pathlib import Path

from eqrewrite.oracle.campaign.rootcause import ROOT_CAUSES, merge, root_cause

CRASH = ("original compiled raised where eager did not: BackendCompilerFailed: "
         "backend='inductor' raised: RuntimeError: During torch.compile, encountered a "
         "mutation on a view chain of length {n}, where view 1 was an as_strided() call.")
BACKWARD = {"findings": [{"verdict": "compiler-bug", "differences": [
    {"path": "result['grads']", "kind": "structure",
     "message": "result['grads']: missing keys ['input0'], unexpected keys ['backward_error']"}]}]}


def finding(root: Path, name: str, program: str, **record) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "minimal.py").write_text(
        f"import torch\n\n\n{program}\n\ndef get_inputs():\n    return [torch.randn(4)]\n\n\n"
        "def run(compiled=False):\n    return torch.compile(program)(*get_inputs())\n")
    record.setdefault("verdict", "compiler-bug" if record["class"] == "compiler-bug"
                      else "compile-error")
    (folder / "finding.json").write_text(json.dumps(record))
    return folder


def test_crashes_with_one_compiler_error_are_one_finding_whatever_the_ops(tmp_path):
    finding(tmp_path, "compile-crash-a", "def program(x):\n    x.as_strided((2,), (1,)).sign_()\n"
            "    return x.sin().cos()", **{"class": "compile-crash", "seeds": [3],
                                           "detail": CRASH.format(n=2)})
    finding(tmp_path, "compile-crash-b", "def program(x):\n    x.as_strided((2,), (2,)).neg_()",
            **{"class": "compile-crash", "seeds": [9], "detail": CRASH.format(n=3)})
    finding(tmp_path, "compile-crash-c", "def program(x):\n    return x.sin()",
            **{"class": "compile-crash", "seeds": [5], "detail": CRASH.replace(
                "as_strided()", "unfold()").format(n=2)})
    groups = merge(tmp_path, tmp_path / ROOT_CAUSES)
    assert sorted(len(g.folders) for g in groups) == [1, 2]
    (merged,) = [g for g in groups if len(g.folders) == 2]
    assert merged.seeds == [3, 9] and merged.representative.name == "compile-crash-b"
    assert "inductor" not in merged.cause.error and "view chain" in merged.cause.error
    kept = json.loads((tmp_path / "compile-crash-a" / "finding.json").read_text())
    assert kept["duplicate_of"] == "compile-crash-b" and kept["root_cause"]["seeds"] == [3, 9]
    written = json.loads((tmp_path / ROOT_CAUSES).read_text())
    assert [e["representative"] for e in written] == sorted(
        e["representative"] for e in written)  # crashes, ordered by folder


def test_wrong_results_differ_by_computation_not_by_spelling(tmp_path):
    common = {"class": "compiler-bug", "kinds": ["output/exact"]}
    one = finding(tmp_path, "compiler-bug-1", "def program(x):\n    return (x.t() + 0.5).argmin()",
                  **common, seeds=[1])
    two = finding(tmp_path, "compiler-bug-2",
                  "def program(x):\n    return torch.add(x.transpose(0, 1), 0.5).argmin()",
                  **common, seeds=[2])
    three = finding(tmp_path, "compiler-bug-3", "def program(x):\n    return (x + 0.5).argmax()",
                    **common, seeds=[4])
    assert root_cause(one) == root_cause(two) != root_cause(three)
    assert root_cause(one).views and not root_cause(three).views


def test_backward_errors_after_in_place_writes_are_one_cause(tmp_path):
    first = finding(tmp_path, "compiler-bug-x", "def program(x):\n    v = x.log()\n"
                    "    torch._dynamo.graph_break()\n    v.clamp_(0)\n    return x.exp()",
                    **{"class": "compiler-bug", "kinds": ["grads/structure"], "oracle": BACKWARD})
    second = finding(tmp_path, "compiler-bug-y", "def program(x):\n    v = x.pow(2)\n"
                     "    torch._dynamo.graph_break()\n    v.mul_(3)\n    return x.sin()",
                     **{"class": "compiler-bug", "kinds": ["grads/structure"],
                        "oracle": BACKWARD})
    assert root_cause(first) == root_cause(second)
    assert root_cause(first).kind == "backward-error"


def test_the_harness_of_todays_minimal_script_is_not_part_of_the_cause(tmp_path):
    """minimal.py installs its exception hook before the program: not a computation."""
    folder = finding(tmp_path, "compiler-bug-h", "def program(x):\n    return x.sin()",
                     **{"class": "compiler-bug", "kinds": ["output/value"]})
    text = (folder / "minimal.py").read_text()
    (folder / "minimal.py").write_text(
        "import sys\n\n\ndef broken(kind, error, trace):\n    sys.__excepthook__(kind, error, "
        "trace)\n    sys.exit(2)\n\n\nsys.excepthook = broken\n\n"
        "# -- the program -----------------------------------------------------------\n" + text)
    assert root_cause(folder).ops == ("sin",)


def test_stride_differences_are_one_cause_per_family_of_ops(tmp_path):
    """Only strides differ: every pointwise op follows Inductor's one layout rule."""
    common = {"class": "compiler-bug", "kinds": ["output/stride"]}
    fmax = finding(tmp_path, "compiler-bug-a", "def program(x):\n    return torch.fmax(x, x.t())",
                   **common)
    lerp = finding(tmp_path, "compiler-bug-b",
                   "def program(x):\n    return x.lerp(x.t(), -1.0)", **common)
    index = finding(tmp_path, "compiler-bug-c", "def program(x):\n"
                    "    return x.t().index_add(0, torch.tensor([0]), torch.ones(1, 4))", **common)
    assert root_cause(fmax) == root_cause(lerp) != root_cause(index)
    assert root_cause(fmax).ops == ("pointwise",) and root_cause(index).ops == ("indexing",)


def _gradient_record(message: str) -> dict:
    return {"class": "compiler-bug", "kinds": ["grads/type"], "oracle": {"findings": [
        {"verdict": "compiler-bug", "differences": [
            {"path": "result['grads']['input0']", "kind": "type", "message": message}]}]}}


def test_a_gradient_only_one_side_has_is_one_cause_per_side(tmp_path):
    """An input used only in a branch condition and one used only in a comparison both get
    a zero gradient compiled: one cause, whatever the ops; losing a gradient is another."""
    zero = "result['grads']['input0']: expected NoneType None, got Tensor(shape=[1])"
    lost = "result['grads']['input0']: expected Tensor(shape=[1]), got NoneType None"
    branch = finding(tmp_path, "compiler-bug-p", "def program(x, y):\n    if x.sum():\n"
                     "        pass\n    return y.log2()", **_gradient_record(zero))
    where = finding(tmp_path, "compiler-bug-q", "def program(x, y):\n"
                    "    return torch.where(x > 0, y, y)", **_gradient_record(zero))
    detach = finding(tmp_path, "compiler-bug-r", "def program(x):\n    v = x.sub(0.0)\n"
                     "    return v.detach(), v.t()", **_gradient_record(lost))
    assert root_cause(branch) == root_cause(where) != root_cause(detach)
    assert root_cause(detach).kind == "gradient-lost"
