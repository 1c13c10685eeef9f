"""Rows selected by a boolean mask, put through row-wise modules and written back, per round
of a loop, without a dynamic shape.

    for i, key in enumerate(self.adapters.keys()):      # X-MOD's per-language adapters
        mask = lang_ids == i
        rows = hidden[mask]
        out_rows = self.adapters[key](rows)
        new[mask] = out_rows
                  ->
        rows = hidden if D else hidden[mask]
        out_rows = self.adapters[key](rows)
        new[... if D else mask] = _eqrw_rows_where(new, mask, out_rows) if D else out_rows

or in one statement (a row-wise value whose rows are all selections of one source, with a
call of the module's own submodule: elementwise values are mask-scatter's)::

    for t in range(len(self.heads)):
        out[task == t] = self.heads[t](x[task == t])
                  ->
        out[... if D else task == t] = _eqrw_rows_where(out, task == t, self.heads[t](x)) \
            if D else self.heads[t](x[task == t])

``hidden[mask]`` has a data-dependent number of rows (a graph break). When every statement
from the selection to the write is a row-wise computation of the selected rows, running it on
every row and keeping the selected ones with ``torch.where`` gives the same rows. ``D`` is
``_eqrw_rows_dense(hidden, mask, new, lambda: len(<the loop's iterable>), 4)``: traced,
gradients off, the mask a bool tensor whose shape leads both ``hidden``'s and ``new``'s, and
the loop's rounds at most ``max_factor`` (4). Every test of one rewrite asks it with the same
values, so they agree. Then the computation runs on every row and the write puts
``torch.where(mask, value, new)`` into the whole of ``new`` in place (every alias sees it, as
with the original ``index_put_``). Otherwise, and always eagerly, each statement runs as
written, beside its test in its own frame: values, exceptions, warnings and, traced beyond the
bound, graph breaks are the original's (a helper call around the selected rows would add a
graph per round).

What is proven before rewriting (else the code is left alone, with a note where the shape is
recognised):

* the selection ``sel = src[mask]`` and the write ``out[mask] = value`` use the same mask, a
  pure bool tensor; ``src`` and ``out`` are names or attribute chains (that they are tensors
  is checked where the tests run: anything else takes the original statements);
* the statements between are single-name assignments, each row-wise in the rows (the
  ``Rows`` table of ``rowwise.py``: elementwise operators, casts, last-axis reshapes and
  splits, linear layers, smooth activations) and ``value`` is too; a call of the module's own
  submodule (``self.m(rows)``, ``self.ms[key](rows)``) counts only when every object
  ``__init__`` stores there is a row-wise module: ``nn.Linear``, ``nn.LayerNorm``,
  ``nn.RMSNorm``, ``nn.Identity``, an activation module, or a class of this file whose
  ``forward(self, x)`` is row-wise by the same rules (recursively). An attribute holding an
  activation function (``ACT2FN[...]``/``get_activation(...)`` of an ``activations``
  module, or a config field naming the activation, ``config.hidden_act``) is taken to be
  elementwise, as transformers documents those fields;
* the selected rows and every name between are read nowhere else and bound nowhere else in
  the function (densely they hold every row);
* the statements are the direct body of a ``for`` loop over ``range(...)``, ``enumerate``
  of a pure sized expression, or such an expression: its length is the number of rounds.

Cost: each round runs the row-wise computation on every row instead of the selected ones:
``rounds`` times the compute of running it once on every row (the loop's selections, when they
partition the rows, cost it once in all). Only while ``rounds <= max_factor`` (4); beyond
that the selection keeps its break. Values: the selected rows' values up to the rounding of
the modules' matmuls on a different number of rows (bitwise where the kernels are batch
invariant, as on CPU in our measurements); a non-finite value in a row left out cannot leak
(``torch.where``). Gradients are off on the dense path. Without a rewrite,
``capture_dynamic_output_shape_ops=True`` removes the break (an unbacked row count).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import cast

from ....syntax.enums import Level
from ....syntax.pattern import same_tree
from ... import Kind, KindContext, Proposal
from ...rowwise import Rows, own_callable
from .mask_scatter import _mask_of_index, _simple

_MAX_FACTOR = "4"
# Modules mapping each row on its own, whatever the rows before them (torch.nn's names).
_ROW_MODULES = frozenset(f"torch.nn.{name}" for name in """
    Linear LayerNorm RMSNorm Identity GELU ReLU ReLU6 SiLU Tanh Sigmoid Mish Softplus ELU
    LeakyReLU GLU Hardswish Hardsigmoid SELU CELU QuickGELU
