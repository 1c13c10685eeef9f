"""The semantics triage: programs whose eager behaviour is undefined or unsupported, or that
differ only in warnings, are not compiler bugs; a genuine bug beside such behaviour stays one.

Two levels. The checker itself (``SemanticsMode``) on eager code: each rule on at least three
spellings, and the same computations written so they are defined, which must raise nothing.
Then the verdicts, through the oracle's harness with backends that inject one fault into
every output (no Inductor needed): a program whose every difference lies in values of
undefined behaviour is excused under that rule's verdict; the same fault in a clean output of
the same program is a compiler bug.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from eqrewrite.oracle.harness.targets import find_target  # noqa: E402
from eqrewrite.oracle.judging.judge import EXCUSED, Verdict  # noqa: E402
from eqrewrite.oracle.judging.semantics import RULES, SemanticsMode  # noqa: E402
from oracle_support import eager_harness, write_targets  # noqa: E402
from torch.compiler import is_compiling as bound_is_compiling  # noqa: E402


def checked(fn):
    """The rules ``fn()`` triggers, and the causes marked on each of its outputs."""
    mode = SemanticsMode(frame_filter=lambda name: name.endswith("test_semantics.py"))
    with mode:
        out = fn()
    found = mode.semantics({"output": out})
    outputs = out if isinstance(out, tuple) else (out,)
    marks = [found.causes((("key", "output"),) + ((("item", i),) if isinstance(out, tuple)
                                                     else ())) for i in range(len(outputs))]
    return [event.rule for event in found.events], marks


def _int(values):
    return torch.tensor(values)


# -- each rule, three spellings or more ------------------------------------------------------

UNDEFINED = {
    "overlapping-write": [
        lambda: torch.zeros(1, 4).expand(3, 4).index_put_((_int([0]),), torch.ones(4)),
        lambda: torch.arange(4.0).unfold(0, 2, 1).mul_(2),
        lambda: torch.zeros(4).as_strided((2, 2), (1, 1)).add_(1),
        lambda: torch.zeros(3, 1).expand(3, 4).masked_fill_(torch.ones(3, 4).bool(), 2.0),
        lambda: torch.zeros(1, 1).expand(2, 1)[None, 0:0].copy_(torch.ones(1, 1)),
        lambda: torch.zeros(1, 3).expand(2, 3)[0].add_(1),  # a row of an expanded tensor
    ],
    "duplicate-index-write": [
        lambda: torch.zeros(4).index_put_((_int([0, 0]),), torch.tensor([1.0, 2.0])),
        lambda: torch.zeros(3).index_copy_(0, _int([1, 1]), torch.tensor([1.0, 2.0])),
        lambda: torch.zeros(2, 3).scatter_(1, _int([[0, 0], [1, 2]]),
                                           torch.tensor([[1.0, 2.0], [3.0, 4.0]])),
        lambda: torch.zeros(4).put_(_int([3, 3]), torch.tensor([1.0, 5.0])),
    ],
    "float-to-int": [
        lambda: torch.tensor([float("nan"), 1.0]).long(),
        lambda: torch.tensor([-1.5, 2.0, 300.0]).to(torch.uint8),
        lambda: torch.zeros(2, dtype=torch.int32).copy_(torch.tensor([float("inf"), 1.0])),
        lambda: torch.tensor([1e20, 1.0]).sum(dtype=torch.int64),
    ],
    # (eager itself refuses most partial overlaps; these are the ones it runs)
    "overlapping-read-write": [
        lambda: _copy_across(),
        lambda: _broadcast_row_over_itself(),
        lambda: _scattered_from_own_transpose(),
    ],
    "as-strided-outside": [
        lambda: torch.sqrt(torch.ones(2, 3)[..., ::2]).split(1, dim=1)[0].as_strided(
            (1, 2, 1), (0, 1, 0)),
        lambda: (torch.ones(4) * 2)[::2].as_strided((2,), (1,)),
        lambda: (torch.ones(2, 2) + 1)[0].as_strided((3,), (1,)),
    ],
    "uninitialised-read": [
        lambda: torch.empty(3) * 2,
        lambda: torch.ones(2).new_empty(3).sum(),
        lambda: torch.empty_like(torch.ones(3)) + 1,
        lambda: torch.empty_strided((2, 2), (1, 2)).amax(),
    ],
    "tie-break": [
        lambda: torch.tensor([1.0, 1.0, 2.0]).sort(),
        lambda: torch.tensor([3.0, 1.0, 3.0]).topk(1),
        lambda: torch.tensor([[2, 1, 2]]).argsort(dim=1),
        lambda: torch.tensor([4.0, 4.0, 1.0, 1.0]).mode(),
    ],
    "compile-dependent-path": [
        lambda: _asks(lambda: torch.compiler.is_compiling()),
        lambda: _asks(lambda: torch._dynamo.is_compiling()),
        lambda: _asks(lambda: torch.compiler.is_dynamo_compiling()),
        lambda: _asks(lambda: bound_is_compiling()),  # bound by an import: found there too
    ],
}

DEFINED = {
    "overlapping-write": [
        lambda: torch.zeros(1, 4).expand(3, 4).clone().index_put_((_int([0]),), torch.ones(4)),
        lambda: torch.zeros(4, 4).expand(4, 4).add_(1),   # an expand to the same shape
        lambda: torch.arange(6.0).unfold(0, 2, 2).mul_(2),  # windows that do not overlap
        lambda: _base_written_under_a_view(),
    ],
    "duplicate-index-write": [
        lambda: torch.zeros(4).index_put_((_int([0, 1]),), torch.tensor([1.0, 2.0])),
        lambda: torch.zeros(4).index_put_((_int([0, 0]),), torch.tensor([2.0, 2.0])),
        lambda: torch.zeros(4).index_put_((_int([0, 0]),), torch.tensor([1.0, 2.0]),
                                          accumulate=True),
        lambda: torch.zeros(2, 3).scatter_(1, _int([[0, 1]]), torch.tensor([[1.0, 2.0]])),
    ],
    "float-to-int": [
        lambda: torch.tensor([1.7, -2.5]).long(),
        lambda: torch.tensor([255.9, 0.0]).to(torch.uint8),
        lambda: torch.tensor([float("nan")]).bool(),   # bool: NaN is true, defined
    ],
    "overlapping-read-write": [
        lambda: torch.ones(3).add_(torch.ones(3)),
        lambda: _into_itself(),
        lambda: _disjoint_halves(),
        lambda: _row_broadcast_elsewhere(),
    ],
    "as-strided-outside": [
        lambda: (torch.ones(4) * 2).as_strided((2, 2), (1, 1)),  # inside the tensor
        lambda: GIVEN[::2].as_strided((2,), (1,)),  # an input: its storage is given
        lambda: (torch.ones(2, 3) * 2)[:, :2].as_strided((2, 2), (3, 1)),
    ],
    "uninitialised-read": [
        lambda: torch.empty(3).fill_(1) * 2,
        lambda: torch.empty(3).copy_(torch.ones(3)) + 1,
        lambda: _written_half(),
    ],
    "tie-break": [
        lambda: torch.tensor([1.0, 1.0, 2.0]).sort(stable=True),
        lambda: torch.tensor([3.0, 1.0, 3.0]).argmax(),   # documented: the first maximum
        lambda: torch.tensor([3.0, 1.0, 2.0]).topk(2),
    ],
    "compile-dependent-path": [
        lambda: torch.ones(2) * 2,
        lambda: _hooked_linear(),  # torch asks itself (Module.__call__ with hooks)
    ],
}


def _asks(query):
    """A program that runs other code unless it is being compiled."""
    x = torch.ones(3)
    return x * 2 if query() else x + 1


def _hooked_linear():
    linear = torch.nn.Linear(2, 2)
    linear.register_forward_hook(lambda module, args, out: out * 2)
    return linear(torch.ones(2))


def _copy_across():
    """The campaign's program: a slice written from a transposed slice of the same tensor."""
    x = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    x[:2, :2] = torch.transpose(x, 1, 0)[:1, :2]
    return x


