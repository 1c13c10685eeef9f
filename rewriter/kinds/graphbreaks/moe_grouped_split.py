"""Grouped mixture-of-experts splits (JetMoE, GraniteMoE): the counts kept as a tensor.

One concern: the kind ``moe_grouped_split``, its three tied edits and the proof that they
hold (router, split and merge found across the router's file), all of which serve that one
rewrite.

JetMoE (transformers 4.4x to 5.x), GraniteMoE, GraniteMoeShared and GraniteMoeHybrid route
each token's top-k copies, sorted by expert, through experts that split them by count::

    class TopKGating(nn.Module):                       # the router
        def forward(self, hidden_states):
            ...
            expert_size = gates.long().sum(0)
            expert_size = expert_size.tolist()         # "Data dependent operator": a break
            ...
            return index_sorted_experts, batch_index, batch_gates, expert_size, logits

    class ParallelExperts(nn.Module):                  # the experts
        def forward(self, inputs, expert_size):
            input_list = inputs.split(expert_size, dim=0)
            output_list = []
            for i in range(self.num_experts):
                output_list.append(F.linear(input_list[i], self.weight[i]))
            results = torch.cat(output_list, dim=0)
            return results

Three one-line edits, each the original expression eagerly:

* the router's ``N = C.tolist()`` becomes ``N = _eqrw_moe_counts(C) if
  _eqrw_moe_keep_counts(C, 4, False) else C.tolist()``: traced, with gradients off and
  ``num_experts <= 4``, the counts stay a tensor (in a carrier object);
* the experts' split becomes ``_eqrw_moe_grouped(inputs, N, <the loop's bound>, 4, False)
  if isinstance(N, _eqrw_moe_counts) else <the split>``: with a carrier, every chunk is every
  row (``_eqrw_moe_groups``), or, when the dense form does not hold there (gradients on, a
  loop bound other than the number of counts), the original split of ``counts.tolist()``;
* the ``torch.cat`` becomes ``_eqrw_moe_merge(output_list, input_list) if
  isinstance(input_list, _eqrw_moe_groups) else <the cat>``: each row takes the value the
  expert it belongs to computed for it (rows ``[end[i-1], end[i])`` are expert ``i``'s), by
  ``torch.where`` in the loop's order.

Eagerly nothing changes (``_eqrw_compiling()`` is false, so no carrier exists and both
``isinstance`` tests fail). Traced within the bound, each expert runs on every row: the
rows are already the top-k copies of the tokens, so that is ``num_experts`` times the
routed compute (hence ``num_experts <= 4``, the 4x of ``moe-dense-dispatch``), and each row
is computed in a matmul over all rows instead of its chunk: the last bits may differ.

What is proven before rewriting, in the module that defines the router:

* the experts' ``forward`` is exactly the split (by its parameter, read nowhere else), an
  empty list, a loop over ``range(self.<attr>)`` (or an int) whose body appends one
  row-wise expression of ``input_list[i]`` (as ``moe-dense-dispatch`` reads row-wise), and
  the ``torch.cat`` of the list along axis 0; the tuple, the list and the index are read
  nowhere else;
* the router's counts are read after the ``.tolist()`` only where the value can be followed
  to the experts' split: through locals, tuple elements, ``return``, the unpacking of a call
  of the router (``self.<attr>(...)``) or of a method of a module held in ``self.<attr>``,
  and arguments of such methods; every module involved is built only as ``self.<attr> =
  Class(...)`` in this module, every ``self.<attr>`` holding it is only called, and its class
  is named elsewhere only in ``isinstance`` or ``OutputRecorder(Class, index=k)`` (which
  records another element of the output);
* the three edits are tied (``requires``): none lands without the others.

Not covered by the proof: code outside this module that calls the router itself and reads
the counts while traced (the carrier then answers iteration, ``len``, indexing and ``repr``
with ``counts.tolist()``, the original's break and values, but it is not a ``list``).
"""

from __future__ import annotations

import ast
import copy
import weakref
from dataclasses import dataclass

from ...syntax.enums import Level
from .. import Kind, KindContext, Proposal
from ..rowwise import Rows, is_name

_MAX_FACTOR = "4"


