"""``tensor_condition``: a data-dependent test read as a tensor, worked out once per test and
inference (every select form asks about every ``if``), each caller getting its own bindings."""

from __future__ import annotations

import ast
import textwrap

from eqrewrite.rewriter.analysis.facts import ModuleFacts
from eqrewrite.rewriter.analysis.guards import GuardContext
from eqrewrite.rewriter.analysis.inference import Inference
from eqrewrite.rewriter.kinds import KindContext
from eqrewrite.rewriter.kinds.conditions import tensor_condition

SOURCE = textwrap.dedent('''
    import torch


    def pick(x: torch.Tensor, y: torch.Tensor, n: int):
        if x.any() and not y.all():
            return x
        if n > 2:
            return y
        return x + y
''')


def _tests_and_context() -> tuple[list[ast.expr], KindContext]:
    tree = ast.parse(SOURCE)
    function = tree.body[1]
    assert isinstance(function, ast.FunctionDef)
    inference = Inference(ModuleFacts(tree, SOURCE))
    tests = [node.test for node in function.body if isinstance(node, ast.If)]
    return tests, KindContext(GuardContext(inference, (function,)))


def test_tensor_tests_are_read_as_tensors_and_python_ones_are_not():
    (data, number), context = _tests_and_context()
    found = tensor_condition(data, context)
    assert found is not None and found[0] == "$c0 & (~$c1)"
    assert [ast.unparse(found[1][k]) for k in ("c0", "c1")] == ["x.any()", "y.all()"]
    assert tensor_condition(number, context) is None


def test_asked_again_the_answer_is_the_same_and_its_bindings_are_the_callers_own():
    (data, _), context = _tests_and_context()
    first = tensor_condition(data, context)
    assert first is not None
    first[1].clear()  # a caller adding or dropping bindings changes nobody else's answer
    second = tensor_condition(data, context)
    assert second is not None and set(second[1]) == {"c0", "c1"}
    assert ("tensor_condition", data) in context.guards.inference.derived
