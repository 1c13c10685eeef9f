"""A boolean-mask selection written back through the same mask, without a dynamic shape.

    out[mask] = x[mask] * 2 + 1     ->   _eqrw_mask_scatter(out, lambda: mask, mask,
                                             lambda eqrw_at: eqrw_at(x) * 2 + 1, 'setitem')

``x[mask]`` has a data-dependent number of elements (a graph break). When the value
written back is elementwise in the selections (every tensor in it is a selection with the
same index, the rest Python numbers), computing it on the whole tensors and keeping the
selected elements with ``torch.where`` gives the same elements: ``_eqrw_mask_scatter``
does that when traced, and writes the result into ``out`` in place (``out.copy_``), as the
original assignment (``index_put_``) does, so every alias of ``out`` sees it.

Eagerly, and whenever the traced checks fail (mask not a bool tensor whose shape leads
``out``'s, a selected tensor not of ``out``'s shape, a value of another dtype), the helper
runs the original statement: the selections are taken where the original took them
(``eqrw_at(x)`` is ``x[index]``), so values, exceptions and warnings are the original's.

Two tables of operations (``options: {ops: exact | pointwise}``):

- ``exact``: ``+``, ``-``, negation, ``*`` and ``/`` by a finite number literal (``/`` by a
  non-zero one), ``clamp``/``clip``/``relu``/``float``... Their gradient, evaluated at
  the elements the selection leaves out, is exactly 0 for every input (including inf and
  NaN), so gradients equal the original's;
- ``pointwise``: any elementwise function of the table below and products of selections.
  Forward values are still exact (torch.where discards the extra elements, and NaN or inf
  there raises no error on tensors), but the gradient at the elements left out is
  ``0 * f'(x)``, which is NaN where ``f'`` is infinite or NaN (``sqrt``/``log`` at 0 or
  below, ``exp`` overflowing, a product with an infinite factor): unsafe.

Unannotated parameters (``out = x * 1.0; out[x < 0] = x[x < 0] * 0.1`` in ``forward(self,
x)``) are taken as tensors for the proof: the traced checks above fall back to the original
statement for numbers, lists and numpy arrays, which eagerly run it as written.

``f`` runs on every element, not only the selected ones: the cost is ``numel / selected``
times the selection's (the whole tensor), with no gather or scatter.
"""

from __future__ import annotations

import ast
import math

from ....analysis.inference import NUMBER
from ....syntax.enums import Level
from ....syntax.pattern import Bindings, same_tree
from ... import Kind, KindContext, Proposal
from ...conditions import is_boolean

# Methods (and torch./F. functions of the same name) in each table, with the arguments
# they may take besides the selection: literals only, so nothing else is broadcast.
_EXACT_CALLS = frozenset("clamp clamp_min clamp_max clip relu float double half bfloat16".split())
_POINTWISE_CALLS = _EXACT_CALLS | frozenset("""
    abs neg exp expm1 log log1p log2 log10 sqrt rsqrt sigmoid tanh sin cos reciprocal square
    pow sign floor ceil round trunc silu gelu softplus erf nan_to_num
""".split())

_EARLIER = ("masked selection taken in an earlier statement (`y = x[mask]` or an index from "
            "nonzero): that statement breaks the graph itself, and a rewrite of both "
            "statements is not made")