class MoeGroupedSplit(Kind):
    name = "moe_grouped_split"
    node_types = (ast.Assign,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"tolist"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Assign):
            return None
        module = _module_proof(context)
        if module is None:
            return None
        limit = f"{_MAX_FACTOR}, False"
        source = module.sources.get(node)
        if source is not None:
            experts, reason = source
            if experts is None:
                context.note(reason)
                return None
            value = node.value
            assert isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            counts = value.func.value
            assert isinstance(counts, ast.Name)  # names are spelled out: bindings may not nest
            return Proposal(f"$t = _eqrw_moe_counts({counts.id}) if _eqrw_moe_keep_counts("
                            f"{counts.id}, {limit}) else $v", {"t": node.targets[0], "v": value},
                            Level.STATEMENT,
                            frozenset({"_eqrw_moe_counts", "_eqrw_moe_keep_counts"}),
                            requires=experts.split)
        for experts in module.experts:
            if node is experts.split:
                sizes = experts.sizes.id
                return Proposal(
                    f"$t = _eqrw_moe_grouped({experts.inputs.id}, {sizes}, "
                    f"{ast.unparse(experts.bound)}, {limit}) if isinstance({sizes}, "
                    "_eqrw_moe_counts) else $v",
                    {"t": node.targets[0], "v": node.value}, Level.STATEMENT,
                    frozenset({"_eqrw_moe_grouped", "_eqrw_moe_counts"}), requires=experts.cat)
            if node is experts.cat:
                return Proposal(
                    f"$t = _eqrw_moe_merge({experts.outputs.id}, {experts.chunks}) if "
                    f"isinstance({experts.chunks}, _eqrw_moe_groups) else $v",
                    {"t": node.targets[0], "v": node.value},
                    Level.STATEMENT, frozenset({"_eqrw_moe_merge", "_eqrw_moe_groups"}),
                    requires=experts.split)
        return None


@dataclass
class _Experts:
    """A proven grouped experts ``forward``: the statements its edits replace."""

    function: ast.FunctionDef
    split: ast.Assign
    cat: ast.Assign
    inputs: ast.Name
    sizes: ast.Name
    parameter: int  # the position of the sizes among forward's parameters (self is 0)
    bound: ast.expr  # the loop's range(...) argument
    chunks: str  # the name holding the split's chunks
    outputs: ast.Name


@dataclass
class _Module:
    """What a module's proof found: each router ``.tolist()`` statement with the experts its
    counts reach (or why it cannot be rewritten), and the experts fed by a proven router."""

    sources: dict[ast.AST, tuple[_Experts | None, str]]
    experts: list[_Experts]


_PROOFS: weakref.WeakKeyDictionary[ast.AST, _Module] = weakref.WeakKeyDictionary()


def _module_proof(context: KindContext) -> _Module | None:
    tree = context.facts.tree
    found = _PROOFS.get(tree)
    if found is None:
        found = _PROOFS[tree] = _Flow(tree, context).prove()
    return found


class _Failed(Exception):
    """The counts reach a place the proof cannot follow (the message says which)."""


