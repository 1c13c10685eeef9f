"""Candidates over expressions: a subexpression replaced by one of its operands or a call
without an argument (``expression_candidates``), a number by a simpler one
(``constant_candidates``), and the tidy-up (``tidy``: parentheses around atoms removed)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
from libcst import CSTNodeT
from libcst.helpers import get_full_name_for_node

from .inputs import shape_sites
from .trees import ATOMS, BUILTINS, Replace, in_place_of, module_names, number, parse

# -- expressions --------------------------------------------------------------------------------

# The functions whose returned lists are the target's inputs, not outputs.
INPUT_FUNCTIONS = frozenset({"get_inputs", "get_init_inputs"})


def _is_module_ref(node: cst.BaseExpression, modules: frozenset[str]) -> bool:
    """``torch``, ``torch.nn``, ``F``: a module (or class) name, not a value."""
    name = get_full_name_for_node(node) if isinstance(node, cst.Name | cst.Attribute) else None
    return name is not None and name.split(".")[0] in modules | BUILTINS


def _is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer | cst.Float | cst.Imaginary | cst.SimpleString
                  | cst.ConcatenatedString | cst.FormattedString):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("None", "True", "False")
    if isinstance(node, cst.UnaryOperation):
        return _is_literal(node.expression)
    if isinstance(node, cst.Tuple | cst.List):
        return all(_is_literal(e.value) for e in node.elements)
    return False


class _Expressions(cst.CSTVisitor):
    """Expressions with smaller replacements, in pre-order (outermost first). Assignment
    targets, annotations, decorators, imports and class bases are left alone."""

    def __init__(self, modules: frozenset[str]):
        self.modules = modules
        self.skip: set[int] = set()    # not visited at all
        self.inert: set[int] = set()   # visited, but not replaced (a call's function)
        self.found: list[tuple[cst.BaseExpression, list[cst.BaseExpression]]] = []
        self.functions: list[str] = []  # the enclosing functions' names

    def on_leave(self, original: cst.CSTNode) -> None:
        if isinstance(original, cst.FunctionDef):
            self.functions.pop()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip or isinstance(node, cst.Annotation | cst.Decorator | cst.Import
                                               | cst.ImportFrom | cst.AssignTarget):
            return False
        if isinstance(node, cst.AugAssign | cst.For | cst.CompFor | cst.WithItem):
            self.skip.add(id(getattr(node, "target", None) or getattr(node, "asname", None)))
        if isinstance(node, cst.ClassDef):
            self.skip.update(id(arg) for arg in (*node.bases, *node.keywords))
        if isinstance(node, cst.FunctionDef):
            self.functions.append(node.name.value)
        if isinstance(node, cst.Return) and node.value is not None and not (
                self.functions and self.functions[-1] in INPUT_FUNCTIONS):
            self._returned(node.value)
        if isinstance(node, cst.Call):
            self.inert.add(id(node.func))
        if isinstance(node, cst.BaseExpression) and id(node) not in self.inert:
            smaller = _smaller(node, self.modules)
            if smaller:
                self.found.append((node, smaller))
        return True

    def _returned(self, value: cst.BaseExpression) -> None:
        """Items of a returned tuple, list or dict may become ``None``: the outputs keep
        their positions (and a finding its path) while their computations can go."""
        none = cst.Name("None")
        if isinstance(value, cst.Tuple | cst.List):
            for element in value.elements:
                if not _is_literal(element.value):
                    self.found.append((element.value, [none]))
        elif isinstance(value, cst.Dict):
            for item in value.elements:
                if isinstance(item, cst.DictElement) and not _is_literal(item.value):
                    self.found.append((item.value, [none]))


def _smaller(node: cst.BaseExpression, modules: frozenset[str]) -> list[cst.BaseExpression]:
    """Replacements for ``node``: its operands (not literals), then calls with an argument
    dropped."""
    operands: list[cst.BaseExpression] = []
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and not _is_module_ref(func.value, modules) and not (
                isinstance(func.value, cst.Call) and get_full_name_for_node(
                    func.value.func) == "super"):
            operands.append(func.value)
        # Positional arguments only: keyword arguments are options (dtype=, generator=).
        operands += [arg.value for arg in node.args if not arg.star and arg.keyword is None]
    elif isinstance(node, cst.BinaryOperation | cst.BooleanOperation):
        operands = [node.left, node.right]
    elif isinstance(node, cst.UnaryOperation):
        operands = [node.expression]
    elif isinstance(node, cst.Comparison):
        operands = [node.left]
    elif isinstance(node, cst.Subscript):
        operands = [node.value]
    elif isinstance(node, cst.IfExp):
        operands = [node.body, node.orelse]
    elif isinstance(node, cst.Attribute) and not _is_module_ref(node, modules) and not (
            isinstance(node.value, cst.Name) and node.value.value == "self"):
        operands = [node.value]
    smaller = [in_place_of(node, o) for o in operands
               if not _is_literal(o) and not _is_module_ref(o, modules)]
    if isinstance(node, cst.Call):
        smaller += _dropped_arguments(node)
    return smaller


def _dropped_arguments(call: cst.Call) -> list[cst.Call]:
    """The call without one keyword argument, or without its last positional one."""
    if any(arg.star for arg in call.args):
        return []
    positional = [i for i, arg in enumerate(call.args) if arg.keyword is None]
    drops = [i for i, arg in enumerate(call.args) if arg.keyword is not None]
    drops += positional[-1:] if len(positional) >= 2 else []
    made = []
    for drop in drops:
        args = [arg for i, arg in enumerate(call.args) if i != drop]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        made.append(call.with_changes(args=args))
    return made


def expression_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each expression from ``start`` on replaced by each of its
    smaller forms, outermost expressions first."""
    module = parse(text)
    visitor = _Expressions(module_names(module))
    module.visit(visitor)
    for position, (node, smaller) in enumerate(visitor.found):
        if position < start:
            continue
        for replacement in smaller:
            yield position, module.visit(Replace({id(node): replacement})).code


