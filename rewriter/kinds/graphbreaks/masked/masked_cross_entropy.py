"""A cross-entropy loss over the rows a mask selects, without a dynamic shape.

    shift_logits = logits[..., :-1, :][mask != 0].contiguous()
    shift_labels = labels[..., 1:][mask != 0].contiguous()
    ...
    loss_fct = nn.CrossEntropyLoss()
    loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
                  ->
    shift_logits = _eqrw_ce_logits(<logits>, <mask>) if D else <the original selection>
    shift_labels = _eqrw_ce_labels(<labels>, <mask>) if D else <the original selection>

(the LLaVA family's and Qwen2-Audio's language-model loss, transformers 4.4x-5.x). Each
selection has a data-dependent number of rows (a graph break). A mean (or sum) cross-entropy
with ``ignore_index=-100`` over the selected rows is the same loss over every row with the
labels of the rows left out set to -100: the same rows contribute, the mean divides by the
same count (the selected rows whose label is not -100), a sum adds the same terms. The logits
of the rows left out are set to 0 (``torch.where``), so a non-finite value there can reach
neither the loss nor, through the softmax's backward, the gradient: the gradient of every row
left out is exactly 0, as the original gives it. The loss is the same up to the order of the
reduction's additions.

``D`` is ``_eqrw_ce_dense(<logits>, <labels>, <mask>)``: traced, the three tensors, the mask
bool, of the labels' shape, which leads the logits' by all but their last axis (the classes).
Each statement asks it with its own spelling of the mask; the two spellings are the same mask
but for the device it is moved to (``.to(x.device)``), so they agree. Otherwise, and always
eagerly, the selections run as written, beside their tests, in their own frame.

Proven before rewriting (else nothing is changed):

* two assignments ``a = <logits>[<mask>]`` and ``b = <labels>[<mask>]`` (each optionally
  ``.contiguous()``), in the same block, with the same mask up to ``.to(<x>.device)``, the
  logits, labels and mask pure (a mask's ``.to(x.device)`` taken as the device move it is on
  a tensor; that the mask is a bool tensor is checked where the tests run);
* one call ``f(a.view(-1, a.size(-1)), b.view(-1))`` (``reshape``, ``a.shape[-1]`` or a
  config's vocabulary size as the width, a trailing ``.to(...)`` on ``b.view(-1)``; each
  argument directly or through a name bound and read once: ``flat_logits = ...``), ``f``
  bound once in the function to ``nn.CrossEntropyLoss()`` without arguments (mean over the
  rows, ``ignore_index=-100``);
* no load of ``a`` or ``b`` that the selection's binding reaches but the loss's (a selection
  may rebind its own source, ``a = a[mask]``, after reads of it that crop the mask: those
  come before it, outside any loop, or in the other branch of an ``if``).

Cost: the loss's log-softmax runs on every row instead of the selected ones (rows /
selected times its work), with no gather.
"""

from __future__ import annotations

import ast
import copy
from typing import cast

from ....syntax.enums import Level
from ....syntax.pattern import same_tree
from ... import Kind, KindContext, Proposal
from ...rowwise import is_minus_one, is_name
from .mask_scatter import _simple

_LOSSES = frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.modules.loss.CrossEntropyLoss"})


class MaskedCrossEntropy(Kind):
    """``a = logits[mask]``, ``b = labels[mask]``, ``CrossEntropyLoss()(a.view(...),
    b.view(-1))``."""

    name = "masked_cross_entropy"
    node_types = (ast.Assign,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"CrossEntropyLoss"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Assign):
            return None
        if _selection(node) is None or not context.function_mentions("CrossEntropyLoss"):
            return None
        pair = _pair(node, context)
        if pair is None:
            return None
        logits, labels = pair
        (logits_value, _), (labels_value, _) = _parts(logits), _parts(labels)
        selected, mask = _parts(node)
        other = labels if node is logits else logits
        dense = (f"_eqrw_ce_dense({ast.unparse(logits_value)}, {ast.unparse(labels_value)}, "
                 "$m)")
        helper = "_eqrw_ce_logits" if node is logits else "_eqrw_ce_labels"
        return Proposal(f"$t = {helper}($s, $m) if {dense} else $v",
                        {"t": node.targets[0], "s": selected, "m": mask, "v": node.value},
                        Level.STATEMENT, frozenset({"_eqrw_ce_dense", helper}),
                        requires=other)