class _Flow:
    """Follows a router's counts through the module (see the module docstring)."""

    def __init__(self, tree: ast.Module, context: KindContext):
        self.tree, self.context = tree, context
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        self.experts_of: dict[str, _Experts | None] = {}
        self.sinks: set[str] = set()  # the experts classes the counts reach
        self.seen: set[tuple[int, str, tuple[int, ...]]] = set()  # names followed

    # -- the module's classes and the modules they hold ------------------------------------

    def methods(self, cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
        return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}

    def owner(self, node: ast.AST) -> tuple[ast.ClassDef, ast.FunctionDef] | None:
        """The class and method (directly in a module-level class) holding ``node``."""
        function = None
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                if function is not None:
                    return None  # nested functions: not followed
                function = node
            elif isinstance(node, ast.ClassDef):
                if isinstance(function, ast.FunctionDef) and node.name in self.classes and (
                        self.classes[node.name] is node):
                    return node, function
                return None
        return None

    def held(self, cls: ast.ClassDef, attribute: str) -> str | None:
        """The module-level class whose instance ``self.<attribute>`` holds in ``cls`` (the
        one store ``self.<attribute> = Class(...)`` of its methods, else of its bases in
        this module); None when unknown."""
        seen = 0
        for node in ast.walk(cls):
            if (isinstance(node, ast.Attribute) and node.attr == attribute
                    and isinstance(node.ctx, ast.Store | ast.Del)):
                seen += 1
                store = self.parents.get(node)
                if not (is_name(node.value, "self") and isinstance(store, ast.Assign)
                        and store.targets == [node] and isinstance(store.value, ast.Call)
                        and isinstance(store.value.func, ast.Name)
                        and store.value.func.id in self.classes):
                    return None
                held = store.value.func.id
        if seen == 1:
            return held
        if seen or len(cls.bases) != 1:
            return None
        base = cls.bases[0]
        if isinstance(base, ast.Name) and base.id in self.classes:
            return self.held(self.classes[base.id], attribute)
        return None

    def holders(self, name: str, recorded: int | None) -> list[tuple[ast.ClassDef, str]]:
        """The (class, attribute) pairs holding an instance of ``name``, after checking
        that the class is named nowhere else but in ``isinstance`` and ``OutputRecorder``
        (of another output element than ``recorded``, the counts' place in the output)."""
        found = []
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            call = self.parents.get(node)
            store = self.parents.get(call) if call is not None else None
            if (isinstance(call, ast.Call) and call.func is node and isinstance(store, ast.Assign)
                    and len(store.targets) == 1 and isinstance(store.targets[0], ast.Attribute)
                    and is_name(store.targets[0].value, "self")):
                owner = self.owner(store)
                if owner is None:
                    raise _Failed(f"`{name}` is built outside a method")
                found.append((owner[0], store.targets[0].attr))
            elif not (self._in_isinstance(node) or _records_other(
                    _recorder_index(call, node), recorded)):
                raise _Failed(f"`{name}` is used otherwise than built into `self.<attr>`")
        return found

    def _in_isinstance(self, node: ast.AST) -> bool:
        parent = self.parents.get(node)
        while isinstance(parent, ast.Tuple | ast.BinOp):
            node, parent = parent, self.parents.get(parent)
        return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                and parent.func.id == "isinstance" and len(parent.args) == 2
                and parent.args[1] is node)

    # -- the experts ------------------------------------------------------------------------

    def experts(self, name: str) -> _Experts | None:
        if name not in self.experts_of:
            cls = self.classes.get(name)
            forward = self.methods(cls).get("forward") if cls is not None else None
            self.experts_of[name] = (None if forward is None
                                     else _experts_forward(forward, self.context))
        return self.experts_of[name]

    # -- following the counts ---------------------------------------------------------------

    def prove(self) -> _Module:
        sources: dict[ast.AST, tuple[_Experts | None, str]] = {}
        for cls in self.classes.values():
            forward = self.methods(cls).get("forward")
            if forward is None:
                continue
            for statement in forward.body:
                counts = _tolist_assign(statement)
                if counts is None:
                    continue
                self.sinks, self.seen = set(), set()
                try:
                    self.follow_name(cls, forward, counts.id, (), statement)
                    if len(self.sinks) != 1:
                        raise _Failed("the counts reach no grouped experts' split" if not
                                      self.sinks else "the counts reach two experts classes")
                    experts = self.experts(next(iter(self.sinks)))
                    sources[statement] = (experts, "")
                except _Failed as failed:
                    sources[statement] = (None, f"moe grouped split: {failed}")
        proven = {id(e) for e, _ in sources.values() if e is not None}
        return _Module(sources, [e for e in self.experts_of.values()
                                 if e is not None and id(e) in proven])

    def follow_name(self, cls: ast.ClassDef, function: ast.FunctionDef, name: str,
                    path: tuple[int, ...], binding: ast.stmt | None) -> None:
        """``name``, bound by ``binding`` (a statement of ``function``'s body; None: a
        parameter), holds the counts at ``path`` (tuple indices): every later read of it
        must lead to the experts' split."""
        key = (id(function), name, path)
        if key in self.seen:
            return
        self.seen.add(key)
        if binding is not None and binding not in function.body:
            raise _Failed(f"`{name}` is bound inside a block")
        after = (0, 0) if binding is None else (binding.end_lineno, binding.end_col_offset)
        for node in ast.walk(function):
            if isinstance(node, ast.arg) and node.arg == name and binding is not None:
                raise _Failed(f"`{name}` is also a parameter")
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            later = (node.lineno, node.col_offset) >= after
            if isinstance(node.ctx, ast.Load):
                if later:
                    self.use(cls, function, node, path)
            elif binding is None or (later and not _binds_in(node, binding)):
                raise _Failed(f"`{name}` is bound again")

    def use(self, cls: ast.ClassDef, function: ast.FunctionDef, node: ast.expr,
            path: tuple[int, ...]) -> None:
        parent = self.parents.get(node)
        if isinstance(parent, ast.Call) and node is not parent.func:
            self.argument(cls, parent, node, path)
            return
        if isinstance(parent, ast.Tuple) and not any(
                isinstance(e, ast.Starred) for e in parent.elts):
            index = parent.elts.index(node)
            holder = self.parents.get(parent)
            if isinstance(holder, ast.Return):
                self.follow_return(cls, function, (index, *path))
                return
            target = _single_name_target(holder, parent)
            if target is not None:
                self.follow_name(cls, function, target, (index, *path), holder)  # type: ignore[arg-type]
                return
        if isinstance(parent, ast.Return):
            self.follow_return(cls, function, path)
            return
        if isinstance(parent, ast.Assign) and parent.value is node:
            self.unpack(cls, function, parent, path)
            return
        raise _Failed(f"the counts are read in `{ast.unparse(parent or node)[:60]}`")

    def unpack(self, cls: ast.ClassDef, function: ast.FunctionDef, assign: ast.Assign,
               path: tuple[int, ...]) -> None:
        if len(assign.targets) != 1:
            raise _Failed("the counts are assigned to several targets")
        target = assign.targets[0]
        if isinstance(target, ast.Name):
            self.follow_name(cls, function, target.id, path, assign)
        elif (isinstance(target, ast.Tuple) and path and path[0] < len(target.elts)
              and all(isinstance(e, ast.Name) for e in target.elts)):
            self.follow_name(cls, function, target.elts[path[0]].id, path[1:], assign)  # type: ignore[attr-defined]
        else:
            raise _Failed(f"`{ast.unparse(assign)[:60]}` unpacks the counts otherwise")

    def argument(self, cls: ast.ClassDef, call: ast.Call, node: ast.expr,
                 path: tuple[int, ...]) -> None:
        """The counts passed to ``self.<attr>(...)`` (the experts, or a module's forward)
        or ``self.<attr>.<method>(...)``."""
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            raise _Failed("the counts are passed among unpacked arguments")
        func = call.func
        method = "forward"
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute):
            method, func = func.attr, func.value
        if not (isinstance(func, ast.Attribute) and is_name(func.value, "self")):
            raise _Failed(f"the counts are passed to `{ast.unparse(call.func)[:40]}`")
        held = self.held(cls, func.attr)
        target = self.classes.get(held) if held is not None else None
        function = self.methods(target).get(method) if target is not None else None
        if function is None or function.args.vararg or function.args.kwarg:
            raise _Failed(f"the counts are passed to `{ast.unparse(call.func)[:40]}`, "
                          "not a method of a module of this file")
        parameters = [a.arg for a in function.args.posonlyargs + function.args.args]
        if node in call.args:
            position = call.args.index(node) + 1
            if position >= len(parameters):
                raise _Failed("the counts are passed past the parameters")
        else:
            keyword = next(k for k in call.keywords if k.value is node).arg
            if keyword not in parameters[1:]:
                raise _Failed("the counts are passed as an unknown keyword")
            position = parameters.index(keyword)
        experts = self.experts(held) if method == "forward" and not path else None  # type: ignore[arg-type]
        if experts is not None and position == experts.parameter:
            self.sinks.add(held)  # type: ignore[arg-type]
            return
        assert target is not None
        self.follow_name(target, function, parameters[position], path, None)

    def follow_return(self, cls: ast.ClassDef, function: ast.FunctionDef,
                      path: tuple[int, ...]) -> None:
        """``cls.<function>`` returns the counts at ``path``: follow every call of it."""
        # OutputRecorder hooks read element k of a module's output (forward's): -1 stands
        # for "any" (the counts are the whole output), None for "none" (another method).
        recorded = None if function.name != "forward" else path[0] if path else -1
        for _, attribute in self.holders(cls.name, recorded):
            for node in ast.walk(self.tree):
                if not (isinstance(node, ast.Attribute) and node.attr == attribute
                        and isinstance(node.ctx, ast.Load)):
                    continue
                owner = self.owner(node)
                if owner is None or not is_name(node.value, "self"):
                    raise _Failed(f"`.{attribute}` is read outside the module's methods")
                if self.held(owner[0], attribute) != cls.name:
                    if self.held(owner[0], attribute) is None:
                        raise _Failed(f"`self.{attribute}` may hold `{cls.name}`")
                    continue
                self.call_site(owner, node, function.name, path)

    def call_site(self, owner: tuple[ast.ClassDef, ast.FunctionDef], node: ast.Attribute,
                  method: str, path: tuple[int, ...]) -> None:
        parent = self.parents.get(node)
        if isinstance(parent, ast.Attribute) and isinstance(parent.ctx, ast.Load):
            if parent.attr != method:  # another method of the module
                if isinstance(self.parents.get(parent), ast.Call) and (
                        self.parents[parent].func is parent):  # type: ignore[attr-defined]
                    return
                raise _Failed(f"`{ast.unparse(parent)[:40]}` is read, not called")
            call = self.parents.get(parent)
            func: ast.expr = parent
        else:
            if method != "forward":
                if isinstance(parent, ast.Call) and parent.func is node:
                    return  # the module's forward: not what returns the counts
                raise _Failed(f"`{ast.unparse(node)}` is read, not called")
            call, func = parent, node
        if not (isinstance(call, ast.Call) and call.func is func):
            raise _Failed(f"`{ast.unparse(func)[:40]}` is read, not called")
        statement = self.parents.get(call)
        if isinstance(statement, ast.Expr):
            return  # the result is dropped
        if not (isinstance(statement, ast.Assign) and statement.value is call):
            raise _Failed(f"the result of `{ast.unparse(call)[:40]}` is not assigned")
        self.unpack(owner[0], owner[1], statement, path)