GIVEN = torch.ones(4)  # made before the checker runs, as a program's inputs are


def _broadcast_row_over_itself():
    x = torch.arange(6.0).reshape(2, 3) + 0
    x[:, :2] = x[0:1, 1:3]  # row 1 reads row 0 after or before it is written
    return x


def _scattered_from_own_transpose():
    x = torch.arange(6.0).reshape(2, 3) + 0
    x.masked_scatter_(torch.ones(2, 3).bool(), x.t())
    return x


def _row_broadcast_elsewhere():
    x = torch.arange(6.0).reshape(2, 3) + 0
    x[1:, :] = x[:1, :].expand(1, 3)  # reads row 0, writes row 1: no element both
    return x


def _into_itself():
    x = torch.arange(4.0) + 0
    x.copy_(x)
    return x


def _disjoint_halves():
    x = torch.arange(4.0) + 0
    x[:2].copy_(x[2:])
    return x


def _base_written_under_a_view():
    """Writing the base of an expanded view is defined: every alias sees the new value."""
    base = torch.zeros(1, 3)
    view = base.expand(2, 3)
    base.add_(1)
    return view * 2


def _written_half():
    e = torch.empty(4)
    e[:2] = 1.0
    return e[:2] * 2


@pytest.mark.parametrize("rule,index", [(r, i) for r, cases in UNDEFINED.items()
                                         for i in range(len(cases))])
