"""Writes through a boolean mask guarded by the mask's ``any()``: the guard skipped traced.

wav2vec2's contrastive logits and Ovis2's visual indicators write through a mask only when
it selects something::

    neg_is_pos = (quantized_features == negative_quantized_features).all(-1)
    if neg_is_pos.any():
        logits[1:][neg_is_pos] = float("-inf")

``if mask.any():`` asks Python for a tensor's truth: a graph break (data-dependent
branching) by default, and still one with ``capture_scalar_outputs`` (Dynamo cannot guard on
the unbacked bool). Yet when the mask selects nothing, each write selects nothing: the body
is a no-op. The test becomes ``_eqrw_compiling() or neg_is_pos.any()``. Eagerly
``_eqrw_compiling()`` is False, so ``mask.any()`` decides as before (the same call, the same
truth). Traced, Dynamo folds it to True and runs the body whatever the mask holds; the
writes through a boolean mask trace without a break (``index_put_`` with a bool index).

Proven first, else the ``if`` is left alone:

- no ``else``/``elif``; the test is ``M.any()`` or ``torch.any(M)`` of a local name ``M``
  every assignment of which gives a boolean whenever it gives a tensor (a comparison, a
  method returning one: ``any``/``all``/``eq``/``isnan``..., ``~``, ``&``, ``|`` of those,
  another such name): an integer index would write row 0 when it is all zeros, which
  ``any()`` also calls False;
- every statement of the body is ``T[M] = V`` with the same name ``M`` as the index, where
  ``T`` is a proven tensor, a local name or a slice of one (``logits[1:]``, a view: the
  write goes through it), never ``M`` itself, and every assignment of that name computes a
  value (a call, an operation, a subscript), never a bare alias of another name;
- ``V`` is a number (a literal, ``float("inf")`` and the like, ``math.inf``/``math.nan``,
  signed) or ``X[M]``: the same mask's selection of a proven tensor ``X``, so its length is
  the selection's length, zero when the mask selects nothing.

What the inference cannot type (``M`` or ``T`` from a method's result, as wav2vec2's
``logits = self.compute_contrastive_logits(...)``) is checked when traced:
``_eqrw_compiling_on_tensors(M, logits) or M.any()`` takes the original test unless both
are tensors.

Why the values are the same traced. With the mask selecting nothing, ``T[M] = V`` selects
no element: nothing is written, and ``V`` broadcasts to the empty selection (a number
always; ``X[M]`` has that length). Evaluating ``V`` has no effect of its own. Gradients:
the write is ``index_put_``, whose gradient passes unchanged to every element not written
(here, all), and a number or ``X[M]`` of an empty mask contributes nothing (``X`` gets a
zero gradient where the original left it unused: as a select's untaken branch does).
With the mask selecting something, the body is what the original runs.
"""

from __future__ import annotations

import ast

from ....syntax.enums import Level
from ... import Kind, KindContext, Proposal
from ...conditions import BOOLEAN_METHODS
from ...spelling import number_literal

_NUMBER_TEXTS = frozenset({"inf", "-inf", "+inf", "nan", "infinity", "-infinity"})
_MATH_CONSTANTS = frozenset({"math.inf", "math.nan", "math.pi", "math.e"})


class AnyGuardedWrites(Kind):
    name = "any_guarded_writes"
    node_types = (ast.If,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"any("})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.If) or node.orelse:
            return None
        tested = _tested_mask(node.test, context)
        if tested is None or not _boolean_name(tested.id, context, set()):
            return None
        mask = tested.id
        unproven = [] if context.is_tensor(tested) else [mask]
        for statement in node.body:
            names = _masked_write(statement, mask, context)
            if names is None:
                return None
            unproven += [n for n in names if n not in unproven]
        if not unproven:
            return Proposal("_eqrw_compiling() or $c", {"c": node.test}, Level.EXPRESSION,
                            frozenset({"_eqrw_compiling"}), target=node.test, settles=True)
        # Names the inference cannot type (a method's result): checked when traced, and
        # anything but tensors keeps the original test.
        return Proposal(f"_eqrw_compiling_on_tensors({', '.join(unproven)}) or $c",
                        {"c": node.test}, Level.EXPRESSION,
                        frozenset({"_eqrw_compiling_on_tensors"}), target=node.test,
                        settles=True)