# -- constants ----------------------------------------------------------------------------------

class _Numbers(cst.CSTVisitor):
    """Number literals outside factory shapes (those are the shape pass's); ``-3`` is one
    number, so it can become ``0`` rather than ``-0``."""

    def __init__(self, shapes: set[int]):
        self.shapes = shapes
        self.found: list[cst.BaseExpression] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Decorator | cst.Import | cst.ImportFrom | cst.Annotation):
            return False
        if isinstance(node, cst.BaseExpression) and number(node) is not None and id(
                node) not in self.shapes and not (
                isinstance(node, cst.UnaryOperation) and id(node.expression) in self.shapes):
            self.found.append(node)
            return False
        return True


def _simpler_numbers(node: cst.BaseExpression) -> list[str]:
    """Simpler literals for ``node``, simplest first: shorter, or as long and smaller."""
    value = number(node)
    assert value is not None  # _Numbers collects number literals only
    if isinstance(value, int):
        options = [str(v) for v in (0, 1, -1, 2, -2, value // 2, -(abs(value) // 2))]
    else:
        options = [repr(v) for v in (0.0, 1.0, -1.0, float(round(value)), round(value, 1))
                   if v == v and abs(v) != float("inf")]
    current = (len(cst.Module([]).code_for_node(node)), abs(value))
    made = []
    for text in options:
        key = (len(text), abs(float(text)))
        if key < current and text not in made:
            made.append(text)
    return sorted(made, key=lambda t: (len(t), abs(float(t))))


def constant_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each number from ``start`` on replaced by simpler ones."""
    module = parse(text)
    visitor = _Numbers({id(n) for n in shape_sites(module)[0]})
    module.visit(visitor)
    for position, node in enumerate(visitor.found):
        if position < start:
            continue
        for simpler in _simpler_numbers(node):
            replacement = cst.parse_expression(simpler).with_changes(
                lpar=node.lpar, rpar=node.rpar)
            yield position, module.visit(Replace({id(node): replacement})).code


# -- tidying ------------------------------------------------------------------------------------

class _Unparenthesise(cst.CSTTransformer):
    """Parentheses around names, attributes, calls, subscripts and literals, which replaced
    operands keep from their old place (``(v / (step))``), are removed: never needed."""

    def on_leave(self, original: CSTNodeT, updated: CSTNodeT
                 ) -> CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[CSTNodeT]:
        # Tested apart from the ``if``, which then does not narrow ``updated`` away from its
        # own type: with_changes keeps it.
        atom = isinstance(updated, ATOMS) and not isinstance(updated, cst.Tuple)
        if atom and getattr(updated, "lpar", None):
            return updated.with_changes(lpar=[], rpar=[])
        return updated


def tidy(text: str) -> str:
    """``text`` without parentheses around atoms."""
    return parse(text).visit(_Unparenthesise()).code
