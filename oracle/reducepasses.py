"""Smaller variants of one program's source text: the candidates the minimiser tries.

Every function here takes source text and returns source text (or yields candidates in a
fixed order), through libcst so the rest of the file keeps its formatting. Nothing runs the
code: the minimiser judges each candidate in its checking process and keeps it only when the
oracle's verdict and the finding's signature stay the same. Each kind of candidate makes the
program strictly smaller in its own measure (fewer statements or tokens, a simpler literal,
smaller input dimensions), so repeating them always ends.

- statements: ``keep_statements`` keeps a subset of one statement list (for delta debugging);
  the names a removed assignment bound are replaced, in the statements after it, by the
  first value it read (``v2 = v1.tanh()`` removed: later ``v2`` become ``v1``);
- ``hoist_candidates``: a compound statement replaced by one of its blocks;
- ``expression_candidates``: a subexpression replaced by one of its operands (a call by its
  receiver or an argument, ``a * b`` by ``a`` or ``b``, ``x[i]`` by ``x``), an argument
  dropped, an item of a returned tuple or dict replaced by ``None`` (which keeps the
  positions of the outputs, and so the finding's path);
- ``constant_candidates``: a number replaced by a simpler one (0, 1, 2, half);
- ``shape_candidates``: dimensions of tensors made by factories (``torch.randn(4, 8)``)
  shrunk, everywhere at once or one at a time, and items of ``torch.tensor([...])`` lists
  removed;
- ``tidy``: parentheses around atoms that replaced operands brought along, removed (judged
  like any candidate, once at the end).
"""

from __future__ import annotations

import ast
import builtins
import io
import tokenize
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import libcst as cst
from libcst import CSTNodeT
from libcst.helpers import get_full_name_for_node, get_full_name_for_node_or_raise
from libcst.metadata import ExpressionContext, ExpressionContextProvider, MetadataWrapper

# Factories whose leading integer arguments (or first tuple, or ``size=``) are a shape.
_SIZED = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "randint", "eye",
                    "arange", "randperm"})
_LISTED = frozenset({"tensor", "as_tensor"})  # factories from nested list literals
# The functions whose returned lists are the target's inputs, not outputs.
INPUT_FUNCTIONS = frozenset({"get_inputs", "get_init_inputs"})
_BUILTINS = frozenset(dir(builtins))
_NOT_TOKENS = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                         tokenize.ENDMARKER, tokenize.COMMENT})


@dataclass(frozen=True)
class Size:
    """How big a program is: statements (ast), tokens (without layout and comments)."""

    statements: int
    tokens: int


def size(text: str) -> Size:
    """The statement and token counts of ``text``."""
    statements = sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(text)))
    tokens = sum(t.type not in _NOT_TOKENS
                 for t in tokenize.generate_tokens(io.StringIO(text).readline))
    return Size(statements, tokens)


# -- names --------------------------------------------------------------------------------------


def _module_names(module: cst.Module) -> frozenset[str]:
    """Names bound at module level by imports, ``def`` and ``class``: never operands."""
    names = set()
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import | cst.ImportFrom) and not isinstance(
                        small.names, cst.ImportStar):
                    for alias in small.names:
                        bound = alias.asname.name if alias.asname else alias.name
                        names.add(get_full_name_for_node_or_raise(bound).split(".")[0])
    return frozenset(names)


def _is_module_ref(node: cst.BaseExpression, modules: frozenset[str]) -> bool:
    """``torch``, ``torch.nn``, ``F``: a module (or class) name, not a value."""
    name = get_full_name_for_node(node) if isinstance(node, cst.Name | cst.Attribute) else None
    return name is not None and name.split(".")[0] in modules | _BUILTINS


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


