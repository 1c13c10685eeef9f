"""Mixture-of-experts dispatch loops, traced without dynamic shapes.

Sparse mixture-of-experts blocks route each token to its top-k experts with a loop whose
shapes depend on the data. The kind recognises the computation, whatever the spelling of
its parts (transformers 4.4x, 4.5x and 5.x, Switch/NLLB, gpt-oss, GLM-4-MoE...)::

    hits = (mask.sum(dim=(-1, -2)) > 0).nonzero()     # or: for e in range(num_experts)
    for e in hits:                                     # (or .nonzero().squeeze(-1))
        e = e[0]                                       # or int(e.item()), or e used as is
        if e == sentinel: continue                     # optional tests on the expert index
        slot, token = torch.where(mask[e])             # or (token, slot), .squeeze(0), `_`
        rows = hidden[token]                           # any row-wise computation of
        out = expert(rows) * weights[token, slot, None]  # the gathered rows and weights
        final.index_add_(0, token, out.to(final.dtype))

``nonzero``, the one-argument ``torch.where`` and a tensor index into a ModuleList each
break the graph. Up to four small edits, each exact eagerly (its helper runs the original
expression); traced, they are right only together (the route without the keep would add
unrouted tokens), so they are proposed only when every edited line is a single line without
a comment, where the matcher refuses none of them:

* the ``nonzero`` becomes ``(<nonzero> if not C else _eqrw_moe_every(mask, rows))``;
* the loop iterates ``(_eqrw_moe_experts(mask) if D else _eqrw_moe_hit(mask, rows) if C
  else <hits>)`` (the real hits again when they were computed densely, under ``no_grad``,
  but the loop runs as written, with gradients);
* the route becomes ``_eqrw_moe_route(mask, e, axis) if D else torch.where(...)``;
* the added value becomes ``_eqrw_moe_keep(value, mask, e, token, axis, limit)``;

where ``C`` is ``_eqrw_moe_cheap(mask, axis, max_factor)`` (tracing, within the cost bound)
and ``D`` is ``_eqrw_moe_dense(mask, axis, limit)`` (also gradients off, or the training
rule): both false eagerly, and constants while tracing (shapes, grad mode), decided in the
loop's own frame so that a loop traced as written (beyond the cost bound) breaks exactly where
and as often as the original.

Traced, when the dense form costs at most ``max_factor`` times the routed compute
(``num_experts <= max_factor * top_k``), the loop visits every expert (as
``_eqrw_moe_row``, which answers ``e[0]`` and ``e.item()`` as a nonzero row does, where the
loop reads its rows so; as plain ints where it reads them as ints), the route selects
every token (``token = arange``, ``slot`` = the slot routing it there), the row-wise
computation runs on all rows, and ``torch.where`` keeps the routed tokens' values
before they are added: the sum of the loop, in the loop's order, up to the rounding of the
experts' matmuls on a different number of rows (a non-finite value of an unrouted token
cannot leak). When every expert on top_k times every token still costs at most
``max_factor`` times the routed compute (``num_experts <= max_factor``: tiny configs), the
route visits every (slot, token) pair in torch.where's order, so any routing is exact, a
token routed twice to one expert (a hash-routing table, DeepSeek-V4) included; otherwise
such a token (no top-k router routes one) fails an assertion instead of being counted once.

What is proven before rewriting: every statement between the route and the add is an
assignment of a row-wise expression (gathers by ``token``, elementwise operators, ``@``
by a non-row operand, last-axis ``chunk``/``split``/slices, smooth activations, linear
layers, and calls of the module's own experts and methods, which are taken to map each
row on its own, as MLP experts do), a test of the expert index or of the token count; no
other side effect; none of the loop's names read after it; a nonzero row read either only
as a row (``e[0]``, ``e.item()``) or only as an int (``int(e)``, the mask's subscript, a
module picked and called), so that one carrier answers every read on every torch release.

Cost: the experts' compute grows by ``num_experts / top_k``; the unsafe form has no bound.
Without a rewrite, Dynamo's ``capture_dynamic_output_shape_ops=True`` removes the
``nonzero``/``where`` breaks of the ``range`` loop, but not the tensor index of a
ModuleList of the 4.5x loop nor the data-dependent tests of the 5.x loop.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...syntax.enums import Level
from .. import Kind, KindContext, Proposal
from ..rowwise import LoopStatements, Rows, is_int, is_minus_one, is_name, unwraps


class MoeDispatch(Kind):
    name = "moe_dispatch"
    node_types = (ast.Call, ast.Name, ast.Subscript, ast.Assign, ast.Expr)
    options_schema = {"max_factor": ("4", "unbounded"),
                      "gradients": ("inference", "zero-for-unrouted")}

    def tokens(self) -> frozenset[str]:
        return frozenset({"index_add_"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        found = _role(node, context)
        if found is None or not isinstance(node, ast.expr | ast.stmt):
            return None
        role, loop = found
        dispatch = _analyse(loop, context)
        if isinstance(dispatch, str):
            if role == "add" and dispatch:  # one note per dispatch loop
                context.note(dispatch)
            return None
        limit = "None" if self.options["max_factor"] == "unbounded" else self.options[
            "max_factor"]
        training = self.options["gradients"] == "zero-for-unrouted"
        return dispatch.proposal(role, node, f"{limit}, {training}")


@dataclass
class _Hits:
    """The experts a loop iterates: ``value`` (``m.nonzero()``, maybe flattened), one row
    per expert (``rows``) or a flat list of indices."""

    value: ast.expr
    rows: bool


@dataclass
class _Dispatch:
    """A recognised dispatch loop: the parts its edits spell out."""

    loop: ast.For
    mask: ast.Name
    expert: ast.Name  # the expert index the route subscripts the mask with
    token: str
    axis: int  # 1: torch.where gives (slot, token); 0: (token, slot)
    route: ast.Assign
    add: ast.Expr
    hits: _Hits | None  # the nonzero that the loop iterates, if any
    extra: int = 0  # the mask's last rows that stand for no expert (one_hot's extra classes)
    spare: int = 0  # those of them the loop does not skip itself (no test of the index)
    wrapped: bool = True  # the loop reads its nonzero rows as rows (e[0]), not as ints

    def proposal(self, role: str, node: ast.expr | ast.stmt, limit: str) -> Proposal | None:
        """The edit of ``node`` (the loop's part ``role``); ``limit``: the helpers' last
        arguments (max_factor, training)."""
        # Names are spelled out: they stand in other statements than the edited one.
        mask, axis, expert = self.mask.id, self.axis, self.expert.id
        # Dense or not is decided in the loop's own frame (a constant while tracing), so
        # that a loop traced as written breaks where and as often as the original does.
        # The hits are often computed under no_grad, where the grad mode says nothing
        # about the loop: they are dense whenever the loop is cheap enough, and a loop
        # that then runs as written (gradients on) takes the real hits again.
        extra = f", extra={self.extra}" if self.extra else ""
        dense = f"_eqrw_moe_dense({mask}, {axis}, {limit}{extra})"
        cheap = f"_eqrw_moe_cheap({mask}, {axis}, {limit.split(',')[0]}{extra})"
        rows = self.hits.rows if self.hits is not None else False
        if role == "hits" and self.hits is not None and node is self.hits.value:
            return Proposal(f"($h if not {cheap} else _eqrw_moe_every({mask}, {rows}))",
                            {"h": node}, Level.EXPRESSION,
                            frozenset({"_eqrw_moe_cheap", "_eqrw_moe_every"}))
        if role == "iter" and self.hits is not None:
            spare = f", spare={self.spare}" if self.spare else ""
            spare += "" if self.wrapped else ", wrapped=False"
            return Proposal(f"(_eqrw_moe_experts({mask}{spare}) if {dense} else "
                            f"_eqrw_moe_hit({mask}, {rows}) if {cheap} else $i)",
                            {"i": self.loop.iter}, Level.EXPRESSION,
                            frozenset({"_eqrw_moe_dense", "_eqrw_moe_cheap", "_eqrw_moe_experts",
                                       "_eqrw_moe_hit"}))
        if role == "route" and node is self.route:
            target = self.route.targets[0]
            bound = f", {limit.split(',')[0]}{extra}"
            return Proposal(f"$t = _eqrw_moe_route({mask}, {expert}, {axis}{bound}) if {dense} "
                            "else $w",
                            {"t": target, "w": self.route.value}, Level.STATEMENT,
                            frozenset({"_eqrw_moe_dense", "_eqrw_moe_route"}))
        if role == "add" and node is self.add:
            call = self.add.value
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            return Proposal(f"$f.index_add_($d, $i, _eqrw_moe_keep($v, {mask}, {expert}, "
                            f"{self.token}, {axis}, {limit}{extra}))",
                            {"f": call.func.value, "d": call.args[0], "i": call.args[1],
                             "v": call.args[2]},
                            Level.STATEMENT, frozenset({"_eqrw_moe_keep"}))
        return None


def _role(node: ast.AST, context: KindContext) -> tuple[str, ast.For] | None:
    """Which part of which candidate loop ``node`` is: its iterable ("iter"), the nonzero
    that feeds it ("hits"), its route ("route") or its add ("add")."""
    parent = context.parents.get(node)
    if isinstance(parent, ast.For) and parent.iter is node:
        return "iter", parent
    if (isinstance(node, ast.Call) and isinstance(parent, ast.Assign)
            and _hits_form(node, context) is not None):
        loop = _loop_over(parent, context)
        return None if loop is None else ("hits", loop)
    if isinstance(node, ast.Assign) and _is_where(node.value, context):
        loop = _enclosing_loop(node, context)
        return None if loop is None else ("route", loop)
    if isinstance(node, ast.Expr) and _index_add(node) is not None:
        loop = _enclosing_loop(node, context)
        return None if loop is None else ("add", loop)
    return None


def _enclosing_loop(node: ast.AST, context: KindContext) -> ast.For | None:
    parent = context.parents.get(node)
    while parent is not None and not isinstance(parent, ast.FunctionDef | ast.Lambda):
        if isinstance(parent, ast.For):
            return parent
        parent = context.parents.get(parent)
    return None


def _hits_form(value: ast.expr, context: KindContext) -> _Hits | None:
    """``value`` as the experts of a loop: ``m.nonzero()`` (``as_tuple=False``,
    ``torch.nonzero(m)``): one row per expert; followed by ``.squeeze(-1)``/``.flatten()``
    /``.view(-1)``: a flat list."""
    flat = (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and not value.keywords and (
                (value.func.attr == "squeeze" and len(value.args) == 1
                 and (is_minus_one(value.args[0]) or is_int(value.args[0], 1)))
                or (value.func.attr == "flatten" and not value.args)
                or (value.func.attr in ("view", "reshape") and len(value.args) == 1
                    and is_minus_one(value.args[0]))))
    call = value.func.value if flat else value  # type: ignore[attr-defined]
    if not isinstance(call, ast.Call) or any(
            k.arg != "as_tuple" or not (isinstance(k.value, ast.Constant)
                                        and k.value.value is False) for k in call.keywords):
        return None
    method = (isinstance(call.func, ast.Attribute) and call.func.attr == "nonzero"
              and not call.args)
    function = (context.facts.imports.resolve(call.func) == "torch.nonzero"
                and len(call.args) == 1)
    return _Hits(value, not flat) if method or function else None


def _is_where(node: ast.AST, context: KindContext) -> bool:
    return (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and context.facts.imports.resolve(node.func) == "torch.where")


def _index_add(statement: ast.stmt) -> ast.Call | None:
    """``final.index_add_(0, token, value)`` of an expression statement, or None."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "index_add_" and isinstance(call.func.value, ast.Name)
            and len(call.args) == 3 and not call.keywords
            and isinstance(call.args[0], ast.Constant) and call.args[0].value == 0
            and isinstance(call.args[1], ast.Name)):
        return call
    return None