def _parts(node: ast.Assign) -> tuple[ast.expr, ast.expr]:
    found = _selection(node)
    assert found is not None
    return found


def _selection(node: ast.Assign) -> tuple[ast.expr, ast.expr] | None:
    """``(selected, mask)`` of ``name = selected[mask]`` or ``name = selected[mask]
    .contiguous()``."""
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        return None
    value = node.value
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "contiguous" and not value.args and not value.keywords):
        value = value.func.value
    if not isinstance(value, ast.Subscript) or isinstance(value.slice, ast.Tuple | ast.Slice):
        return None
    return value.value, value.slice


def _pair(node: ast.Assign, context: KindContext) -> tuple[ast.Assign, ast.Assign] | None:
    """``(logits statement, labels statement)`` when ``node`` is one of a proven pair."""
    name = node.targets[0]
    assert isinstance(name, ast.Name)
    loss = _loss_call(name.id, context)
    if loss is None:
        return None
    flow, logits_name, labels_name = loss
    block = _block_of(node, context)
    if block is None:
        return None
    statements = {}
    for statement in block:
        if isinstance(statement, ast.Assign) and _selection(statement) is not None:
            target = statement.targets[0]
            assert isinstance(target, ast.Name)
            if target.id in (logits_name, labels_name):
                if target.id in statements:
                    return None
                statements[target.id] = statement
    if set(statements) != {logits_name, labels_name} or node not in statements.values():
        return None
    logits, labels = statements[logits_name], statements[labels_name]
    # Both tests read the selected values and their masks: a statement between the two that
    # rebinds a name they read could make the tests disagree (the selections themselves may:
    # ``shift_logits = shift_logits[mask]``, a rebinding both answers agree on).
    first, last = sorted((block.index(logits), block.index(labels)))
    read = {n.id for statement in (logits, labels) for n in ast.walk(statement.value)
            if isinstance(n, ast.Name)}
    if any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in read
           for statement in block[first + 1:last] for n in ast.walk(statement)):
        return None
    (logits_value, logits_mask), (labels_value, labels_mask) = _parts(logits), _parts(labels)
    # The masks are evaluated again by the tests: pure but for their device moves (each a
    # tensor's ``.to(x.device)``); that they are bool tensors is checked where the tests run.
    mask = _without_device_moves(logits_mask)
    if not (same_tree(mask, _without_device_moves(labels_mask))
            and all(context.is_pure(e) for e in (logits_value, labels_value, mask))):
        return None
    reads = {id(n) for part in (*flow, logits, labels) for n in ast.walk(part)}
    for selected, statement in ((logits_name, logits), (labels_name, labels)):
        if not _read_only_by(selected, statement, reads, context):
            return None
    return logits, labels


def _block_of(node: ast.stmt, context: KindContext) -> list[ast.stmt] | None:
    parent = context.parents.get(node)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and node in block:
            return block
    return None


def _loss_call(name: str, context: KindContext) -> tuple[list[ast.AST], str, str] | None:
    """The loss reading ``name`` as the logits or the labels: ``(flow, logits name, labels
    name)``, ``flow`` the call and the assignments of its flattened arguments, when it takes
    them through names (``flat = a.view(-1, w)``, then ``loss_fct(flat, ...)``)."""
    for node in context.walk():
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and len(node.args) == 2 and not node.keywords):
            continue
        flow: list[ast.AST] = [node]
        arguments = [_through_name(a, context, flow) for a in node.args]
        logits, labels = _flat_logits(arguments[0], context), _flat_labels(arguments[1])
        if logits is None or labels is None or name not in (logits, labels):
            continue
        bound = context.binders(node.func.id)
        assignments = context.assignments(node.func.id)
        if len(bound) != 1 or len(assignments) != 1:
            return None
        built = assignments[0].value
        if not (isinstance(built, ast.Call) and not built.args and not built.keywords
                and context.facts.imports.resolve(built.func) in _LOSSES):
            return None
        return flow, logits, labels
    return None


