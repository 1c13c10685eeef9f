"""Data-dependent selects: ``if c: x = A else: x = B`` and friends, without a graph break.

The condition must be proven a tensor (``if`` on a tensor is data-dependent
branching) and both branches tensors. Branches made of cheap elementwise code
become ``_eqrw_where`` (torch.where when traced); branches that call layers become
``_eqrw_cond`` (torch.cond, which evaluates one branch only). Eager execution is
unchanged either way: the helpers take the original path unless compiling.

When the proof fails only because unannotated parameters are of unknown kind (directly
or through locals computed from them), a select with a plain condition becomes
``_eqrw_select((params...), c, lambda: A, lambda: B)`` (elementwise branches) or
``_eqrw_select_cond((params...), c, lambda x: A, lambda x: B, (x,))`` (branches that call
layers): traced with tensor parameters (Dynamo specialises the ``isinstance`` checks),
torch.where or torch.cond; otherwise ``A if c else B`` exactly, one branch evaluated,
whatever the parameters hold (numbers, lists, numpy arrays...).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from ...analysis.facts.classes import changes_state
from ...analysis.knowledge import SELECT_HELPER
from ...syntax.enums import Level
from ...syntax.nodes import descendants
from ...syntax.pattern import Bindings, same_tree
from .. import Kind, KindContext, Proposal
from ..conditions import COMPARISONS, flag_value, tensor_condition, with_compare, zero_dim
from ..values import CONVERSIONS, WHERE_SAFE_CALLS, aliases_mutated, bound_before


class Select(Kind):
    name = "select"
    node_types: tuple[type[ast.AST], ...] = (ast.If, ast.IfExp)
    options_schema = {"form": ("assign", "return", "elseless", "ternary", "same_call")}

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        # Each form is offered only the nodes it rewrites: a conditional expression for
        # "ternary", an ``if`` statement for the others (every ``if`` of traced code is
        # otherwise offered to six rules).
        self.node_types = (ast.IfExp,) if options["form"] == "ternary" else (ast.If,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"if"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        proposal = self._propose(node, context)
        if proposal is not None or self.options["form"] == "same_call":
            return with_compare(proposal)
        # Not proven: perhaps only because unannotated parameters are of unknown kind.
        # Proven with them taken as tensors, it becomes a run-time dispatch on their types,
        # which needs such a parameter in this very function (``_dispatch``): without one,
        # the proof under that assumption is not even tried.
        assumed = context.assuming() if context.assumable_parameters() else None
        proposal = self._propose(node, assumed) if assumed is not None else None
        dispatched = None if proposal is None or not isinstance(node, ast.If | ast.IfExp) else (
            _dispatch(node, proposal, context))
        if dispatched is None and self.options["form"] == "assign" and isinstance(node, ast.If):
            _diagnose(node, context)  # once per `if`: by the first select rule
        return dispatched

    def _propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        form = self.options["form"]
        if (not isinstance(node, ast.If | ast.IfExp)  # node_types: only these are offered
                or isinstance(node, ast.IfExp) != (form == "ternary")):
            return None
        condition = tensor_condition(node.test, context)
        if condition is None and form == "same_call":
            condition = _compared_to_tensor(node.test, context)
        if condition is None:
            return None  # static (shape, flag) or unknown condition: no break to fix
        if isinstance(node, ast.IfExp):  # the form is "ternary"
            return _select(context, condition, node.body, node.orelse, "$value",
                           Level.EXPRESSION)
        single, other = _only(node.body), _only(node.orelse)
        if form == "same_call" and node.orelse and (single is None or other is None):
            return _prepared_call(context, condition, node)
        if single is None or (node.orelse and other is None):
            return None
        assigned = _name_assignment(single)
        if form == "assign" and assigned is not None and other is not None and (
                (assigned_too := _name_assignment(other)) is not None
                and assigned[0].id == assigned_too[0].id):
            return _select(context, condition, assigned[1], assigned_too[1],
                           f"{assigned[0].id} = $value", Level.COMPOUND)
        if form == "elseless" and other is None and not node.orelse and assigned is not None:
            name = assigned[0]
            if bound_before(context, name.id, node):
                return _select(context, condition, assigned[1], name,
                               f"{name.id} = $value", Level.COMPOUND)
        if (form == "return" and isinstance(single, ast.Return) and single.value is not None
                and isinstance(other, ast.Return) and other.value is not None):
            return _select(context, condition, single.value, other.value, "return $value",
                           Level.COMPOUND)
        if form == "same_call" and other is not None:
            return _same_call(context, condition, single, other)
        return None


def _dispatch(node: ast.If | ast.IfExp, proposal: Proposal,
              context: KindContext) -> Proposal | None:
    """``proposal`` (proven with unannotated parameters taken as tensors) behind a run-time
    check that the parameters its operands come from are tensors: otherwise the helpers
    run the original ``if`` (one branch evaluated, whatever the parameters hold). Only a
    condition evaluated as written qualifies: a tensor (``$c0``), or ``_eqrw_compare`` /
    ``_eqrw_truth`` of ``.item()``/``bool()`` (the original comparison eagerly), not ``~``,
    ``&`` or ``|`` (which mean something else for Python values), nor ``.tolist()``
    (read as ``.item()``, the same only for a one-element tensor)."""
    assumed = context.assuming()
    condition = None if assumed is None else tensor_condition(node.test, assumed)
    if condition is None or any(isinstance(n, ast.Attribute) and n.attr == "tolist"
                                for n in ast.walk(node.test)):
        return None
    test = condition[0]
    if not (test == "$c0" or test.startswith(("_eqrw_compare($c0,", "_eqrw_truth($c0,"))):
        return None
    operands = [proposal.bindings[k] for k in (*condition[1], "a", "b")]
    parameters = context.parameters_behind(
        [b for b in operands if isinstance(b, ast.expr)])  # (each binds one expression)
    if not parameters:
        return None
    names = ", ".join(parameters) + ("," if len(parameters) == 1 else "")
    for traced, checked in ((f"_eqrw_where({test}, $a, $b)",
                             f"_eqrw_select(({names}), {test}, lambda: $a, lambda: $b)"),
                            (f"_eqrw_cond({test}, ", f"_eqrw_select_cond(({names}), {test}, ")):
        if traced in proposal.template:
            proposal.template = proposal.template.replace(traced, checked)
            proposal.helpers = frozenset({checked.partition("(")[0]})
            return with_compare(proposal)
    return None


def _only(body: list[ast.stmt]) -> ast.stmt | None:
    return body[0] if len(body) == 1 else None


def _assigns_name(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name))


def _name_assignment(statement: ast.stmt) -> tuple[ast.Name, ast.expr] | None:
    """``(name, value)`` of ``name = value``, else None."""
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return statement.targets[0], statement.value
    return None


def _same_assign_target(first: ast.stmt, second: ast.stmt | None) -> bool:
    one, two = _name_assignment(first), None if second is None else _name_assignment(second)
    return one is not None and two is not None and one[0].id == two[0].id


def _select(context: KindContext, condition: tuple[str, Bindings], if_true: ast.expr,
            if_false: ast.expr, shape: str, level: Level,
            tensor_or_none: bool = False) -> Proposal | None:
    if not tensor_or_none and not (context.is_tensor(if_true) and context.is_tensor(if_false)):
        return None
    if aliases_mutated(context, [if_true, if_false]):
        return None
    test = condition[0]
    bindings: Bindings = {**condition[1], "a": if_true, "b": if_false}
    if _where_safe(context, if_true) and _where_safe(context, if_false):
        if not (is_elementwise(if_true) and is_elementwise(if_false)):
            return None  # shapes likely differ: the helper would keep the break anyway
        value = f"_eqrw_where({test}, $a, $b)"
        return Proposal(shape.replace("$value", value), bindings, level,
                        frozenset({"_eqrw_where"}))
    operands = _free_tensors(context, [if_true, if_false])
    if operands is None or not (_cond_safe(context, if_true) and _cond_safe(context, if_false)):
        return None
    params = ", ".join(operands)
    packed = f"({params},)" if operands else "()"
    value = f"_eqrw_cond({test}, lambda {params}: $a, lambda {params}: $b, {packed})"
    return Proposal(shape.replace("$value", value), bindings, level, frozenset({"_eqrw_cond"}))


# Methods and torch functions whose result has the shape of their (first) tensor.
SHAPE_KEEPING = frozenset("""
    clamp clamp_min clamp_max clip abs neg relu sigmoid tanh exp log float double half
    bfloat16 to type_as clone detach contiguous masked_fill zeros_like ones_like full_like
    sign round floor ceil sqrt rsqrt reciprocal nan_to_num