def _hits_name(loop: ast.For) -> str | None:
    """The name a loop iterates: ``for e in hits`` or ``for e in hits[:]``."""
    iterable = loop.iter
    if (isinstance(iterable, ast.Subscript) and isinstance(iterable.slice, ast.Slice)
            and iterable.slice.lower is iterable.slice.upper is iterable.slice.step is None):
        iterable = iterable.value
    return iterable.id if isinstance(iterable, ast.Name) else None


def _loop_over(assign: ast.Assign, context: KindContext) -> ast.For | None:
    """The loop iterating the name ``assign`` binds to a ``nonzero``, when the name is
    bound once and used by that loop alone."""
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
        return None
    name = assign.targets[0].id
    uses = [n for n in context.walk() if isinstance(n, ast.Name) and n.id == name]
    loops = [n for n in context.walk()
             if isinstance(n, ast.For) and _hits_name(n) == name]
    return loops[0] if len(uses) == 2 and len(loops) == 1 else None


def _analyse(loop: ast.For, context: KindContext) -> _Dispatch | str:
    """The dispatch ``loop`` performs, or why it cannot be rewritten."""
    if loop.orelse or not isinstance(loop.target, ast.Name):
        return "the expert loop has an `else` block or unpacks its target"
    index = loop.target.id
    routes = [n for n in ast.walk(loop) if isinstance(n, ast.Assign)
              and _is_where(n.value, context)]
    adds = [n for n in ast.walk(loop) if isinstance(n, ast.Expr) and _index_add(n)]
    if not routes or not adds:
        return ""  # not a dispatch loop: nothing to say
    if len(routes) != 1 or len(adds) != 1:
        return "the loop holds more than one `torch.where` route or `index_add_`"
    route, add = routes[0], adds[0]
    call = _index_add(add)
    assert call is not None
    pair = _route_targets(route)
    if pair is None:
        return "the route does not unpack `torch.where` into two names"
    token = call.args[1].id  # type: ignore[attr-defined]  # _index_add checked it
    if token not in pair:
        return "the `index_add_` does not add at the tokens of the route"
    axis = pair.index(token)
    hits = _hits(loop, context)
    if isinstance(hits, str):
        return hits
    routed = _routed_mask(route, loop)
    if routed is None:
        return "the route does not select one expert's slice of a mask (`mask[e]`)"
    mask, expert = routed
    reads = None if hits is None else _row_reads(loop, index, expert, mask.id)
    if hits is not None and reads is None:
        return ("the expert index is used where neither a Python int nor an int standing "
                "for a nonzero row (`e[0]`, `e.item()`) would behave like it")
    problem = _body_problem(loop, route, add, call, pair, context)
    if problem is not None:
        return problem
    edited: list[ast.expr | ast.stmt] = [route, add, loop.iter]
    if hits is not None:
        edited.append(hits.value)
    if not _plain_lines(edited, context):
        return ("a line the rewrite edits spans several lines or holds a comment (the "
                "edits must all apply or none)")
    bound = _bound_in(loop)
    if {mask.id, call.func.value.id} & bound:  # type: ignore[attr-defined]
        return "the mask or the result is reassigned inside the loop"
    if _read_after(bound | {index}, loop, context):
        return "a name the loop binds is read after it (the dense form binds other values)"
    extra = _extra_rows(mask.id, context)
    tested = any(isinstance(n, ast.If) and any(
        isinstance(m, ast.Name) and m.id in (index, expert.id) for m in ast.walk(n.test))
        for n in ast.walk(loop))
    return _Dispatch(loop, mask, expert, token, axis, route, add, hits, extra,
                     0 if tested else extra, reads == "wrapped")


