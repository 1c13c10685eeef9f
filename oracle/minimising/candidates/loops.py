"""Candidates over loops: a loop that runs its body once unrolled (``unroll_candidates``), a
loop over a literal list, tuple or dict replaced by one of its iterations
(``iteration_candidates``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import libcst as cst

from .trees import flattened, number, parse

# -- loops of one pass --------------------------------------------------------------------------

def _one_value(iterable: cst.BaseExpression) -> cst.BaseExpression | None:
    """The one value a loop over ``iterable`` binds: ``range(1)`` and ``range(0, 1)`` (any
    ``range(a, a + 1)`` of integer literals), a one-item list or tuple literal; else None."""
    if isinstance(iterable, cst.List | cst.Tuple):
        if len(iterable.elements) == 1 and isinstance(iterable.elements[0], cst.Element):
            return iterable.elements[0].value
        return None
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)
            and iterable.func.value == "range") or any(
            arg.keyword is not None or arg.star for arg in iterable.args):
        return None
    bounds = [number(arg.value) for arg in iterable.args]
    if not all(isinstance(b, int) for b in bounds):
        return None
    if len(bounds) == 1 and bounds[0] == 1:
        return cst.Integer("0")
    if len(bounds) == 2 and bounds[0] is not None and bounds[1] == bounds[0] + 1:
        return iterable.args[0].value
    return None


class _Escapes(cst.CSTVisitor):
    """Whether a loop's body breaks out of or continues that loop (not a nested one)."""

    def __init__(self) -> None:
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Break | cst.Continue):
            self.found = True
        if isinstance(node, cst.For | cst.While):  # a nested loop's ``else`` is still ours
            if node.orelse is not None:
                node.orelse.visit(self)
            return False
        return not self.found and not isinstance(
            node, cst.FunctionDef | cst.ClassDef | cst.Lambda)


def _unrolled(loop: cst.For) -> list[cst.BaseStatement] | None:
    """``v = <value>`` and the loop's body, for a loop that runs its body exactly once."""
    if loop.orelse is not None or loop.asynchronous is not None:
        return None
    value = _one_value(loop.iter)
    if value is None:
        return None
    escapes = _Escapes()
    for statement in loop.body.body:
        statement.visit(escapes)
    if escapes.found:
        return None
    bind = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(loop.target)], value)],
                                   leading_lines=loop.leading_lines)
    body: list[cst.BaseStatement]
    if isinstance(loop.body, cst.IndentedBlock):
        body = list(loop.body.body)
    else:  # ``for v in range(1): x += v``
        assert isinstance(loop.body, cst.SimpleStatementSuite)  # a loop's only other suite
        small = list(loop.body.body)
        small[-1] = small[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        body = [cst.SimpleStatementLine(small)]
    if body and all(line.comment is None for line in getattr(body[0], "leading_lines", ())):
        body[0] = body[0].with_changes(leading_lines=())
    return [bind, *body]


class _Loops(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[cst.For, list[cst.BaseStatement]]] = []

    def visit_For(self, node: cst.For) -> None:
        unrolled = _unrolled(node)
        if unrolled is not None:
            self.found.append((node, unrolled))


# -- loops over literals ------------------------------------------------------------------------

class _Literals(cst.CSTVisitor):
    """Names assigned exactly once, by ``name = <list, tuple or dict literal>``."""

    def __init__(self) -> None:
        self.values: dict[str, cst.BaseExpression | None] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                name = target.target.value
                literal = isinstance(node.value, cst.List | cst.Tuple | cst.Dict)
                self.values[name] = (node.value if literal and name not in self.values
                                     else None)


def _iterations(iterable: cst.BaseExpression, literals: Mapping[str, cst.BaseExpression | None]
                ) -> list[cst.BaseExpression]:
    """The values a loop over ``iterable`` binds, in order, when it iterates a literal list,
    tuple or dict (or its ``.items()``, ``.keys()``, ``.values()``), directly or through a
    name assigned that literal once; [] when it does not."""
    method = None
    if (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)
            and not iterable.args and iterable.func.attr.value in ("items", "keys", "values")):
        method, iterable = iterable.func.attr.value, iterable.func.value
    if isinstance(iterable, cst.Name):
        iterable = literals.get(iterable.value) or iterable
    if isinstance(iterable, cst.Dict):
        pairs = [(e.key, e.value) for e in iterable.elements if isinstance(e, cst.DictElement)]
        if len(pairs) != len(iterable.elements):
            return []
        if method == "items":
            return [cst.Tuple([cst.Element(k), cst.Element(v)]) for k, v in pairs]
        return [v for _, v in pairs] if method == "values" else [k for k, _ in pairs]
    if method is None and isinstance(iterable, cst.List | cst.Tuple) and all(
            isinstance(e, cst.Element) for e in iterable.elements):
        return [e.value for e in iterable.elements]
    return []


class _LiteralLoops(cst.CSTVisitor):
    def __init__(self, literals: Mapping[str, cst.BaseExpression | None]) -> None:
        self.literals = literals
        self.found: list[tuple[cst.For, list[list[cst.BaseStatement]]]] = []

    def visit_For(self, node: cst.For) -> None:
        values = _iterations(node.iter, self.literals)
        if len(values) < 2 or _unrolled(node) is not None:
            return
        once = [_unrolled(node.with_changes(iter=cst.List([cst.Element(v)]))) for v in values]
        self.found.append((node, [body for body in once if body is not None]))


def unroll_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each loop from ``start`` on that runs its body once (over
    ``range(1)``, ``range(0, 1)`` or a one-item list or tuple, with no ``break``,
    ``continue`` or ``else``) replaced by ``v = <the value>`` and its body."""
    module = parse(text)
    visitor = _Loops()
    module.visit(visitor)
    yield from flattened(module, [(node, [body]) for node, body in visitor.found], start)


def iteration_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each loop from ``start`` on over a literal list, tuple or dict
    (or its ``items()``/``keys()``/``values()``, directly or through a name assigned it once;
    the generator's dicts of callables) replaced by one of its iterations: ``v = <item>``
    and its body, for each item in turn."""
    module = parse(text)
    literals = _Literals()
    module.visit(literals)
    visitor = _LiteralLoops(literals.values)
    module.visit(visitor)
    yield from flattened(module, visitor.found, start)