""".split())


def is_elementwise(node: ast.expr) -> bool:
    """Built from names, numbers and shape-keeping calls only: no indexing, no reductions,
    no reshapes. Two such branches can still broadcast to different shapes, which the
    helper checks when traced; anything else is too likely to differ to be worth it."""
    for part in ast.walk(node):
        if isinstance(part, ast.Subscript | ast.Starred):
            return False
        if isinstance(part, ast.Call):
            name = part.func.attr if isinstance(part.func, ast.Attribute) else ""
            if name not in SHAPE_KEEPING and not _is_select(part):
                return False
    return True


def _calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _where_safe(context: KindContext, node: ast.expr) -> bool:
    if not context.is_pure(node):
        return False
    for part in ast.walk(node):
        if not isinstance(part, ast.BinOp):
            continue
        if isinstance(part.op, ast.MatMult):
            return False
        if isinstance(part.op, ast.Div | ast.Mod | ast.FloorDiv) and context.value_kind(
                part.right) != "number":
            return False  # a tensor divisor can be 0 where this branch is not taken
        if isinstance(part.op, ast.Pow) and not (
                isinstance(part.right, ast.Constant) and isinstance(part.right.value, int)
                and part.right.value >= 0):
            return False
    for call in _calls(node):
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(
            call.func, "id", "")
        if name not in WHERE_SAFE_CALLS and not _is_select(call):
            return False
    return True


def _is_select(call: ast.Call) -> bool:
    """A select an earlier round made (``_eqrw_where(c, a, b)``, the inner ``if/else`` of
    an ``elif`` chain): its operands are checked where they stand in the walk."""
    return isinstance(call.func, ast.Name) and call.func.id == SELECT_HELPER


def _cond_safe(context: KindContext, node: ast.expr) -> bool:
    """Branches for torch.cond: tensors in, tensors out, no side effects but layer calls."""
    for part in ast.walk(node):
        if isinstance(part, ast.Await | ast.Yield | ast.YieldFrom | ast.NamedExpr | ast.Lambda):
            return False
    for call in _calls(node):
        callee = context.value_kind(call.func)
        if callee != "tensor_callable" and not context.is_pure(call) and not _pure_method(
                context, call):
            return False
    return True


def _pure_method(context: KindContext, call: ast.Call) -> bool:
    """``self.method(...)`` of this class whose body assigns nothing on ``self`` and calls
    no in-place method: fine inside a torch.cond branch."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id == "self"):
        return False
    cls = context.facts.definitions.enclosing_class(context.function)
    method = context.facts.definitions.method(cls, func.attr) if cls is not None else None
    return method is not None and not changes_state(method)