def _extra_rows(mask: str, context: KindContext) -> int:
    """How many of the mask's last rows stand for no expert: ``c`` when the mask is
    ``one_hot(..., num_classes=n + c)``. A loop that tests the expert index (Mixtral's
    ``if e == self.num_experts: continue``) skips them itself; without the test, visiting
    one would run an expert that does not exist. Either way they cost no compute."""
    for node in context.walk():
        if isinstance(node, ast.Assign) and any(is_name(t, mask) for t in node.targets):
            for call in ast.walk(node.value):
                if isinstance(call, ast.Call) and context.facts.imports.resolve(
                        call.func) == "torch.nn.functional.one_hot":
                    classes = call.args[1] if len(call.args) > 1 else next(
                        (k.value for k in call.keywords if k.arg == "num_classes"), None)
                    if (isinstance(classes, ast.BinOp) and isinstance(classes.op, ast.Add)
                            and isinstance(classes.right, ast.Constant)
                            and type(classes.right.value) is int and classes.right.value > 0):
                        return classes.right.value
    return 0


def _plain_lines(nodes: list[ast.expr | ast.stmt], context: KindContext) -> bool:
    """Every node on one line without a ``#``: then no comment or ``# eqrewrite: ignore``
    can make the matcher refuse one of the loop's edits while it applies the others (the
    route without the add would add unrouted tokens)."""
    source = context.facts.text.source
    if source is None:
        return False
    lines = source.splitlines()
    return all(node.lineno == node.end_lineno and "#" not in lines[node.lineno - 1]
               for node in nodes)