def _binds_in(node: ast.Name, statement: ast.stmt) -> bool:
    return any(n is node for n in ast.walk(statement))


def _records_other(index: int | None, recorded: int | None) -> bool:
    """Whether an ``OutputRecorder(..., index=index)`` reads no counts (``recorded``: their
    element of the output, -1 for the whole output, None when not the output)."""
    return index is not None and recorded != -1 and index != recorded


def _single_name_target(holder: ast.AST | None, value: ast.expr) -> str | None:
    if (isinstance(holder, ast.Assign) and holder.value is value and len(holder.targets) == 1
            and isinstance(holder.targets[0], ast.Name)):
        return holder.targets[0].id
    return None


def _recorder_index(call: ast.AST | None, node: ast.AST) -> int | None:
    """``k`` of ``OutputRecorder(Class, index=k)`` (transformers: records element ``k`` of
    each output of the modules of that class)."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name | ast.Attribute)
            and (call.func.id if isinstance(call.func, ast.Name) else call.func.attr)
            == "OutputRecorder" and call.args[:1] == [node]):
        return None
    index = next((k.value for k in call.keywords if k.arg == "index"), None)
    if isinstance(index, ast.Constant) and type(index.value) is int:
        return index.value
    return None


def _tolist_assign(statement: ast.stmt) -> ast.Name | None:
    """``N = C.tolist()`` (the receiver a name): the counts' name."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return None
    value = statement.value
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "tolist" and not value.args and not value.keywords
            and isinstance(value.func.value, ast.Name)):
        return statement.targets[0]
    return None