def _free_tensors(context: KindContext, branches: list[ast.expr]) -> list[str] | None:
    """Local tensor names the branches read (they become torch.cond operands)."""
    names: list[str] = []
    for branch in branches:
        for part in ast.walk(branch):
            if isinstance(part, ast.Name) and part.id not in names and part.id != "self":
                value_kind = context.value_kind(part)
                if value_kind == "tensor":
                    names.append(part.id)
                elif value_kind not in ("object", "number", "tensor_callable"):
                    return None  # an operand of unknown kind cannot be passed safely
    return names


def _same_call(context: KindContext, condition: tuple[str, Bindings], first: ast.stmt,
               second: ast.stmt) -> Proposal | None:
    """``if c: f(k, A, kw=v) else: f(k, B, kw=v)`` -> ``f(k, where(c, A, B), kw=v)``."""
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)
            and isinstance(second, ast.Expr) and isinstance(second.value, ast.Call)):
        return None
    one, two = first.value, second.value
    if (not same_tree(one.func, two.func) or len(one.args) != len(two.args)
            or len(one.keywords) != len(two.keywords)
            or any(k.arg is None or k.arg != j.arg or not same_tree(k.value, j.value)
                   for k, j in zip(one.keywords, two.keywords))
            or any(isinstance(a, ast.Starred) for a in one.args + two.args)):
        return None
    differing = [i for i, (a, b) in enumerate(zip(one.args, two.args)) if not same_tree(a, b)]
    if len(differing) != 1:
        return None
    at = differing[0]
    proposal = _select(context, condition, one.args[at], two.args[at], "$value",
                       Level.COMPOUND, _buffer_value(one, at))
    if proposal is None:
        return None
    proposal.bindings.update({"f": one.func, "before": [*one.args[:at]],
                              "after": [*one.args[at + 1:]]})
    proposal.bindings.update({f"k{i}": k.value for i, k in enumerate(one.keywords)})
    arguments = [p for p in ("$$$before" if at else "", proposal.template,
                             "$$$after" if at + 1 < len(one.args) else "") if p]
    arguments += [f"{k.arg}=$k{i}" for i, k in enumerate(one.keywords)]
    proposal.template = f"$f({', '.join(arguments)})"
    return proposal