def _route_targets(route: ast.Assign) -> tuple[str, str] | None:
    target = route.targets[0] if len(route.targets) == 1 else None
    if not (isinstance(target, ast.Tuple) and len(target.elts) == 2
            and all(isinstance(n, ast.Name) for n in target.elts)):
        return None
    first, second = (n.id for n in target.elts)  # type: ignore[attr-defined]
    return (first, second) if first != second else None


def _hits(loop: ast.For, context: KindContext) -> _Hits | None | str:
    """The ``nonzero`` the loop iterates (None for a ``range`` loop), or why not."""
    iterable = loop.iter
    if (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "range" and context.facts.imports.resolve(
                iterable.func) is None):
        return None
    name = _hits_name(loop)
    if name is None:
        return "the loop iterates neither `range(...)` nor a name bound to a `nonzero()`"
    assigns = [n for n in context.walk() if isinstance(n, ast.Assign)
               and len(n.targets) == 1 and is_name(n.targets[0], name)]
    hits = _hits_form(assigns[0].value, context) if len(assigns) == 1 else None
    if hits is None or _loop_over(assigns[0], context) is not loop:
        return "the loop's experts are not the `nonzero()` of a name used by the loop alone"
    if not _reduces_to_experts(hits.value):
        return "the `nonzero()` is not of a reduction of the mask over its last two axes"
    return hits