def test_each_rule_is_recognised_in_several_spellings(rule, index):
    rules, marks = checked(UNDEFINED[rule][index])
    assert rule in rules
    assert any(marks), "the value the rule produced is not marked as tainted"


@pytest.mark.parametrize("rule,index", [(r, i) for r, cases in DEFINED.items()
                                         for i in range(len(cases))])
def test_the_same_computations_written_to_be_defined_raise_nothing(rule, index):
    rules, marks = checked(DEFINED[rule][index])
    assert rules == [] and not any(marks)


def test_taint_follows_the_values_not_the_program():
    """Only what undefined behaviour wrote, or what was computed from it, is tainted."""
    def program():
        clean = torch.arange(3.0) * 2
        bad = torch.tensor([float("nan")]).long()
        return clean + 1, bad * 2, clean.sum()
    rules, marks = checked(program)
    assert rules == ["float-to-int"]
    assert [bool(m) for m in marks] == [False, True, False]


def test_a_tie_taints_the_indices_only():
    rules, marks = checked(lambda: tuple(torch.tensor([2.0, 2.0, 1.0]).sort()))
    assert rules == ["tie-break"] and [bool(m) for m in marks] == [False, True]


def test_a_tainted_value_read_into_python_taints_every_output():
    def program():
        n = int(torch.tensor([float("nan")]).long().abs().remainder(3))
        return torch.ones(n + 1), torch.ones(2)
    rules, marks = checked(program)
    assert rules == ["float-to-int"] and all(marks)


def test_events_name_the_line_of_the_program():
    mode = SemanticsMode(frame_filter=lambda name: name.endswith("test_semantics.py"))
    with mode:
        torch.zeros(3).index_copy_(0, _int([1, 1]), torch.tensor([1.0, 2.0]))
    (event,) = mode.events
    assert event.frame.startswith("test_semantics.py:") and "test_events_name" in event.frame


def test_every_rule_says_why_it_is_not_a_bug():
    assert set(UNDEFINED) <= set(RULES)
    for rule in RULES.values():
        assert rule.verdict in {v.value for v in EXCUSED} and len(rule.why) > 30


# -- verdicts through the harness ---------------------------------------------------------------