class MaskScatter(Kind):
    """``out[mask] = f(x[mask], ...)`` and ``out.index_put_(index, f(x[index]))``."""

    name = "mask_scatter"
    node_types = (ast.Assign, ast.Expr)
    options_schema = {"ops": ("exact", "pointwise")}

    def tokens(self) -> frozenset[str]:
        return frozenset({"] =", "index_put_"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        found = _scatter_parts(node)
        if found is None:  # most assignments: declined once, not again under assumptions
            return None
        proposal = self._propose(found, context)
        if proposal is None and (assumed := context.assuming()) is not None:
            # Proven with unannotated parameters taken as tensors: the helper's traced path
            # checks that the mask, ``out`` and every selected value are tensors, and runs
            # the original statement otherwise (the assumed context records no notes).
            proposal = self._propose(found, assumed)
        return proposal

    def _propose(self, found: tuple[ast.expr, ast.expr, ast.expr, str],
                 context: KindContext) -> Proposal | None:
        out, index, value, form = found
        if form == "index_put_" and not isinstance(index, ast.Tuple | ast.Call):
            return None  # index_put_ takes a tuple of indices: a bare mask raises TypeError
        mask = _mask_of_index(index, context)
        if mask is None and _selected_earlier(value, index, context):
            context.note(_EARLIER)
        if mask is None or not context.is_tensor(out) or not _simple(out):
            return None
        # nonzero(as_tuple=True) / one-argument where of a pure mask are pure themselves
        # (absent from the purity tables, which list functions of any argument list).
        if not context.is_pure(mask if _unwrapped(index) is not mask else index):
            return None
        # The lambda's parameter: a name the value does not use (it would be shadowed).
        used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        pick = next(f"eqrw_at{'_' * i}" for i in range(len(used) + 1)
                    if f"eqrw_at{'_' * i}" not in used)
        builder = _Template([index, mask], context, self.options["ops"] == "exact", pick)
        body = builder.build(value)
        if body is None or not builder.selections:
            if _selected_earlier(value, index, context):
                context.note(_EARLIER)
            elif builder.selections or _selects(value, index) or _selects(value, mask):
                context.note(f"masked selection written back through the mask, but the value "
                             f"is not elementwise in the selections ({builder.reason})")
            return None
        bindings: Bindings = {"out": out, "index": index, "mask": mask, **builder.bindings}
        template = (f"_eqrw_mask_scatter($out, lambda: $index, $mask, "
                    f"lambda {pick}: {body}, {form!r})")
        return Proposal(template, bindings, Level.STATEMENT, frozenset({"_eqrw_mask_scatter"}))


def _scatter_parts(node: ast.AST) -> tuple[ast.expr, ast.expr, ast.expr, str] | None:
    """``(out, index, value, form)`` of ``out[index] = value`` or
    ``out.index_put_(index, value)`` (no ``accumulate``) as a statement."""
    if isinstance(node, ast.Assign):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Subscript):
            return None
        target = node.targets[0]
        return target.value, target.slice, node.value, "setitem"
    if not isinstance(node, ast.Expr):
        return None
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "index_put_" and len(call.args) == 2 and not call.keywords):
        return None
    return call.func.value, call.args[0], call.args[1], "index_put_"