class _FirstOperand(cst.CSTVisitor):
    """The first value an expression reads, in source order: a local name or ``self.x``."""

    def __init__(self, modules: frozenset[str]):
        self.modules = modules
        self.found: cst.BaseExpression | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found is not None or isinstance(node, cst.Lambda):
            return False
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and (
                node.value.value == "self"):
            self.found = node
            return False
        if isinstance(node, cst.Name) and node.value not in self.modules | _BUILTINS | {
                "self", "None", "True", "False"}:
            self.found = node
            return False
        if isinstance(node, cst.Attribute):
            node.value.visit(self)  # never the attribute's own name
            return False
        if isinstance(node, cst.Arg):
            if node.keyword is None:  # keyword arguments are options (generator=g)
                node.value.visit(self)
            return False
        if isinstance(node, cst.Call) and not isinstance(node.func, cst.Attribute):
            for arg in node.args:  # a called name is a function, not a value
                arg.visit(self)
            return False
        return True


def _first_operand(node: cst.CSTNode, modules: frozenset[str]) -> cst.BaseExpression | None:
    visitor = _FirstOperand(modules)
    node.visit(visitor)
    return visitor.found


# -- statements ---------------------------------------------------------------------------------


class _Bodies(cst.CSTVisitor):
    """Statement lists in pre-order: the module's, then every indented block."""

    def __init__(self) -> None:
        self.found: list[cst.Module | cst.IndentedBlock] = []

    def visit_Module(self, node: cst.Module) -> None:
        self.found.append(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.found.append(node)


def _bodies(module: cst.Module) -> list[cst.Module | cst.IndentedBlock]:
    visitor = _Bodies()
    module.visit(visitor)
    return visitor.found


def body_lengths(text: str) -> list[int]:
    """How many statements each statement list of ``text`` holds, in pre-order."""
    return [len(body.body) for body in _bodies(cst.parse_module(text))]


def keep_statements(text: str, body: int, keep: frozenset[int]) -> str:
    """``text`` with only the statements ``keep`` (indices) of statement list ``body``; names
    that removed statements bound are replaced in later statements of the list by the first
    value each read. An emptied block gets ``pass``."""
    wrapper = MetadataWrapper(cst.parse_module(text))
    module = wrapper.module
    contexts = wrapper.resolve(ExpressionContextProvider)
    target = _bodies(module)[body]
    modules = _module_names(module)
    statements: list[cst.BaseStatement] = []
    mapping: dict[str, cst.BaseExpression] = {}
    for index, statement in enumerate(target.body):
        if mapping:
            renamed = statement.visit(_Rename(mapping, contexts))
            assert isinstance(renamed, cst.BaseStatement)  # _Rename only replaces names
            statement = renamed
        bound = _bound_names(statement)
        if index in keep:
            statements.append(statement)
            for name in bound:
                mapping.pop(name, None)
            continue
        for name, value in bound.items():
            replacement = _first_operand(value, modules) if value is not None else None
            if replacement is not None and not (isinstance(replacement, cst.Name)
                                                and replacement.value == name):
                mapping[name] = replacement
            else:
                mapping.pop(name, None)
    if not statements and isinstance(target, cst.IndentedBlock):
        statements = [cst.SimpleStatementLine([cst.Pass()])]
    elif isinstance(target, cst.IndentedBlock) and isinstance(
            statements[0], cst.SimpleStatementLine | cst.BaseCompoundStatement) and all(
            line.comment is None for line in statements[0].leading_lines):
        statements[0] = statements[0].with_changes(leading_lines=())  # no blank first line
    return module.visit(_Replace({id(target): target.with_changes(body=statements)})).code


def _bound_names(statement: cst.CSTNode) -> dict[str, cst.BaseExpression | None]:
    """Names a statement assigns (outside nested functions), each with the value assigned
    first (None for names bound otherwise: loops, ``with``, ``def``)."""
    collector = _Assignments()
    statement.visit(collector)
    return collector.bound


class _Assignments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.bound: dict[str, cst.BaseExpression | None] = {}

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self.bound.setdefault(target.value, value)
        elif isinstance(target, cst.Tuple | cst.List):
            for element in target.elements:
                self._bind(element.value, value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.bound.setdefault(node.name.value, None)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.bound.setdefault(node.name.value, None)
        return False


class _Rename(cst.CSTTransformer):
    """Replace loads of the mapped names (not keyword names, not assignment targets)."""

    def __init__(self, mapping: dict[str, cst.BaseExpression],
                 contexts: Mapping[cst.CSTNode, ExpressionContext | None]):
        self.mapping = mapping
        self.contexts = contexts
        self.keywords: set[int] = set()

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.keywords.add(id(node.keyword))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if (original.value in self.mapping and id(original) not in self.keywords
                and self.contexts.get(original) is ExpressionContext.LOAD):
            return self.mapping[original.value].deep_clone()
        return updated


class _Replace(cst.CSTTransformer):
    """Replace nodes by identity (the original tree's nodes) with new nodes or statements."""

    def __init__(self,
                 replacements: dict[int, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode]]):
        self.replacements = replacements

    # libcst types on_leave as keeping each node's type; a replacement by identity may be
    # another kind of node (a block's statements for an ``if``), which the parent accepts.
    def on_leave(  # type: ignore[override]
            self, original: cst.CSTNode, updated: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        return self.replacements.get(id(original), updated)


# -- compound statements ------------------------------------------------------------------------


class _Compounds(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[cst.BaseCompoundStatement, list[list[cst.BaseStatement]]]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        blocks = _blocks(node)
        if blocks and isinstance(node, cst.BaseCompoundStatement):  # only those have blocks
            self.found.append((node, blocks))
        return True


def _blocks(node: cst.CSTNode) -> list[list[cst.BaseStatement]]:
    """The statement sequences a compound statement could be replaced by."""
    if isinstance(node, cst.If):
        blocks = [list(node.body.body)] if isinstance(node.body, cst.IndentedBlock) else []
        if isinstance(node.orelse, cst.Else) and isinstance(node.orelse.body, cst.IndentedBlock):
            blocks.append(list(node.orelse.body.body))
        elif isinstance(node.orelse, cst.If):
            blocks.append([node.orelse])
        return blocks
    if isinstance(node, cst.While | cst.For | cst.With | cst.Try) and isinstance(
            node.body, cst.IndentedBlock):
        return [list(node.body.body)]
    return []


def hoist_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each compound statement from ``start`` on replaced by one of its
    blocks (an ``if`` by its body or its ``else``, a loop, ``with`` or ``try`` by its body)."""
    module = cst.parse_module(text)
    visitor = _Compounds()
    module.visit(visitor)
    for position, (node, blocks) in enumerate(visitor.found):
        if position < start:
            continue
        for block in blocks:
            yield position, module.visit(_Replace({id(node): cst.FlattenSentinel(block)})).code


# -- expressions --------------------------------------------------------------------------------


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
    smaller = [_in_place_of(node, o) for o in operands
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


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.SimpleString, cst.List, cst.Dict, cst.Tuple)


def _in_place_of(node: cst.BaseExpression, operand: cst.BaseExpression) -> cst.BaseExpression:
    """``operand`` standing where ``node`` stood: with ``node``'s parentheses, or its own, or
    new ones when it could bind more loosely than its new surroundings."""
    if operand.lpar:
        return operand
    if node.lpar:
        return operand.with_changes(lpar=node.lpar, rpar=node.rpar)
    if isinstance(operand, _ATOMS) and not isinstance(operand, cst.Tuple):
        return operand
    return operand.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def expression_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each expression from ``start`` on replaced by each of its
    smaller forms, outermost expressions first."""
    module = cst.parse_module(text)
    visitor = _Expressions(_module_names(module))
    module.visit(visitor)
    for position, (node, smaller) in enumerate(visitor.found):
        if position < start:
            continue
        for replacement in smaller:
            yield position, module.visit(_Replace({id(node): replacement})).code


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
        if isinstance(node, cst.BaseExpression) and _number(node) is not None and id(
                node) not in self.shapes and not (
                isinstance(node, cst.UnaryOperation) and id(node.expression) in self.shapes):
            self.found.append(node)
            return False
        return True


def _number(node: cst.CSTNode) -> int | float | None:
    """The value of an integer or float literal, or of a negated one."""
    if isinstance(node, cst.Integer | cst.Float):
        return node.evaluated_value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and (
            isinstance(node.expression, cst.Integer | cst.Float)):
        return -node.expression.evaluated_value
    return None


def _simpler_numbers(node: cst.BaseExpression) -> list[str]:
    """Simpler literals for ``node``, simplest first: shorter, or as long and smaller."""
    value = _number(node)
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
    module = cst.parse_module(text)
    visitor = _Numbers({id(n) for n in _shape_sites(module)[0]})
    module.visit(visitor)
    for position, node in enumerate(visitor.found):
        if position < start:
            continue
        for simpler in _simpler_numbers(node):
            replacement = cst.parse_expression(simpler).with_changes(
                lpar=node.lpar, rpar=node.rpar)
            yield position, module.visit(_Replace({id(node): replacement})).code


# -- input shapes -------------------------------------------------------------------------------


class _Factories(cst.CSTVisitor):
    def __init__(self, modules: frozenset[str]):
        self.modules = modules
        self.dims: list[cst.Integer] = []
        self.lists: list[cst.List] = []

    def visit_Call(self, node: cst.Call) -> None:
        name = get_full_name_for_node(node.func) or ""
        head, _, last = name.rpartition(".")
        if not (head and head.split(".")[0] in self.modules):
            return
        if last in _SIZED:
            self.dims += _dims(node)
        elif last in _LISTED and node.args and isinstance(node.args[0].value, cst.List):
            self.lists.append(node.args[0].value)


def _dims(call: cst.Call) -> list[cst.Integer]:
    """The integer literals that give a factory call's shape."""
    sized = [arg.value for arg in call.args if arg.keyword is not None
             and arg.keyword.value == "size"]
    sized += [arg.value for arg in call.args if arg.keyword is None
              and isinstance(arg.value, cst.Tuple | cst.List)][:1]
    if sized:
        value = sized[0]
        elements = value.elements if isinstance(value, cst.Tuple | cst.List) else []
        return [e.value for e in elements if isinstance(e.value, cst.Integer)]
    leading = []
    for arg in call.args:
        if arg.keyword is not None or not isinstance(arg.value, cst.Integer):
            break
        leading.append(arg.value)
    return leading


def _shape_sites(module: cst.Module) -> tuple[list[cst.Integer], list[cst.List]]:
    visitor = _Factories(_module_names(module))
    module.visit(visitor)
    return visitor.dims, visitor.lists


def _shrunk(value: int) -> list[int]:
    return sorted({v for v in (1, value // 2, value - 1) if 1 <= v < value})


def shape_candidates(text: str) -> Iterator[str]:
    """Factory dimensions shrunk (each value everywhere at once, largest first, then one site
    at a time) and items of ``torch.tensor`` lists removed."""
    module = cst.parse_module(text)
    dims, lists = _shape_sites(module)
    values = sorted({d.evaluated_value for d in dims}, reverse=True)
    for value in values:
        sites = [d for d in dims if d.evaluated_value == value]
        for smaller in _shrunk(value):
            yield module.visit(_Replace({id(d): d.with_changes(value=str(smaller))
                                         for d in sites})).code
    if len(dims) > 1:
        for site in dims:
            for smaller in _shrunk(site.evaluated_value):
                yield module.visit(_Replace({id(site): site.with_changes(
                    value=str(smaller))})).code
    for listed in lists:
        for drop in range(len(listed.elements) if len(listed.elements) > 1 else 0):
            elements = [e for i, e in enumerate(listed.elements) if i != drop]
            elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            yield module.visit(_Replace({id(listed): listed.with_changes(
                elements=elements)})).code


# -- tidying ------------------------------------------------------------------------------------


class _Unparenthesise(cst.CSTTransformer):
    """Parentheses around names, attributes, calls, subscripts and literals, which replaced
    operands keep from their old place (``(v / (step))``), are removed: never needed."""

    def on_leave(self, original: CSTNodeT, updated: CSTNodeT
                 ) -> CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[CSTNodeT]:
        # Tested apart from the ``if``, which then does not narrow ``updated`` away from its
        # own type: with_changes keeps it.
        atom = isinstance(updated, _ATOMS) and not isinstance(updated, cst.Tuple)
        if atom and getattr(updated, "lpar", None):
            return updated.with_changes(lpar=[], rpar=[])
        return updated


def tidy(text: str) -> str:
    """``text`` without parentheses around atoms."""
    return cst.parse_module(text).visit(_Unparenthesise()).code