def _through_name(argument: ast.expr, context: KindContext, flow: list[ast.AST]) -> ast.expr:
    """The value of ``argument`` when it is a name bound once, by an assignment (added to
    ``flow``), and read only there; else ``argument`` itself."""
    if not isinstance(argument, ast.Name):
        return argument
    assignments = context.assignments(argument.id)
    loads = [n for n in context.walk() if isinstance(n, ast.Name) and n.id == argument.id
             and isinstance(n.ctx, ast.Load)]
    if len(assignments) != 1 or len(context.binders(argument.id)) != 1 or len(loads) != 1:
        return argument
    flow.append(assignments[0])
    return assignments[0].value


def _flat_logits(node: ast.expr, context: KindContext) -> str | None:
    """``a`` of ``a.view(-1, w)`` (``reshape``), ``w`` being ``a.size(-1)``, ``a.shape[-1]``
    or a pure attribute chain (the vocabulary size in a config: the logits' last axis
    wherever the original loss runs; of another width the loss raises in both forms)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("view", "reshape") and len(node.args) == 2
            and not node.keywords and isinstance(node.func.value, ast.Name)
            and is_minus_one(node.args[0])):
        return None
    name = node.func.value.id
    width = node.args[1]
    size = (isinstance(width, ast.Call) and isinstance(width.func, ast.Attribute)
            and width.func.attr == "size" and len(width.args) == 1 and not width.keywords
            and is_minus_one(width.args[0]) and is_name(width.func.value, name))
    shape = (isinstance(width, ast.Subscript) and isinstance(width.value, ast.Attribute)
             and width.value.attr == "shape" and is_name(width.value.value, name)
             and is_minus_one(width.slice))
    configured = isinstance(width, ast.Attribute) and _simple(width) and name not in {
        n.id for n in ast.walk(width) if isinstance(n, ast.Name)}
    return name if size or shape or configured else None


def _flat_labels(node: ast.expr) -> str | None:
    """``b`` of ``b.view(-1)`` (``reshape``), optionally followed by ``.to(...)``."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "to"):
        node = node.func.value
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("view", "reshape") and len(node.args) == 1
            and not node.keywords and is_minus_one(node.args[0])
            and isinstance(node.func.value, ast.Name)):
        return None
    return node.func.value.id


def _read_only_by(name: str, selection: ast.Assign, reads: set[int],
                  context: KindContext) -> bool:
    """Every load of ``name`` the selection's binding may reach lies in ``reads`` (the loss's
    flow and the two selection statements). A load is unreachable when it comes before the
    selection outside any loop around it (``shift_logits`` read to crop the mask before
    ``shift_logits = shift_logits[mask]``), or in the other branch of an ``if`` around it."""
    parents = context.parents
    looped = False
    branches: list[tuple[ast.If, str]] = []
    child: ast.AST = selection
    while (parent := parents.get(child)) is not None:
        looped = looped or isinstance(parent, ast.For | ast.While | ast.AsyncFor)
        if isinstance(parent, ast.If):
            branches.append((parent, "body" if child in parent.body else "orelse"))
        child = parent
    for node in context.walk():
        if not (isinstance(node, ast.Name) and node.id == name
                and isinstance(node.ctx, ast.Load)) or id(node) in reads:
            continue
        if not looped and (node.lineno, node.col_offset) < (selection.lineno,
                                                            selection.col_offset):
            continue
        if any(context.inside(node, getattr(branch, "orelse" if side == "body" else "body"))
               for branch, side in branches):
            continue
        return False
    return True


def _without_device_moves(mask: ast.expr) -> ast.expr:
    """``mask`` without its ``.to(<x>.device)`` calls (the same values on another device)."""

    class Strip(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            if (isinstance(node.func, ast.Attribute) and node.func.attr == "to"
                    and len(node.args) == 1 and not node.keywords
                    and isinstance(node.args[0], ast.Attribute)
                    and node.args[0].attr == "device"):
                return cast(ast.AST, self.visit(node.func.value))
            return self.generic_visit(node)

    return cast(ast.expr, Strip().visit(copy.deepcopy(mask)))