def _simple(node: ast.expr) -> bool:
    """A name or a chain of attributes on a name: evaluated early, it means the same."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _unwrapped(index: ast.expr) -> ast.expr:
    """``mask`` for the index ``(mask,)``; any other index as it is."""
    return index.elts[0] if isinstance(index, ast.Tuple) and len(index.elts) == 1 else index


def _mask_of_index(index: ast.expr, context: KindContext) -> ast.expr | None:
    """The bool mask an index selects with: ``mask``, ``(mask,)``,
    ``mask.nonzero(as_tuple=True)``, ``torch.nonzero(mask, as_tuple=True)`` or one-argument
    ``torch.where(mask)``."""
    if isinstance(index, ast.Tuple) and len(index.elts) == 1:
        index = index.elts[0]
    if isinstance(index, ast.Call):
        qualname = context.facts.imports.resolve(index.func)
        as_tuple = any(k.arg == "as_tuple" and isinstance(k.value, ast.Constant)
                       and k.value.value is True for k in index.keywords)
        if qualname == "torch.where" and len(index.args) == 1 and not index.keywords:
            inner = index.args[0]
        elif qualname == "torch.nonzero" and as_tuple and len(index.args) == 1:
            inner = index.args[0]
        elif (isinstance(index.func, ast.Attribute) and index.func.attr == "nonzero"
              and as_tuple and not index.args and len(index.keywords) == 1):
            inner = index.func.value
        else:
            return None
        return inner if is_boolean(inner, context) else None
    return index if is_boolean(index, context) else None


def _selected_earlier(value: ast.expr, index: ast.expr, context: KindContext) -> bool:
    """The index, or a name in the value, holds a selection made by another statement."""
    def assigned(name: ast.Name) -> list[ast.expr]:
        return [n.value for n in context.assignments(name.id)]

    if isinstance(index, ast.Name) and any(
            isinstance(v, ast.Call) and _mask_of_index(v, context) is not None
            for v in assigned(index)):
        return True
    return any(isinstance(v, ast.Subscript) and same_tree(v.slice, index)
               for n in ast.walk(value) if isinstance(n, ast.Name) for v in assigned(n))


def _selects(value: ast.expr, index: ast.expr) -> bool:
    return any(isinstance(n, ast.Subscript) and same_tree(n.slice, index)
               for n in ast.walk(value))


class _Template:
    """The value as a template over ``pick(<selected tensor>)``, or None with a reason."""

    def __init__(self, indexes: list[ast.expr], context: KindContext, exact: bool, pick: str):
        # A selection may spell the index as the statement does or as its mask: ``x[mask]``
        # and ``x[(mask,)]`` or ``x[mask.nonzero(as_tuple=True)]`` select the same elements.
        self.indexes, self.context, self.exact, self.pick = indexes, context, exact, pick
        self.bindings: Bindings = {}
        self.selections = 0
        self.reason = ""

    def bind(self, node: ast.expr) -> str:
        name = f"k{len(self.bindings)}"
        self.bindings[name] = node
        return f"${name}"

    def refuse(self, reason: str) -> None:
        """Keep ``reason`` as the reason, unless an earlier refusal gave one."""
        self.reason = self.reason or reason

    def build(self, node: ast.expr) -> str | None:
        """Template text for ``node``: selections become ``pick($k)``, numbers stay bound."""
        if isinstance(node, ast.Subscript) and any(same_tree(node.slice, i)
                                                   for i in self.indexes):
            if not (self.context.is_tensor(node.value) and self.context.is_pure(node.value)):
                self.refuse("a selection of something not proven a pure tensor")
                return None
            self.selections += 1
            return f"{self.pick}({self.bind(node.value)})"
        if (self.context.value_kind(node) == NUMBER and not self._contains_selection(node)
                and self.context.is_pure(node)):
            return self.bind(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = self.build(node.operand)
            sign = "-" if isinstance(node.op, ast.USub) else "+"
            return None if inner is None else f"({sign}{inner})"
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        self.refuse(f"`{ast.unparse(node)}` is neither a selection through the same "
                    "index nor a number")
        return None

    def _contains_selection(self, node: ast.expr) -> bool:
        return any(_selects(node, i) for i in self.indexes)

    def _binary(self, node: ast.BinOp) -> str | None:
        symbols = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
        symbol = symbols.get(type(node.op))
        if symbol is None:
            self.refuse(f"the operator of `{ast.unparse(node)}` is not elementwise-safe")
            return None
        if self.exact and symbol in ("*", "/", "**") and not (
                _finite_literal(node.right, nonzero=symbol == "/") and symbol != "**"
                or symbol == "*" and _finite_literal(node.left, nonzero=False)):
            self.refuse(f"`{ast.unparse(node)}`: only + and -, and * or / by a "
                        "finite number literal, keep gradients exact")
            return None
        left, right = self.build(node.left), self.build(node.right)
        if left is None or right is None:
            return None
        return f"({left} {symbol} {right})"

    def _call(self, node: ast.Call) -> str | None:
        func = node.func
        name = (func.attr if isinstance(func, ast.Attribute)
                else func.id if isinstance(func, ast.Name) else "")
        allowed = _EXACT_CALLS if self.exact else _POINTWISE_CALLS
        if name not in allowed:
            self.refuse(f"`{name}` is not in the rule's elementwise table")
            return None
        extra = [a for a in node.args] + [k.value for k in node.keywords]
        qualname = self.context.facts.imports.resolve(func) or ""
        is_function = qualname.rpartition(".")[0] in ("torch", "torch.nn.functional")
        if is_function:
            if not node.args:
                self.refuse(f"`{name}` without its tensor argument")
                return None
            subject, extra = node.args[0], extra[1:]
        elif isinstance(func, ast.Attribute):
            subject = func.value
        else:
            self.refuse(f"`{name}` is not a tensor method or torch function")
            return None
        if any(not _literal(e) for e in extra) or any(k.arg is None for k in node.keywords):
            self.refuse(f"`{name}` with arguments other than number literals")
            return None
        inner = self.build(subject)
        if inner is None:
            return None
        rest = [self.bind(a) for a in (node.args[1:] if is_function else node.args)]
        rest += [f"{k.arg}={self.bind(k.value)}" for k in node.keywords]
        if is_function:
            return f"{self.bind(func)}({', '.join([inner] + rest)})"
        return f"{inner}.{name}({', '.join(rest)})"


def _literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, bool)


def _finite_literal(node: ast.expr, nonzero: bool) -> bool:
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node, sign = node.operand, -1
    if not isinstance(node, ast.Constant):
        return False
    literal = node.value
    # Exactly an int or a float: True and False (ints too) are not number literals here.
    if not isinstance(literal, int | float) or isinstance(literal, bool):
        return False
    value = sign * literal
    return math.isfinite(value) and (value != 0 or not nonzero)