""".split())
# Config fields that name an activation function (transformers' documented spelling).
_ACTIVATION_FIELDS = ("hidden_act", "activation_function", "hidden_activation", "activation")
_DEPTH = 4  # classes resolved through at most this many levels of submodules


class RowSelection(Kind):
    """``sel = src[mask]``; row-wise assignments; ``out[mask] = value``, in a loop body (or
    ``out[mask] = f(src[mask])`` alone)."""

    name = "row_selection"
    node_types = (ast.Assign,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"] ="})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            return None
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            if _selection_before(node, context) is None:
                return _one_statement(node, context)
            chain = _chain_ending(node, context)
        elif isinstance(target, ast.Name) and isinstance(node.value, ast.Subscript):
            chain = _chain_from(node, context)
        else:
            return None
        if chain is None:
            return None
        selection, write, loop = chain
        # Spelled out: a binding must lie in the statement edited (the names and attribute
        # chains of the other statement do not; they are pure).
        rounds = _rounds(loop)
        select = selection.value
        assert isinstance(select, ast.Subscript)
        out = write.targets[0]
        assert isinstance(out, ast.Subscript)
        # The test is spelled where each statement runs, and the original operation is kept
        # as written beside it: traced beyond the bound, each breaks where the original did
        # (a helper call around the selected value would add a graph per round).
        dense = f"_eqrw_rows_dense({ast.unparse(select.value)}, $m, {ast.unparse(out.value)}, " \
                f"{rounds})"
        if node is selection:
            return Proposal(f"$t = $s if {dense} else $s[$m]",
                            {"t": selection.targets[0], "s": select.value, "m": select.slice},
                            Level.STATEMENT, frozenset({"_eqrw_rows_dense"}), requires=write)
        return Proposal(f"$o[... if {dense} else $m] = _eqrw_rows_where($o, $m, $v) if {dense} "
                        "else $v", {"o": out.value, "m": out.slice, "v": write.value},
                        Level.STATEMENT, frozenset({"_eqrw_rows_dense", "_eqrw_rows_where"}),
                        requires=selection)


_Chain = tuple[ast.Assign, ast.Assign, ast.For]


def _chain_from(selection: ast.Assign, context: KindContext) -> _Chain | None:
    """The chain a selection statement starts, when proven."""
    loop = context.parents.get(selection)
    if not isinstance(loop, ast.For) or selection not in loop.body:
        return None
    body = loop.body
    select = selection.value
    assert isinstance(select, ast.Subscript)
    for statement in body[body.index(selection) + 1:]:
        target = statement.targets[0] if isinstance(statement, ast.Assign) and len(
            statement.targets) == 1 else None
        if isinstance(target, ast.Subscript) and same_tree(target.slice, select.slice):
            return _proven(selection, statement, loop, context)  # type: ignore[arg-type]
        if not (isinstance(statement, ast.Assign) and isinstance(target, ast.Name)):
            return None
    return None


def _selection_before(write: ast.Assign, context: KindContext) -> ast.Assign | None:
    """The selection statement a write back ends a chain of: the nearest statement before it
    in its loop's body selecting through the write's index, with only single-name
    assignments between."""
    loop = context.parents.get(write)
    if not isinstance(loop, ast.For) or write not in loop.body:
        return None
    target = write.targets[0]
    assert isinstance(target, ast.Subscript)
    for statement in reversed(loop.body[:loop.body.index(write)]):
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            return None
        value = statement.value
        if isinstance(value, ast.Subscript) and same_tree(value.slice, target.slice):
            return statement
    return None


def _chain_ending(write: ast.Assign, context: KindContext) -> _Chain | None:
    """The chain a write statement ends, when proven."""
    selection = _selection_before(write, context)
    loop = context.parents.get(write)
    if selection is None or not isinstance(loop, ast.For):
        return None
    return _proven(selection, write, loop, context)


def _one_statement(write: ast.Assign, context: KindContext) -> Proposal | None:
    """``out[mask] = f(src[mask])`` in a loop's body, ``f`` row-wise in the selections (all of
    one source): traced densely, ``f(src)`` kept through ``torch.where``."""
    loop = context.parents.get(write)
    out = write.targets[0]
    assert isinstance(out, ast.Subscript)
    if not isinstance(loop, ast.For) or write not in loop.body:
        return None
    selections = [n for n in ast.walk(write.value)
                  if isinstance(n, ast.Subscript) and same_tree(n.slice, out.slice)]
    # Without a call of the module's own submodules the value is elementwise or nothing
    # this kind proves: mask-scatter's (which needs no loop) or no one's.
    if not selections or not any(isinstance(n, ast.Call) and own_callable(n.func, set())
                                 for n in ast.walk(write.value)):
        return None
    source = selections[0].value
    if (_mask_of_index(out.slice, context) is None or not context.is_pure(out.slice)
            or not (_simple(source) and _simple(out.value))):
        return None
    problem = None
    if not all(same_tree(n.value, source) for n in selections):
        problem = "rows of more than one source are selected"
    placeholder = "eqrw_rows"
    whole = _replaced(write.value, out.slice, lambda: copy.deepcopy(source))
    rows = ProvenRows(context)
    rows.names.add(placeholder)
    marked = _replaced(write.value, out.slice, lambda: ast.Name(placeholder, ast.Load()))
    if problem is None and (placeholder in {n.id for n in ast.walk(write.value)
                                            if isinstance(n, ast.Name)}
                            or not rows.kind(marked)):
        problem = f"`{ast.unparse(write.value)}` is not proven row-wise in the selected rows"
    problem = problem or _rounds_problem(loop, context)
    if problem is not None:
        context.note(f"rows selected by a mask and written back through it, left alone: "
                     f"{problem}")
        return None
    if "$" in ast.unparse(whole):  # template syntax: not spelled out
        return None
    dense = f"_eqrw_rows_dense({ast.unparse(source)}, $m, {ast.unparse(out.value)}, " \
            f"{_rounds(loop)})"
    return Proposal(f"$o[... if {dense} else $m] = _eqrw_rows_where($o, $m, "
                    f"{ast.unparse(whole)}) if {dense} else $v",
                    {"o": out.value, "m": out.slice, "v": write.value}, Level.STATEMENT,
                    frozenset({"_eqrw_rows_dense", "_eqrw_rows_where"}))


def _replaced(value: ast.expr, index: ast.expr, make: Callable[[], ast.expr]) -> ast.expr:
    """A copy of ``value`` with each selection through ``index`` replaced by ``make()``."""

    class Replace(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            return make() if same_tree(node.slice, index) else self.generic_visit(node)

    return cast(ast.expr, Replace().visit(copy.deepcopy(value)))


def _proven(selection: ast.Assign, write: ast.Assign, loop: ast.For,
            context: KindContext) -> _Chain | None:
    """``(selection, write, loop)`` when every condition of the module docstring holds; a
    note when the shape is there but a condition fails."""
    select, out = selection.value, write.targets[0]
    assert isinstance(select, ast.Subscript) and isinstance(out, ast.Subscript)
    mask = _mask_of_index(select.slice, context)
    if mask is None or not context.is_pure(select.slice):
        return None
    # Names or attribute chains, evaluated again by the tests; whether they are tensors is
    # checked where the tests run (a source rebound by a module call is not proven one here).
    if not (_simple(select.value) and _simple(out.value)):
        return None
    problem = _row_problem(selection, write, loop, context)
    problem = problem or _rounds_problem(loop, context)
    if problem is not None:
        context.note(f"rows selected by a mask and written back through it, left alone: "
                     f"{problem}")
        return None
    return selection, write, loop


def _row_problem(selection: ast.Assign, write: ast.Assign, loop: ast.For,
                 context: KindContext) -> str | None:
    """Why the statements from the selection to the write are not a row-wise chain."""
    body = loop.body
    between = body[body.index(selection) + 1:body.index(write)]
    selected = selection.targets[0]
    assert isinstance(selected, ast.Name)
    rows = ProvenRows(context)
    rows.names.add(selected.id)
    chain_names = [selected.id]
    for statement in between:
        assert isinstance(statement, ast.Assign)
        name = statement.targets[0]
        assert isinstance(name, ast.Name)
        if not rows.kind(statement.value):
            return f"`{ast.unparse(statement)}` is not proven row-wise"
        rows.names.add(name.id)
        chain_names.append(name.id)
    if not rows.kind(write.value):
        return f"`{ast.unparse(write.value)}` is not proven row-wise in the selected rows"
    # What the tests read must not change between the statements, or they could disagree.
    fixed = {n.id for part in (selection.value, write.targets[0], loop.iter)
             for n in ast.walk(part) if isinstance(n, ast.Name)}
    if fixed & set(chain_names):
        return "the chain rebinds a name of the mask, the source, the output or the rounds"
    chain: set[ast.stmt] = {selection, write, *between}
    for row_name in chain_names:
        if any(not context.inside(b, chain) for b in context.binders(row_name)) or any(
                isinstance(n, ast.Name) and n.id == row_name and isinstance(n.ctx, ast.Load)
                and not context.inside(n, chain) for n in context.walk()):
            return f"`{row_name}` (the selected rows) is used outside the chain"
    return None


def _rounds_problem(loop: ast.For, context: KindContext) -> str | None:
    """Why the rounds of ``loop`` cannot be counted, if they cannot."""
    sized = evaluated = _sized(loop.iter)
    if isinstance(sized, ast.Call) and isinstance(sized.func, ast.Attribute) and _is_view(sized):
        evaluated = sized.func.value  # the mapping: its view is read without side effects
    if evaluated is None or not context.is_pure(evaluated):
        return "the loop's rounds cannot be counted (not range, enumerate or a pure sized value)"
    return None


def _rounds(loop: ast.For) -> str:
    """The rounds and the bound, as ``_eqrw_rows_dense`` takes them. Spelled out: a binding
    must lie in the statement edited (the loop's header does not; it is pure)."""
    sized = _sized(loop.iter)
    assert sized is not None
    return f"lambda: len({ast.unparse(sized)}), {_MAX_FACTOR}"


def _sized(iterable: ast.expr) -> ast.expr | None:
    """What ``len`` counts the rounds of a loop over ``iterable`` with: ``range(...)`` itself,
    ``enumerate(x)``'s ``x`` (one argument), or a name, attribute chain or ``.keys()``/
    ``.values()``/``.items()`` of one; else None."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
        if iterable.func.id == "range" and not iterable.keywords:
            return iterable
        if iterable.func.id == "enumerate" and len(iterable.args) == 1 and not iterable.keywords:
            return _sized(iterable.args[0])
        return None
    if _is_view(iterable):
        return iterable if _simple(iterable.func.value) else None  # type: ignore[attr-defined]
    return iterable if _simple(iterable) else None


def _is_view(node: ast.expr) -> bool:
    """``m.keys()``, ``m.values()`` or ``m.items()``: a mapping's view, read without side
    effects by the mapping protocol (``nn.ModuleDict``, dict), whose ``len`` is the mapping's."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("keys", "values", "items") and not node.args
            and not node.keywords)


