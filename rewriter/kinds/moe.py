"""Mixture-of-experts dispatch loops, traced without dynamic shapes.

Hugging Face's sparse MoE blocks (Mixtral, Qwen2-MoE and the models copied from them)
route each token to its top-k experts with a loop whose shapes depend on the data::

    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()   # 4.5x
    for expert_idx in expert_hit:                 # or: in range(self.num_experts) (4.4x)
        expert_layer = self.experts[expert_idx]
        idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
        current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
        current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
        final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))

``nonzero``, the one-argument ``torch.where`` and indexing a ModuleList with a tensor each
break the graph. The loop's iterable (or the ``nonzero`` that feeds it) becomes
``_eqrw_moe(lambda: <iterable>, final, hidden, mask, weights, experts, dim, dtype)``.
Eagerly it returns the iterable and the loop runs as written. Traced, it applies every
expert to every token, keeps each result only where the token is routed to that expert
(``torch.where``, so a non-finite output of an unrouted token cannot leak), adds the
contributions into ``final`` in place, expert by expert as the loop does, and returns an
empty tuple so the loop body does not run. The values are those of the loop up to the
rounding of the expert's matmuls on a different number of rows.

Cost: the experts' compute grows by ``num_experts / top_k``. The safe form does the dense
dispatch only when that factor is at most 4 (Mixtral: 8 experts, top 2) and otherwise
keeps the loop and its break; the unsafe form has no bound. Without a rewrite, Dynamo's
``capture_dynamic_output_shape_ops=True`` removes the ``nonzero``/``where`` breaks of the
``range`` loop (4.4x), but not the tensor index into the ModuleList of the 4.5x loop.
"""

from __future__ import annotations

import ast

from ..enums import Level
from ..pattern import dotted_name, same_tree
from . import Kind, KindContext, Proposal