def _reduces_to_experts(hits: ast.expr) -> bool:
    """``(m.sum(dim=(-1, -2)) > 0).nonzero()`` and the like: the hits are experts."""
    axes = {(-1, -2), (-2, -1), (1, 2), (2, 1)}
    for node in ast.walk(hits):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in ("sum", "any", "amax", "count_nonzero")):
            dims = [k.value for k in node.keywords if k.arg == "dim"] + node.args[:1]
            if len(dims) == 1 and _constant_tuple(dims[0]) in axes:
                return True
    return False


def _constant_tuple(node: ast.expr) -> tuple[int, ...] | None:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    return value if isinstance(value, tuple) and all(isinstance(v, int) for v in value) else None


def _routed_mask(route: ast.Assign, loop: ast.For) -> tuple[ast.Name, ast.Name] | None:
    """``(mask, e)`` of the route's ``torch.where(mask[e])`` (or ``mask[e].squeeze(0)``, or
    a name bound to ``mask[e]`` in the loop and read by the route alone)."""
    selected = route.value.args[0]  # type: ignore[attr-defined]
    if isinstance(selected, ast.Name):
        aliases = [n for n in ast.walk(loop) if isinstance(n, ast.Assign)
                   and len(n.targets) == 1 and is_name(n.targets[0], selected.id)]
        uses = [n for n in ast.walk(loop) if is_name(n, selected.id)]
        if len(aliases) != 1 or len(uses) != 2:
            return None
        selected = aliases[0].value
    if (isinstance(selected, ast.Call) and isinstance(selected.func, ast.Attribute)
            and selected.func.attr == "squeeze" and len(selected.args) == 1
            and not selected.keywords and isinstance(selected.args[0], ast.Constant)
            and selected.args[0].value == 0):
        selected = selected.func.value
    if (isinstance(selected, ast.Subscript) and isinstance(selected.value, ast.Name)
            and isinstance(selected.slice, ast.Name)):
        return selected.value, selected.slice
    return None


def _row_reads(loop: ast.For, index: str, expert: ast.Name, mask: str) -> str | None:
    """How the loop reads each nonzero row (``index``), when the dense loop's experts can
    answer alike: ``"wrapped"`` when only ``e[0]``/``e.item()`` (maybe in ``int(...)``)
    read it (``_eqrw_moe_row`` answers), ``"plain"`` when only ``int(e)``, the mask's
    subscript in the route, or a module picked and then called do (a plain int answers),
    None otherwise (mixed reads included: no one carrier traces on every release). Reads
    may unwrap into a name first; the route (whose mask subscript either answers) must use
    ``e`` or such a name."""
    first = loop.body[0]
    if (isinstance(first, ast.Assign) and len(first.targets) == 1
            and is_name(first.targets[0], index) and unwraps(first.value, loop)):
        # e = e[0] first: every later read is of an int (a 0-d tensor eagerly).
        return "wrapped" if _wraps(first.value) else "plain"
    parents = {child: parent for parent in ast.walk(loop)
               for child in ast.iter_child_nodes(parent)}
    unwrapped = {index}
    forms = set()
    for node in ast.walk(loop):
        if not is_name(node, index) or node is loop.target:
            continue
        read = _read_of(node, parents, loop, mask)
        if read is None:
            return None
        if read[0] is not None:
            forms.add(read[0])
        if read[1] is not None:
            unwrapped.add(read[1])
    if expert.id not in unwrapped or len(forms) > 1:
        return None
    return "wrapped" if forms == {True} else "plain"