def _compared_to_tensor(test: ast.expr, context: KindContext) -> tuple[str, Bindings] | None:
    """``t > x``: one comparison of a pure tensor with a pure operand of unknown kind
    (``self.config.limit``). Almost always a tensor; ``_eqrw_where`` checks it is one before
    taking torch.where, and otherwise picks a branch by its truth, as the ``if`` did."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and type(test.ops[0]) in COMPARISONS and context.is_pure(test)):
        return None
    if not any(context.is_tensor(side) for side in (test.left, test.comparators[0])):
        return None
    return "$c0", {"c0": test}


def _buffer_value(call: ast.Call, at: int) -> bool:
    """The value argument of ``x.register_buffer(name, value, ...)``: a tensor or None by
    the API (anything else raises), which ``_eqrw_where`` checks before torch.where."""
    return (isinstance(call.func, ast.Attribute) and call.func.attr == "register_buffer"
            and at == 1)


def _prepared_call(context: KindContext, condition: tuple[str, Bindings],
                   node: ast.If) -> Proposal | None:
    """``if c: P...; f(k, A) else: Q...; f(k, B)`` where the preparations P and Q are
    idempotent caches (``if not hasattr(self, "x"): self.x = ...``, ``self.x =
    self.x.to(...)``): transformers 4.5x's LongRoPE picks its long or short frequencies so.
    Traced (``_eqrw_compiling()``), both preparations run and then ``f(k, where(c, A, B))``;
    otherwise the original ``if``, kept whole under ``else``."""
    parent = context.parents.get(node)
    if (isinstance(parent, ast.If) and isinstance(call := parent.test, ast.Call)
            and isinstance(call.func, ast.Name) and call.func.id == "_eqrw_compiling"):
        return None  # the original kept under a rewrite's ``else``
    *firsts, first = node.body
    *seconds, second = node.orelse
    preparations = firsts + seconds
    written = [_prepared_attribute(p) for p in preparations]
    if not preparations or None in written or len(set(written)) != len(written):
        return None
    proposal = _same_call(context, condition, first, second)
    if proposal is None:
        return None
    # Hoisted, the test and the call's shared parts run after both preparations, A after
    # Q, B after P: none may read what the other side's preparations write.
    ours, theirs = set(written[:len(firsts)]), set(written[len(firsts):])
    assert isinstance(first, ast.Expr)  # a call statement: _same_call proposed it
    shared = [node.test, first.value]  # the call minus A: A and B checked apart
    a, b = proposal.bindings["a"], proposal.bindings["b"]
    assert isinstance(a, ast.expr) and isinstance(b, ast.expr)
    if (_attributes_read(shared, skip=(a,)) & (ours | theirs)
            or _attributes_read([a]) & theirs or _attributes_read([b]) & ours):
        return None
    lines = ["if _eqrw_compiling():"]
    for index, statement in enumerate(preparations):
        proposal.bindings[f"p{index}"] = statement
        lines.append(f"    $p{index}")
    proposal.bindings["original"] = node
    lines += ["    " + proposal.template, "else:", "    $original"]
    proposal.template = "\n".join(lines)
    proposal.helpers = proposal.helpers | {"_eqrw_compiling"}
    return proposal


def _attributes_read(nodes: Sequence[ast.AST], skip: tuple[ast.AST, ...] = ()) -> set[str]:
    """The attributes (``o.x``) read in ``nodes``, not looking inside ``skip``."""
    found: set[str] = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if any(node is s for s in skip):
            continue
        if isinstance(node, ast.Attribute):
            found.add(ast.unparse(node))
        stack.extend(ast.iter_child_nodes(node))
    return found


def _prepared_attribute(statement: ast.stmt) -> str | None:
    """The attribute (``self.x``) an idempotent cache statement writes: a lazy
    initialisation ``if not hasattr(o, "x"): o.x[, _] = value`` or a refresh ``o.x =
    o.x.to(...)``; else None."""
    if isinstance(statement, ast.If) and not statement.orelse and len(statement.body) == 1:
        test, assign = statement.test, statement.body[0]
        if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
                and isinstance(call := test.operand, ast.Call)
                and isinstance(call.func, ast.Name) and call.func.id == "hasattr"
                and len(call.args) == 2 and isinstance(owner := call.args[0], ast.Name)
                and isinstance(name := call.args[1], ast.Constant)
                and isinstance(name.value, str)):
            return None
        attribute = f"{owner.id}.{name.value}"
        if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1):
            return None
        target = assign.targets[0]
        stores = target.elts if isinstance(target, ast.Tuple) else [target]
        if (sum(ast.unparse(t) == attribute for t in stores) != 1
                or not all(ast.unparse(t) == attribute or isinstance(t, ast.Name)
                           for t in stores)):
            return None
        return attribute
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(target := statement.targets[0], ast.Attribute)
            and isinstance(target.value, ast.Name) and isinstance(value := statement.value,
                                                                   ast.Call)
            and isinstance(value.func, ast.Attribute) and value.func.attr in CONVERSIONS
            and same_tree(value.func.value, target)):
        return ast.unparse(target)
    return None


def _from_tensor(test: ast.expr, context: KindContext) -> bool:
    """A condition computed from tensor data: a tensor, ``.item()``/``bool()`` of one, or a
    local name assigned only such values (Longformer's ``is_global_attn``)."""
    if tensor_condition(test, context) is not None:
        return True
    # A local assigned ``.item()`` needs the word "item" in its function: most functions
    # have none, and then are not walked for their assignments here.
    scalars = context.function_mentions("item", "tolist")
    for node in descendants(test):  # any node will do: the order does not matter
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("item", "tolist") and context.is_tensor(node.func.value)):
            return True
        if scalars and isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            values = [assign.value for assign in context.assignments(node.id)]
            if values and all(isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                              and v.func.attr in ("item", "tolist")
                              and context.is_tensor(v.func.value) for v in values):
                return True
    return False