class ProvenRows(Rows):
    """``Rows`` where a call of the module's own submodule is row-wise only when proven: every
    object ``__init__`` stores in that attribute is a row-wise module (module docstring)."""

    def __init__(self, context: KindContext, cls: ast.ClassDef | None = None, depth: int = 0):
        super().__init__(set(), context)
        self.cls = cls if cls is not None else context.facts.definitions.owning_class(
            context.function)
        self.depth = depth

    def own_call(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Subscript):
            func = func.value
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "self" and self.cls is not None):
            return False
        stored = _stored(self.cls, func.attr)
        return bool(stored) and all(self._row_module(value) for value in stored)

    def _row_module(self, value: ast.expr) -> bool:
        facts = self.context.facts
        if isinstance(value, ast.Subscript) or (isinstance(value, ast.Call) and (
                (facts.imports.resolve(value.func) or "").endswith(".get_activation"))):
            root = value.value if isinstance(value, ast.Subscript) else value.func
            return (facts.imports.resolve(root) or "").rpartition(".")[0].endswith(
                "activations")
        if isinstance(value, ast.Attribute):  # config.hidden_act
            return value.attr in _ACTIVATION_FIELDS or value.attr.endswith("_act")
        if not isinstance(value, ast.Call):
            return False
        if facts.imports.resolve(value.func) in _ROW_MODULES:
            return True
        if not isinstance(value.func, ast.Name) or self.depth >= _DEPTH:
            return False
        cls = facts.definitions.classes.get(value.func.id)
        return cls is not None and cls is not self.cls and _row_wise_forward(
            cls, self.context, self.depth + 1)