def _experts_forward(function: ast.FunctionDef, context: KindContext) -> _Experts | None:
    """``function`` as a grouped experts' ``forward`` (see the module docstring), or None."""
    arguments = function.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        return None
    parameters = [a.arg for a in arguments.posonlyargs + arguments.args]
    body = [s for s in function.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    split = next((s for s in body if _split_of(s, context) is not None), None)
    loop = next((s for s in body if isinstance(s, ast.For)), None)
    cat = next((s for s in body if _cat_of(s, context) is not None), None)
    if not (isinstance(split, ast.Assign) and isinstance(loop, ast.For)
            and isinstance(cat, ast.Assign) and isinstance(split.targets[0], ast.Name)):
        return None
    inputs, sizes = _split_of(split, context)  # type: ignore[misc]
    if not (body.index(split) < body.index(loop) < body.index(cat)) or sizes.id not in (
            parameters[1:]):
        return None
    chunks = split.targets[0].id
    outputs = _cat_of(cat, context)
    assert outputs is not None
    # The loop: for i in range(<bound>): outputs.append(<row-wise of chunks[i]>)
    if not (isinstance(loop.target, ast.Name) and not loop.orelse and len(loop.body) == 1
            and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name)
            and loop.iter.func.id == "range" and len(loop.iter.args) == 1
            and not loop.iter.keywords and context.facts.imports.resolve(loop.iter.func) is None):
        return None
    bound = loop.iter.args[0]
    if not ((isinstance(bound, ast.Attribute) and is_name(bound.value, "self"))
            or (isinstance(bound, ast.Constant) and type(bound.value) is int)):
        return None
    index = loop.target.id
    append = loop.body[0]
    if not (isinstance(append, ast.Expr) and isinstance(append.value, ast.Call)
            and isinstance(append.value.func, ast.Attribute)
            and append.value.func.attr == "append" and is_name(append.value.func.value, outputs.id)
            and len(append.value.args) == 1 and not append.value.keywords):
        return None
    value = append.value.args[0]
    # Every read of the names involved is where the proof expects it.
    expected: dict[str, list[ast.AST]] = {
        sizes.id: [sizes], chunks: [], outputs.id: [append.value.func.value, outputs],
        index: []}
    empty = next((s for s in body[:body.index(loop)] if isinstance(s, ast.Assign)
                  and len(s.targets) == 1 and is_name(s.targets[0], outputs.id)
                  and isinstance(s.value, ast.List) and not s.value.elts), None)
    if empty is None:
        return None
    for node in ast.walk(value):  # the index is an int: it may be read anywhere in it
        if isinstance(node, ast.Subscript) and is_name(node.value, chunks) and is_name(
                node.slice, index):
            expected[chunks].append(node.value)
        if is_name(node, index):
            expected[index].append(node)
    binders: dict[str, list[ast.AST]] = {
        sizes.id: [], chunks: [split.targets[0]], outputs.id: [empty.targets[0]],
        index: [loop.target]}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id in expected:
            if isinstance(node.ctx, ast.Load):
                if not any(node is n for n in expected[node.id]):
                    return None
            elif not any(node is n for n in binders[node.id]):
                return None
        if isinstance(node, ast.NamedExpr | ast.Lambda | ast.FunctionDef) and node is not function:
            return None
    if not expected[chunks] or _rowwise(value, chunks, index, context) is not True:
        return None
    if is_name(inputs, sizes.id) or any(
            is_name(n, inputs.id) for n in ast.walk(value)):
        return None
    return _Experts(function, split, cat, inputs, sizes, parameters.index(sizes.id), bound,
                    chunks, outputs)