class MoeDispatch(Kind):
    name = "moe_dispatch"
    node_types = (ast.Call,)
    options_schema = {"max_factor": ("4", "unbounded")}

    def tokens(self) -> frozenset[str]:
        return frozenset({"index_add_"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Call):  # node_types: only calls are offered
            return None
        parent = context.parents.get(node)
        loop: ast.For | None
        if isinstance(parent, ast.For) and parent.iter is node:
            if _is_name(node.func, "_eqrw_moe"):
                return None  # already rewritten
            loop = parent
        elif (isinstance(parent, ast.Assign) and parent.value is node
              and _is_nonzero(node)):
            loop = _loop_over(parent, context)
        else:
            return None
        if loop is None or loop.orelse or not isinstance(loop.target, ast.Name):
            return None
        bindings = _match_body(loop, context)
        if bindings is None:
            return None
        limit = "None" if self.options["max_factor"] == "unbounded" else self.options[
            "max_factor"]
        # The loop's operands lie outside the replaced node: spelled out (they are names,
        # dotted attributes or numbers, and mean the same at the iterable as in the body).
        operands = ", ".join(ast.unparse(bindings[k]) for k in (
            "final", "hidden", "mask", "weights", "experts", "dim", "dtype"))
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        call = "$f($$$a)" if node.args else "$f()"
        return Proposal(f"_eqrw_moe(lambda: {call}, {operands}, {limit})",
                        {"f": node.func, "a": list(node.args)}, Level.EXPRESSION,
                        frozenset({"_eqrw_moe"}))


def _is_nonzero(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == "nonzero" and not call.args
            and not call.keywords)


def _loop_over(assign: ast.Assign, context: KindContext) -> ast.For | None:
    """The ``for`` right after ``name = ....nonzero()`` that iterates ``name``, when the
    name is used nowhere else."""
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
        return None
    name = assign.targets[0].id
    block = context.parents.get(assign)
    body = next((getattr(block, f) for f in ("body", "orelse", "finalbody")
                 if assign in getattr(block, f, [])), None)
    if body is None:
        return None
    following = body[body.index(assign) + 1:]
    if not following or not isinstance(following[0], ast.For):
        return None
    loop = following[0]
    uses = [n for n in ast.walk(context.function) if isinstance(n, ast.Name) and n.id == name]
    if not (isinstance(loop.iter, ast.Name) and loop.iter.id == name and len(uses) == 2):
        return None
    return loop


def _assign(statement: ast.stmt, count: int) -> tuple[list[str], ast.expr] | None:
    """``(target names, value)`` of ``a = v`` (count 1) or ``a, b = v`` (count 2)."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    names = [target] if count == 1 else (
        target.elts if isinstance(target, ast.Tuple) else [])
    ids = [n.id for n in names if isinstance(n, ast.Name)]
    if len(names) != count or len(ids) != len(names):
        return None
    return ids, statement.value


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _match_body(loop: ast.For, context: KindContext) -> dict[str, ast.expr] | None:
    """Bindings for the helper when the loop body is the dispatch shown above."""
    body = loop.body
    if len(body) != 5 or not isinstance(loop.target, ast.Name):
        return None
    index = loop.target.id
    layer_stmt, where_stmt, state_stmt, out_stmt, add_stmt = body
    # expert_layer = self.experts[expert_idx]
    layer = _assign(layer_stmt, 1)
    if layer is None or not (isinstance(layer[1], ast.Subscript)
                             and _is_name(layer[1].slice, index)):
        return None
    experts = layer[1].value
    # idx, top_x = torch.where(expert_mask[expert_idx]) (or [...].squeeze(0))
    where = _assign(where_stmt, 2)
    if where is None or not (isinstance(where[1], ast.Call) and len(where[1].args) == 1
                             and not where[1].keywords
                             and context.facts.imports.resolve(where[1].func) == "torch.where"):
        return None
    selected = where[1].args[0]
    if (isinstance(selected, ast.Call) and isinstance(selected.func, ast.Attribute)
            and selected.func.attr == "squeeze" and len(selected.args) == 1
            and isinstance(selected.args[0], ast.Constant) and selected.args[0].value == 0):
        selected = selected.func.value
    if not (isinstance(selected, ast.Subscript) and _is_name(selected.slice, index)
            and isinstance(selected.value, ast.Name)):
        return None
    mask = selected.value
    slot, token = where[0]
    # current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
    state = _assign(state_stmt, 1)
    call = state[1] if state else None
    if state is None or not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "reshape" and len(call.args) == 2
            and _is_minus_one(call.args[0]) and isinstance(call.func.value, ast.Subscript)):
        return None
    gathered = call.func.value
    if not (isinstance(gathered.value, ast.Name) and isinstance(gathered.slice, ast.Tuple)
            and len(gathered.slice.elts) == 2 and _is_none(gathered.slice.elts[0])
            and _is_name(gathered.slice.elts[1], token)):
        return None
    hidden, dim = gathered.value, call.args[1]
    # current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
    out = _assign(out_stmt, 1)
    product = out[1] if out else None
    if out is None or not (isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult)
            and isinstance(product.left, ast.Call) and _is_name(product.left.func, layer[0][0])
            and len(product.left.args) == 1 and not product.left.keywords
            and _is_name(product.left.args[0], state[0][0])
            and isinstance(product.right, ast.Subscript)
            and isinstance(product.right.value, ast.Name)
            and isinstance(product.right.slice, ast.Tuple)
            and len(product.right.slice.elts) == 3
            and _is_name(product.right.slice.elts[0], token)
            and _is_name(product.right.slice.elts[1], slot)
            and _is_none(product.right.slice.elts[2])):
        return None
    weights = product.right.value
    # final_hidden_states.index_add_(0, top_x, current_hidden_states.to(dtype))
    add = add_stmt.value if isinstance(add_stmt, ast.Expr) else None
    if not (isinstance(add, ast.Call) and isinstance(add.func, ast.Attribute)
            and add.func.attr == "index_add_" and isinstance(add.func.value, ast.Name)
            and len(add.args) == 3 and not add.keywords
            and isinstance(add.args[0], ast.Constant) and add.args[0].value == 0
            and _is_name(add.args[1], token)):
        return None
    moved = add.args[2]
    if not (isinstance(moved, ast.Call) and isinstance(moved.func, ast.Attribute)
            and moved.func.attr == "to" and len(moved.args) == 1 and not moved.keywords
            and _is_name(moved.func.value, out[0][0])):
        return None
    final, dtype = add.func.value, moved.args[0]
    locals_of_loop = {index, layer[0][0], slot, token, state[0][0], out[0][0]}
    if not _only_inside(locals_of_loop, loop, context):
        return None
    if not all(_simple(n) for n in (experts, dim, dtype)) or len(
            {final.id, hidden.id, mask.id, weights.id}) != 4:
        return None
    if same_tree(final, hidden):
        return None
    return {"final": final, "hidden": hidden, "mask": mask, "weights": weights,
            "experts": experts, "dim": dim, "dtype": dtype}


def _is_minus_one(node: ast.AST) -> bool:
    return (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant) and node.operand.value == 1)


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _simple(node: ast.AST) -> bool:
    """A name, a dotted attribute or a number: evaluated twice, it means the same."""
    return dotted_name(node) is not None or (isinstance(node, ast.Constant)
                                             and isinstance(node.value, int))


def _only_inside(names: set[str], loop: ast.For, context: KindContext) -> bool:
    """The loop's own variables are not read after it: the dense path never binds them."""
    inside = {id(n) for n in ast.walk(loop)}
    return not any(isinstance(n, ast.Name) and n.id in names and id(n) not in inside
                   for n in ast.walk(context.function))