FAULTS = '''
"""Backends that each inject one fault into every output of the graph."""
import warnings

import torch


def _outputs(outputs, change):
    single = not isinstance(outputs, (tuple, list))
    items = [outputs] if single else list(outputs)
    items = [change(t) if isinstance(t, torch.Tensor) else t for t in items]
    return items[0] if single else type(outputs)(items)


def _bump(t):
    t = t.clone()
    if t.dtype == torch.bool:
        t.view(-1)[0] = ~t.view(-1)[0]
    elif t.numel():
        t.view(-1)[0] += 1
    return t


def off_by_one(gm, example_inputs):
    """Every output's first element off by one."""
    return lambda *args: _outputs(gm(*args), _bump)


def silent(gm, example_inputs):
    """Runs the graph with its warnings swallowed (as a decomposition that does not warn)."""
    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return gm(*args)
    return run


def refuses_overlap(gm, example_inputs):
    """Refuses to compile, as Inductor refuses an in-place write with internal overlap."""
    raise RuntimeError("unsupported operation: more than one element of the written-to "
                       "tensor refers to a single memory location")


def crashes(gm, example_inputs):
    """Crashes for a reason of its own."""
    raise RuntimeError("lowering failed: no kernel for this layout")


def reworded(gm, example_inputs):
    """Raises what the graph raises, in other words."""
    def run(*args):
        try:
            return gm(*args)
        except Exception as error:
            raise type(error)("the same failure, said otherwise") from error
    return run
'''