@dataclass
class _Prefixed(KindContext):
    """A context whose notes start with ``prefix`` (kept in the same list of notes)."""

    prefix: str = ""

    def note(self, reason: str) -> None:
        super().note(self.prefix + reason)


def _prefixed(context: KindContext, prefix: str) -> KindContext:
    """``context`` (same facts, same notes) whose notes start with ``prefix``."""
    return _Prefixed(context.guards, context.assumed, context.notes, prefix)


def _python_scalar(test: ast.expr, context: KindContext) -> bool:
    """``test`` reads ``.item()``/``.tolist()``, or a name holding such a value."""
    target = test.left if isinstance(test, ast.Compare) else test
    return (isinstance(target, ast.Name) and flag_value(target, context) is not None) or any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("item", "tolist") for n in ast.walk(test))


def _tolist_not_0d(test: ast.expr, context: KindContext) -> bool:
    """``test`` calls ``.tolist()`` on a tensor that ``conditions.zero_dim`` cannot prove 0-d."""

    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "tolist" and context.is_tensor(n.func.value)
               and not zero_dim(n.func.value, context) for n in ast.walk(test))


def _diagnose(node: ast.If, context: KindContext) -> None:
    """Say why a data-dependent ``if`` stays (it keeps breaking the graph)."""
    if not _from_tensor(node.test, context):
        return
    if tensor_condition(node.test, context) is None and _tolist_not_0d(node.test, context):
        context.note("the condition reads `.tolist()` of a tensor not proven 0-d (a "
                     "reduction over every element): it may be a list, not a number")
        return
    readable = tensor_condition(node.test, context) is not None
    if readable and _python_scalar(node.test, context):
        # Readable as a tensor (conditions.py), but the branches below decide: say both.
        context = _prefixed(context, "the condition is a Python value taken from a tensor "
                                     "(.item(), .tolist()) that could stay a tensor; left "
                                     "alone: ")
    if tensor_condition(node.test, context) is None:
        context.note("the condition is a Python value taken from a tensor (.item(), "
                     ".tolist()) and is not a single comparison with a number or a bool() "
                     "of the `if` itself: torch.cond/torch.where would need it as a tensor")
        return
    if len(node.body) != 1 or len(node.orelse) > 1:
        context.note("data-dependent `if` whose branches are blocks of statements: only a "
                     "single assignment, return or call per branch becomes a select")
        return
    first, second = node.body[0], (node.orelse[0] if node.orelse else None)
    if isinstance(first, ast.Raise | ast.Continue | ast.Break) or isinstance(
            second, ast.Raise | ast.Continue | ast.Break):
        context.note("data-dependent `if` that changes control flow (raise with a computed "
                     "message, continue, break): no select expresses it")
        return
    values = [s.value for s in (first, second) if isinstance(s, ast.Assign | ast.Return)
              and s.value is not None]
    if _assigns_name(first) and second is not None and not _same_assign_target(first, second):
        context.note("data-dependent `if` whose branches assign different targets")
    elif any(not context.is_tensor(v) for v in values):
        context.note("data-dependent `if` with a branch not proven to be a tensor (None, a "
                     "Python value or unknown): torch.where/torch.cond return tensors only")
    elif values and not all(is_elementwise(v) for v in values):
        context.note("data-dependent `if` whose branches may differ in shape (indexing, "
                     "reductions, reshapes), or have side effects torch.cond cannot take")
    else:
        context.note("data-dependent `if` that no select form expresses")
