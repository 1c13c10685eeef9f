"""The static inference behind the guards: what is proven a tensor, a number, or unknown."""

from __future__ import annotations

import ast
import textwrap

import pytest
from eqrewrite.rewriter.analysis.facts import ModuleFacts
from eqrewrite.rewriter.analysis.inference import Inference


def revealed(source: str, assume_tensor_params: bool = False) -> list[str]:
    """Kinds of every ``reveal(expr)`` argument in ``source``, in source order."""
    tree = ast.parse(textwrap.dedent(source))
    inference = Inference(ModuleFacts(tree), assume_tensor_params)
    found = []

    def visit(node: ast.AST, chain: tuple) -> None:
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "reveal"):
            found.append((node.lineno, node.col_offset, inference.value_kind(node.args[0], chain)))
        inner = chain + (node,) if isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) else chain
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, ())
    return [value_kind for *_, value_kind in sorted(found)]


@pytest.mark.parametrize("annotation, value_kind", [
    ("torch.Tensor", "tensor"), ("T.Tensor", "tensor"), ("Tensor", "tensor"),
    ("'torch.Tensor'", "tensor"), ("int", "number"), ("float", "number"), ("str", "sequence"),
    ("Optional[torch.Tensor]", "unknown"), ("list", "sequence"), ("MyType", "unknown"),
])
def test_parameter_annotations(annotation, value_kind):
    source = f"""
        import torch
        import torch as T
        from torch import Tensor
        def f(x: {annotation}):
            reveal(x)
    """
    assert revealed(source) == [value_kind]


def test_tensor_annotated_parameter_defaulting_to_none_is_unknown():
    assert revealed("""
        import torch
        def f(x: torch.Tensor = None):
            reveal(x)
    """) == ["unknown"]


def test_bindings_from_torch_calls_methods_and_arithmetic():
    assert revealed("""
        import torch
        import torch.nn.functional as F
        from torch import zeros
        def f(x: torch.Tensor, n: int):
            a = torch.ones(3)
            b = zeros(2)
            c = F.relu(a)
            d = a.float().view(-1)
            e = (a + 1) * n
            g = 2 - a
            h = a > 0
            i = a[0]
            j = a.T
            reveal(a); reveal(b); reveal(c); reveal(d); reveal(e); reveal(g); reveal(h)
            reveal(i); reveal(j)
    """) == ["tensor"] * 9


def test_python_values_from_tensors():
    assert revealed("""
        import torch
        def f(x: torch.Tensor):
            a = x.shape[0]
            b = x.size(1)
            c = x.dim()
            d = x.item()
            e = len(x)
            s = x.shape
            t = x.size()
            u = x.shape[1:]
            reveal(a); reveal(b); reveal(c); reveal(d); reveal(e)
            reveal(s); reveal(t); reveal(u)
    """) == ["number"] * 5 + ["sequence"] * 3


def test_literals_and_python_arithmetic():
    assert revealed("""
        def f(name):
            a = 1
            b = 2.5 * a
            c = "s" + name
            d = [1] + [2]
            e = f"{name}"
            reveal(a); reveal(b); reveal(c); reveal(d); reveal(e); reveal(name); reveal(None)
    """) == ["number", "number", "sequence", "sequence", "sequence", "unknown", "none"]


def test_name_bound_to_different_kinds_is_unknown():
    assert revealed("""
        import torch
        def f(flag: bool):
            x = torch.ones(2)
            if flag:
                x = [1, 2]
            reveal(x)
    """) == ["unknown"]


def test_reassignment_chain_reaches_fixed_point():
    assert revealed("""
        import torch
        def f(x: torch.Tensor):
            for _ in range(3):
                y = z * 2
                z = y + x
            z = x
            reveal(y); reveal(z)
    """) == ["tensor", "tensor"]


def test_loops_and_unpacking():
    assert revealed("""
        import torch
        def f(x: torch.Tensor, pairs):
            for i in range(3):
                reveal(i)
            for row in x:
                reveal(row)
            for j, r in enumerate(x):
                reveal(j); reveal(r)
            a, b = x.shape
            c, d = x, 1
            e, g = pairs
            reveal(a); reveal(c); reveal(d); reveal(e)
    """) == ["number", "tensor", "number", "tensor", "number", "tensor", "number", "unknown"]


def test_tuple_returning_reductions_are_not_tensors():
    assert revealed("""
        import torch
        def f(x: torch.Tensor, y: torch.Tensor):
            reveal(torch.max(x)); reveal(torch.max(x, y)); reveal(torch.max(x, 1))
            reveal(x.max()); reveal(x.max(dim=0)); reveal(x.sort()); reveal(x.split(2))
    """) == ["tensor", "tensor", "unknown", "tensor", "unknown", "unknown", "unknown"]