def _stored(cls: ast.ClassDef, attribute: str) -> list[ast.expr]:
    """The objects ``cls.__init__`` stores in ``self.<attribute>``: assigned whole
    (``self.a = M()``), as an item (``self.a[k] = M()``), or the elements of a
    ``nn.ModuleList([...])``/``nn.ModuleDict({...})`` (comprehensions included) assigned
    whole. Empty when anything else is stored there, or nothing."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"),
                None)
    if init is None:
        return []
    found: list[ast.expr] = []
    for node in ast.walk(init):
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            whole = _self_attribute(target, attribute)
            item = isinstance(target, ast.Subscript) and _self_attribute(target.value, attribute)
            if whole:
                elements = _container_elements(node.value)
                if elements is None:
                    return []
                found += elements
            elif item:
                found.append(node.value)
    return found


def _self_attribute(node: ast.expr, attribute: str) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == attribute
            and isinstance(node.value, ast.Name) and node.value.id == "self")


def _container_elements(value: ast.expr) -> list[ast.expr] | None:
    """``[value]`` for a module, the elements of a ModuleList/ModuleDict literal (or of its
    comprehension), ``[]`` for an empty one; None for a container of another form."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute | ast.Name)):
        return [value]
    name = value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id
    if name not in ("ModuleList", "ModuleDict"):
        return [value]
    if not value.args:
        return []
    if len(value.args) != 1 or value.keywords:
        return None
    inner = value.args[0]
    if isinstance(inner, ast.List | ast.Tuple):
        return list(inner.elts)
    if isinstance(inner, ast.Dict):
        return [v for v in inner.values]
    if isinstance(inner, ast.ListComp):
        return [inner.elt]
    if isinstance(inner, ast.DictComp):
        return [inner.value]
    return None


def _row_wise_forward(cls: ast.ClassDef, context: KindContext, depth: int) -> bool:
    """Whether ``cls.forward(self, x)`` maps each row of ``x`` on its own: single-name
    assignments and one final ``return``, each row-wise in ``x`` (``ProvenRows``)."""
    forward = next((f for f in cls.body
                    if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    if forward is None:
        return False
    arguments = forward.args
    if (len(arguments.args) != 2 or arguments.posonlyargs or arguments.kwonlyargs
            or arguments.vararg or arguments.kwarg or arguments.defaults):
        return False
    rows = ProvenRows(context, cls, depth)
    rows.names.add(arguments.args[1].arg)
    body = [s for s in forward.body if not _docstring(s)]
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return False
    for statement in body[:-1]:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name) and rows.kind(statement.value)):
            return False
        rows.names.add(statement.targets[0].id)
    return bool(rows.kind(body[-1].value))


def _docstring(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))