def _wraps(value: ast.expr) -> bool:
    """Whether an unwrapping (``unwraps``) reads the row as a row: ``e[0]``, ``e.item()``
    (maybe in ``int(...)``), not ``int(e)``."""
    if isinstance(value, ast.Call) and is_name(value.func, "int"):
        value = value.args[0]
    return not isinstance(value, ast.Name)


def _read_of(node: ast.AST, parents: dict[ast.AST, ast.AST], loop: ast.For, mask: str
             ) -> tuple[bool | None, str | None] | None:
    """How the loop reads a nonzero row: whether as a row (``e[0]``, ``e.item()``: True),
    as an int (False) or either (None: the route's mask subscript), and the name it is
    unwrapped into (``d = int(e.item())``); None for a read no carrier answers alike."""
    holder = parents.get(node)
    value: ast.AST = node
    if isinstance(holder, ast.Subscript) and holder.slice is node:
        if is_name(holder.value, mask):
            return None, None  # mask[e]: the route, replaced (its helper takes either)
        user = parents.get(holder)
        if isinstance(user, ast.Call) and user.func is holder:
            return False, None  # self.experts[e](x)
        return (False, None) if (isinstance(user, ast.Assign) and len(user.targets) == 1
                                 and isinstance(user.targets[0], ast.Name)
                                 and _only_called(user.targets[0].id, loop, parents)) else None
    if isinstance(holder, ast.Subscript) and is_int(holder.slice, 0):
        value, wrapped = holder, True  # e[0]
    elif (isinstance(holder, ast.Attribute) and holder.attr == "item"
          and isinstance(parents.get(holder), ast.Call) and not parents[holder].args):  # type: ignore[attr-defined]
        value, wrapped = parents[holder], True  # e.item()
    elif not (isinstance(holder, ast.Call) and is_name(holder.func, "int")
              and holder.args == [node]):
        return None
    else:
        value, wrapped = holder, False  # int(e)
    outer = parents.get(value)
    if (isinstance(outer, ast.Call) and is_name(outer.func, "int")
            and outer.args == [value]):
        value, outer = outer, parents.get(outer)  # int(e.item())
    if (isinstance(outer, ast.Assign) and len(outer.targets) == 1
            and isinstance(outer.targets[0], ast.Name)):
        return wrapped, outer.targets[0].id
    return wrapped, None


def _only_called(name: str, loop: ast.For, parents: dict[ast.AST, ast.AST]) -> bool:
    for node in ast.walk(loop):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            user = parents.get(node)
            if not (isinstance(user, ast.Call) and user.func is node):
                return False
    return True


def _body_problem(loop: ast.For, route: ast.Assign, add: ast.Expr, call: ast.Call,
                  pair: tuple[str, str], context: KindContext) -> str | None:
    """Why the statements of ``loop`` are not a row-wise dispatch, or None."""
    rows = Rows(set(pair), context)
    checker = LoopStatements(loop, route, add, rows)
    problem = checker.block(loop.body)
    if problem is None and rows.kind(call.args[2]) is None:
        problem = "the value added is not a row-wise expression of the routed rows"
    return problem


def _bound_in(loop: ast.For) -> set[str]:
    return {n.id for n in ast.walk(loop) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def _read_after(names: set[str], loop: ast.For, context: KindContext) -> bool:
    inside = {id(n) for n in ast.walk(loop)}
    return any(isinstance(n, ast.Name) and n.id in names and id(n) not in inside
               and isinstance(n.ctx, ast.Load) and n.lineno > loop.lineno
               for n in context.walk())