PROGRAMS = {
    "overlap.py": '''
        import torch

        def f(x, idx):
            y = x.expand(3, 4)
            y.index_put_((idx,), torch.arange(4.0))
            return y * 2

        def get_inputs():
            return [torch.zeros(1, 4), torch.tensor([0, 2])]
    ''',
    "duplicates.py": '''
        import torch

        def f(x, idx):
            return x.clone().index_put_((idx,), torch.tensor([1.0, 2.0, 3.0]))

        def get_inputs():
            return [torch.zeros(4), torch.tensor([1, 1, 2])]
    ''',
    "nan_to_int.py": '''
        import torch

        def f(x):
            return (x / 0.0).to(torch.int32)

        def get_inputs():
            return [torch.tensor([0.0, 1.0, -1.0])]
    ''',
    "uninitialised.py": '''
        import torch

        def f(x):
            scratch = torch.empty(x.shape)
            return scratch + x

        def get_inputs():
            return [torch.ones(3)]
    ''',
    "ties.py": '''
        import torch

        def f(x):
            return x.sort().indices

        def get_inputs():
            return [torch.tensor([2.0, 1.0, 2.0, 1.0])]
    ''',
    # A genuine bug beside undefined behaviour: the clean output differs too.
    "mixed.py": '''
        import torch

        def f(x, y):
            return x * 2, (y / 0.0).to(torch.int32)

        def get_inputs():
            return [torch.ones(3), torch.tensor([0.0, 1.0])]
    ''',
    "mixed_overlap.py": '''
        import torch

        def f(x, z, idx):
            y = x.expand(3, 4)
            y.index_put_((idx,), torch.arange(4.0))
            return z * 2, y * 2  # x's memory is written: anything of x is tainted

        def get_inputs():
            return [torch.zeros(1, 4), torch.ones(3), torch.tensor([0, 2])]
    ''',
    "mixed_duplicates.py": '''
        import torch

        def f(x, idx):
            return x * 2, x.clone().index_put_((idx,), torch.tensor([1.0, 2.0, 3.0]))

        def get_inputs():
            return [torch.zeros(4), torch.tensor([1, 1, 2])]
    ''',
    "mixed_uninitialised.py": '''
        import torch

        def f(x):
            return x * 2, torch.empty(x.shape) + x

        def get_inputs():
            return [torch.ones(3)]
    ''',
    "mixed_ties.py": '''
        import torch

        def f(x):
            return x * 2, x.sort().indices

        def get_inputs():
            return [torch.tensor([2.0, 1.0, 2.0, 1.0])]
    ''',
    "compile_query.py": '''
        import torch

        def f(x):
            if torch.compiler.is_compiling():  # a library's compile-only path
                return x * 3
            return x * 2

        def get_inputs():
            return [torch.ones(3)]
    ''',
    "clean.py": '''
        import torch

        def f(x):
            return x * 2

        def get_inputs():
            return [torch.ones(3)]
    ''',
    "warns.py": '''
        import torch

        def f(x):
            return torch.var(x[:1], dim=0)

        def get_inputs():
            return [torch.ones(3, 4)]
    ''',
    "raises.py": '''
        # eqrewrite-oracle: raises=true
        import torch

        def f(x, index):
            return x[index] * 2

        def get_inputs():
            return [torch.ones(3), torch.tensor([5])]
    ''',
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = write_targets(tmp_path_factory.mktemp("semantics"), PROGRAMS)
    (root / "ubfaults.py").write_text(FAULTS)
    return root


@pytest.fixture(scope="module")
def harness(tree, tmp_path_factory):
    with eager_harness(tree, tmp_path_factory.mktemp("repro")) as handle:
        yield handle


def verdict_of(harness, tree, name: str, backend: str):
    target = find_target(tree, tree / name)
    target.settings.update(backend=f"ubfaults:{backend}")
    report = harness.validate(target)
    deciding = [f for f in report.findings if f.verdict is report.verdict]
    return report.verdict, deciding[0].evidence if deciding else None


# uninitialised.py: two eager runs may disagree already (the memory is whatever it holds),
# and then the same triage explains that.
@pytest.mark.parametrize("name,rule,verdict", [
    ("overlap.py", "overlapping-write", Verdict.UNSUPPORTED),
    ("duplicates.py", "duplicate-index-write", Verdict.UNDEFINED_BEHAVIOUR),
    ("nan_to_int.py", "float-to-int", Verdict.UNDEFINED_BEHAVIOUR),
    ("uninitialised.py", "uninitialised-read", Verdict.UNDEFINED_BEHAVIOUR),
    ("ties.py", "tie-break", Verdict.UNDEFINED_BEHAVIOUR),
    ("compile_query.py", "compile-dependent-path", Verdict.UNDEFINED_BEHAVIOUR),
])
def test_a_difference_in_undefined_values_gets_the_rules_verdict(harness, tree, name, rule,
                                                                  verdict):
    found, evidence = verdict_of(harness, tree, name, "off_by_one")
    assert found is verdict, evidence
    assert evidence.cause == rule and rule in evidence.summary()


@pytest.mark.parametrize("name,rule", [
    ("mixed_overlap.py", "overlapping-write"), ("mixed_duplicates.py", "duplicate-index-write"),
    ("mixed_uninitialised.py", "uninitialised-read"), ("mixed_ties.py", "tie-break"),
])
def test_each_class_beside_a_genuine_bug_leaves_the_bug_a_bug(harness, tree, name, rule):
    """The same fault in an output no event reaches: a compiler bug, the class named."""
    found, evidence = verdict_of(harness, tree, name, "off_by_one")
    if found is Verdict.UNDEFINED_BEHAVIOUR:  # uninitialised memory: two eager runs differ
        pytest.fail(f"{name}: the nondeterminism gate decided before the compiled run")
    assert found is Verdict.COMPILER_BUG, evidence
    assert rule in evidence.undefined


def test_a_genuine_bug_beside_undefined_behaviour_stays_a_bug(harness, tree):
    found, evidence = verdict_of(harness, tree, "mixed.py", "off_by_one")
    assert found is Verdict.COMPILER_BUG, evidence
    assert evidence.undefined == ("float-to-int",) and "also holds float-to-int" in \
        evidence.summary()
    found, _ = verdict_of(harness, tree, "clean.py", "off_by_one")
    assert found is Verdict.COMPILER_BUG


def test_warnings_alone_are_warning_only(harness, tree):
    found, evidence = verdict_of(harness, tree, "warns.py", "silent")
    assert found is Verdict.WARNING_ONLY and evidence.cause == "warning-only"


def test_the_same_exception_in_other_words_is_warning_only(harness, tree):
    found, evidence = verdict_of(harness, tree, "raises.py", "reworded")
    assert found is Verdict.WARNING_ONLY and evidence.cause == "exception-message"


def test_a_crash_refusing_undefined_behaviour_is_unsupported(harness, tree):
    found, evidence = verdict_of(harness, tree, "overlap.py", "refuses_overlap")
    assert found is Verdict.UNSUPPORTED and evidence.cause == "overlapping-write"


def test_any_crash_of_an_unsupported_program_is_unsupported(harness, tree):
    """Inductor refuses an overlapping write in words of its own ('shape error in scatter
    op' for a zero-stride masked_fill_): raising is the intended outcome either way."""
    found, evidence = verdict_of(harness, tree, "overlap.py", "crashes")
    assert found is Verdict.UNSUPPORTED and evidence.cause == "overlapping-write"


def test_a_crash_undefined_values_do_not_explain_stays_a_compile_error(harness, tree):
    """Undefined values justify no crash that neither says so nor points at their line; a
    clean program's crash is a crash whatever it says."""
    found, evidence = verdict_of(harness, tree, "duplicates.py", "crashes")
    assert found is Verdict.COMPILE_ERROR
    assert evidence.undefined == ("duplicate-index-write",)
    assert verdict_of(harness, tree, "clean.py", "refuses_overlap")[0] is Verdict.COMPILE_ERROR


# -- the minimiser judges candidates with the same triage ------------------------------------

INDEX_COPY = '''
import torch


def f(x, src):
    return x.clone().index_copy_(0, torch.tensor({index}), src)


def get_inputs():
    return [torch.zeros(3, 2), torch.arange(6.0).reshape(3, 2)]
'''


@pytest.mark.parametrize("index,verdict", [
    ([0, 1, 2], Verdict.COMPILER_BUG),
    ([0, 0, 0], Verdict.UNDEFINED_BEHAVIOUR),  # what a careless reduction would make of it
])
def test_a_candidate_made_undefined_is_no_longer_the_finding(tmp_path, monkeypatch, index,
                                                             verdict):
    """The replay (what a reproducer and every reduction candidate run) triages too: the
    same wrong values after distinct indices are made duplicates get another verdict, so the
    minimiser refuses such a candidate (its verdict must stay the finding's)."""
    from eqrewrite.oracle.judging.compare import CompareOptions
    from eqrewrite.oracle.judging.protocol import RunRequest, Variant
    from eqrewrite.oracle.judging.replay import judge
    from eqrewrite.oracle.judging.settings import CompileSettings

    (tmp_path / "ubfaults.py").write_text(FAULTS)
    name = f"candidate_{len(set(index))}.py"  # one module name per case: both import here
    (tmp_path / name).write_text(INDEX_COPY.format(index=index))
    monkeypatch.syspath_prepend(str(tmp_path))
    target = find_target(tmp_path, tmp_path / name)
    request = RunRequest(target, CompileSettings(backend="ubfaults:off_by_one"), Variant.EAGER)
    assert judge(str(tmp_path), request, CompareOptions()).verdict is verdict


def test_a_reduction_candidate_may_lose_undefined_behaviour_but_never_gain_it():
    """Even where it explains none of the differences (strides do not depend on values),
    undefined behaviour the original did not hold makes a candidate another finding: a
    maintainer would close the reproducer for it."""
    from eqrewrite.oracle.minimising.signature import Signature

    def answer(*undefined):
        return {"verdict": "compiler-bug", "exceptions": [None, None],
                "differences": [["result['output']", "stride", "strides differ"]],
                "undefined": list(undefined)}

    clean = Signature.of(answer())
    assert clean.kept_by(answer())
    assert not clean.kept_by(answer("duplicate-index-write"))
    assert Signature.of(answer("tie-break")).kept_by(answer())


def test_an_event_and_a_crash_are_matched_by_file_and_line():
    """Events and exceptions name frames alike, with or without a folder."""
    from eqrewrite.oracle.judging.judge import _frame_line

    assert _frame_line("prog.py:12 in forward") == _frame_line("tree/prog.py:12 in f") == (
        "prog.py", 12)
    assert _frame_line("") is None and _frame_line("prog.py:? in f") is None
