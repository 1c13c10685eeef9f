"""The fast tree walks of ``syntax/nodes.py`` give what ``ast`` gives, in the same order (the
kinds keep that order: "the first assignment", "in walk() order"), and the text prefilter
of select's notes leaves them as they were."""

from __future__ import annotations

import ast
import textwrap

from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules
from eqrewrite.rewriter.syntax.nodes import children, walk_in_order

# Every shape of field: lists of statements, of expressions holding None (dict unpacking),
# of strings (global), contexts and operators, match patterns, f-strings, comprehensions.
VARIED = textwrap.dedent('''
    import torch as t, os.path
    from a import (b as c, d)
    counter = 0

    @decorator(1)
    async def f(x, /, y: int = 2, *args, z, **kwargs) -> "T":
        global counter
        counter += 1
        merged = {**kwargs, "k": -x if x else ~y}
        async with t.no_grad() as g, open(p) as q:
            pass
        try:
            value = [i * 2 for i in range(3) if i % 2 for _ in "ab"]
        except (ValueError, KeyError) as error:
            raise RuntimeError(f"{error!r:>10} {x=}") from error
        else:
            value = {k: v async for k, v in aiter()}
        finally:
            del merged[0], x.attr
        match value:
            case [1, *rest] | {"k": _, **others} if rest:
                return lambda a, *b: (yield a)
            case Point(x=0) as p:
                assert p, "message"
        while (n := len(value)) > 1:
            value = value[1:n:2]
        return t.where(x > 0, x @ y, x ** 2 // 3), not x, x is not None
''')


def test_walk_in_order_is_ast_walk_in_the_same_order():
    tree = ast.parse(VARIED)
    assert walk_in_order(tree) == list(ast.walk(tree))
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef)):
        assert walk_in_order(function) == list(ast.walk(function))


def test_children_are_ast_iter_child_nodes():
    for node in ast.walk(ast.parse(VARIED)):
        assert children(node) == list(ast.iter_child_nodes(node)), ast.dump(node)[:80]


EVERYWHERE = RewriteOptions(scope=frozenset({"everywhere"}))
PACK = select_rules(load_pack("graphbreaks").rules, EVERYWHERE)
SCALAR_FLAG = textwrap.dedent('''
    import torch


    def scores(scores: torch.Tensor, is_global: torch.Tensor) -> torch.Tensor:
        flag = is_global.tolist()
        if flag:
            scores = scores * 2.0
        return scores


    def plain(scores: torch.Tensor, flag: bool) -> torch.Tensor:
        if flag:
            scores = scores * 2.0
        return scores
''')


def test_a_local_read_from_a_tensor_keeps_its_note_and_a_flag_gets_none():
    """Select explains an ``if`` on a local assigned ``.tolist()`` of a tensor (it stays a
    graph break; no tensor condition is read from it); a function without the words
    ``item``/``tolist`` is not searched for such locals, and its bool parameter gets no
    note."""
    notes = rewrite_source(SCALAR_FLAG, PACK, EVERYWHERE).notes
    lines = SCALAR_FLAG.splitlines()
    assert [n.line for n in notes if "condition is a Python value taken from a tensor"
            in n.message] == [lines.index("    if flag:") + 1]