def _split_of(statement: ast.stmt, context: KindContext) -> tuple[ast.Name, ast.Name] | None:
    """``L = x.split(sizes, dim=0)`` (``0`` positional, or no axis; ``torch.split(x, sizes,
    ...)`` too): ``(x, sizes)``."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return None
    call = statement.value
    if not isinstance(call, ast.Call) or any(k.arg != "dim" for k in call.keywords):
        return None
    args = list(call.args)
    if context.facts.imports.resolve(call.func) == "torch.split":
        if not args:
            return None
        inputs = args.pop(0)
    elif isinstance(call.func, ast.Attribute) and call.func.attr == "split":
        inputs = call.func.value
    else:
        return None
    axis = args[1:] + [k.value for k in call.keywords]
    if (len(args) not in (1, 2) or len(axis) > 1 or not all(
            isinstance(a, ast.Constant) and type(a.value) is int and a.value == 0 for a in axis)):
        return None
    if not (isinstance(inputs, ast.Name) and isinstance(args[0], ast.Name)):
        return None
    return inputs, args[0]


def _cat_of(statement: ast.stmt, context: KindContext) -> ast.Name | None:
    """``R = torch.cat(outputs, dim=0)`` (``0`` positional, or no axis): ``outputs``."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return None
    call = statement.value
    if not (isinstance(call, ast.Call) and context.facts.imports.resolve(call.func) in (
            "torch.cat", "torch.concat", "torch.concatenate")):
        return None
    axis = call.args[1:] + [k.value for k in call.keywords if k.arg in ("dim", "axis")]
    if (not call.args or len(call.args) + len(call.keywords) != 1 + len(axis)
            or len(axis) > 1 or not all(isinstance(a, ast.Constant) and type(a.value) is int
                                        and a.value == 0 for a in axis)):
        return None
    outputs = call.args[0]
    return outputs if isinstance(outputs, ast.Name) else None


_ROWS = "_eqrw_grouped_rows"


def _rowwise(value: ast.expr, chunks: str, index: str, context: KindContext) -> bool | None:
    """Whether ``value`` maps each row of ``chunks[index]`` on its own (``moe_dispatch``'s row-wise
    reading, with ``chunks[index]`` as the rows)."""

    class Replace(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            if is_name(node.value, chunks) and is_name(node.slice, index):
                return ast.copy_location(ast.Name(_ROWS, ast.Load()), node)
            return self.generic_visit(node)

    replaced = Replace().visit(copy.deepcopy(value))
    if any(is_name(n, chunks) for n in ast.walk(replaced)):
        return None
    rows = Rows(set(), context)
    rows.names.add(_ROWS)
    return rows.kind(replaced)