def test_module_attributes_and_layers():
    assert revealed("""
        import torch
        from torch import nn
        class Block(nn.Module):
            def __init__(self, dim: int):
                super().__init__()
                self.proj = nn.Linear(dim, dim)
                self.seq = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
                self.lstm = nn.LSTM(dim, dim)
                self.w = nn.Parameter(torch.zeros(dim))
                self.register_buffer("mask", torch.ones(dim))
                self.scale = dim ** -0.5
                self.cache = None
            def reset(self):
                self.cache = torch.zeros(1)
            def forward(self, x):
                reveal(self.proj(x)); reveal(self.seq(x)); reveal(self.lstm(x))
                reveal(self.w); reveal(self.mask); reveal(self.scale); reveal(self.cache)
                reveal(self.training); reveal(x)
    """) == ["tensor", "tensor", "unknown", "tensor", "tensor", "number", "unknown",
             "number", "unknown"]


def test_assume_tensor_params_only_in_module_forward():
    source = """
        from torch import nn
        class M(nn.Module):
            def forward(self, x, mask=None, scale=2.0):
                reveal(x); reveal(mask); reveal(scale)
            def helper(self, x):
                reveal(x)
        def forward(x):
            reveal(x)
    """
    assert revealed(source) == ["unknown"] * 5
    assert revealed(source, assume_tensor_params=True) == [
        "tensor", "unknown", "unknown", "unknown", "unknown"]


def test_closures_see_enclosing_bindings():
    assert revealed("""
        import torch
        def outer(x: torch.Tensor):
            y = x * 2
            def inner(z: int):
                reveal(y); reveal(z)
            return inner
    """) == ["tensor", "number"]


def test_global_and_nonlocal_names_are_unknown():
    assert revealed("""
        import torch
        state = torch.zeros(1)
        def f():
            global state
            reveal(state)
    """) == ["unknown"]


def test_module_level_tensor():
    assert revealed("""
        import torch
        WEIGHT = torch.ones(3)
        def f():
            reveal(WEIGHT)
    """) == ["tensor"]


def test_return_annotations_of_local_functions_and_methods():
    assert revealed("""
        import torch
        def rotate(x: torch.Tensor) -> torch.Tensor:
            return x
        def count(x) -> int:
            return 1
        def twice(x):
            return x
        def twice(x):
            return x
        class M:
            def helper(self) -> torch.Tensor:
                return torch.ones(1)
            def run(self, x):
                reveal(rotate(x)); reveal(count(x)); reveal(twice(x)); reveal(self.helper())
    """) == ["tensor", "number", "unknown", "tensor"]


def test_unpacking_tensor_sequences():
    assert revealed("""
        import torch
        def f(z: torch.Tensor, n: int):
            a, b = z.chunk(2, dim=-1)
            q, k, v = torch.split(z, n)
            for piece in z.unbind(0):
                reveal(piece)
            first, *rest = z.split(1)
            reveal(a); reveal(b); reveal(q); reveal(v); reveal(first); reveal(rest)
    """) == ["tensor"] * 6 + ["unknown"]


def test_pooling_layers_unless_returning_indices():
    assert revealed("""
        import torch.nn as nn
        import torch.nn.functional as F
        import torch
        def f(x: torch.Tensor):
            pool = nn.MaxPool2d(2)
            indexed = nn.MaxPool2d(2, return_indices=True)
            reveal(pool(x)); reveal(indexed(x)); reveal(F.max_pool2d(x, 2))
            reveal(F.max_pool2d(x, 2, return_indices=True))
    """) == ["tensor", "unknown", "tensor", "unknown"]


@pytest.mark.parametrize(("trusted", "value_kinds"), [
    (True, ["number", "number", "number", "sequence", "tensor"]),
    (False, ["unknown", "unknown", "unknown", "sequence", "tensor"]),
])
def test_scalar_annotations_are_proof_only_when_trusted(trusted, value_kinds):
    tree = ast.parse(textwrap.dedent("""
        import torch
        def scale() -> float:
            return 2.0
        def f(n: int, flag: bool, name: str, x: torch.Tensor):
            reveal(n)
            reveal(scale())
            reveal(flag)
            reveal(name)
            reveal(x)
    """))
    inference = Inference(ModuleFacts(tree), trust_scalar_annotations=trusted)
    function = tree.body[2]
    found = [inference.value_kind(statement.value.args[0], (function,))
             for statement in function.body]
    assert found == value_kinds