def _tested_mask(test: ast.expr, context: KindContext) -> ast.Name | None:
    """``M`` of ``M.any()`` or ``torch.any(M)``, a local name; else None."""
    if not isinstance(test, ast.Call) or test.keywords:
        return None
    func = test.func
    if isinstance(func, ast.Attribute) and func.attr == "any" and not test.args:
        operand = func.value
    elif (len(test.args) == 1 and context.facts.imports.resolve(func) == "torch.any"):
        operand = test.args[0]
    else:
        return None
    return operand if isinstance(operand, ast.Name) else None


def _boolean_name(name: str, context: KindContext, seen: set[str]) -> bool:
    """Every assignment of ``name`` in the function (it has one) gives a boolean whenever
    it gives a tensor: a comparison, a method that returns one (``any``, ``all``, ``eq``,
    ``isnan``...), ``~``/``&``/``|``/``^`` of those, or another such name. Whether it is a
    tensor at all is proven, or checked when traced."""
    if name in seen:
        return False
    seen.add(name)
    values = [n.value for n in context.assignments(name)]
    return bool(values) and len(values) == len(context.binders(name)) and all(
        _boolean_form(value, context, seen) for value in values)


def _boolean_form(node: ast.expr, context: KindContext, seen: set[str]) -> bool:
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.Name):
        return _boolean_name(node.id, context, seen)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return _boolean_form(node.operand, context, seen)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr | ast.BitXor):
        return all(_boolean_form(side, context, seen) for side in (node.left, node.right))
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in BOOLEAN_METHODS)


def _masked_write(statement: ast.stmt, mask: str, context: KindContext) -> list[str] | None:
    """For ``T[M] = V`` as the module docstring states it, the names of ``T`` and of
    ``V``'s selection that are not proven tensors (checked at run time); else None."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    if not (isinstance(target, ast.Subscript) and _is_name(target.slice, mask)):
        return None
    base = _local_base(target.value)
    if base is None or base.id == mask or not _computed(base.id, context):
        return None
    value = statement.value
    operands: list[ast.expr] = [base]
    if not _number(value, context):
        if not (isinstance(value, ast.Subscript) and _is_name(value.slice, mask)
                and isinstance(value.value, ast.Name) and value.value.id != mask):
            return None
        operands.append(value.value)
    return [o.id for o in operands if isinstance(o, ast.Name) and not context.is_tensor(o)]


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _local_base(node: ast.expr) -> ast.Name | None:
    """``T`` of ``T`` or ``T[<slices and int literals>]``; else None."""
    if isinstance(node, ast.Name):
        return node
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and _static_index(
            node.slice):
        return node.value
    return None


def _static_index(node: ast.expr) -> bool:
    """Slices and int literals only (``1:``, ``:, 0``): an index with no effect of its own."""
    if isinstance(node, ast.Tuple):
        return all(_static_index(element) for element in node.elts)
    if isinstance(node, ast.Slice):
        return all(part is None or _int(part) for part in (node.lower, node.upper, node.step))
    return _int(node)


def _int(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _computed(name: str, context: KindContext) -> bool:
    """Every binding of ``name`` in the function assigns a computed value (a call, an
    operation, a subscript): a local, never a parameter or a bare alias of one (an in-place
    write to a leaf that requires grad raises, even when it writes nothing)."""
    binders = context.binders(name)
    values = [n.value for n in context.assignments(name)]
    return bool(values) and len(values) == len(binders) and all(
        isinstance(value, ast.Call | ast.BinOp | ast.UnaryOp | ast.Subscript)
        for value in values)


def _number(node: ast.expr, context: KindContext) -> bool:
    """A number the write broadcasts anywhere: a literal, ``float("inf")``, ``math.inf``."""
    if number_literal(node) is not None:
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _number(node.operand, context)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "float" and len(node.args) == 1 and not node.keywords
            and _builtin(node.func.id, context)):
        argument = node.args[0]
        return isinstance(argument, ast.Constant) and isinstance(argument.value, str) and (
            argument.value.strip().lower() in _NUMBER_TEXTS)
    return isinstance(node, ast.Attribute) and (
        context.facts.imports.resolve(node) in _MATH_CONSTANTS)


def _builtin(name: str, context: KindContext) -> bool:
    """``name`` is the builtin here: nothing local or imported shadows it."""
    inference = context.guards.inference
    return (name not in context.facts.imports.aliases
            and inference.lookup(name, context.guards.chain) in (None, "object"))
