"""``and``/``or`` chains that test a size before a flag: the flag tested first.

With ``capture_scalar_outputs`` and ``capture_dynamic_output_shape_ops``, sizes that come
from data are unbacked: Dynamo cannot tell whether ``q_length > 1`` holds and breaks the
graph where Python asks (``Could not guard on data-dependent expression u0 > 1``), although
the rest of the chain often decides it alone. transformers' SDPA integration computes::

    is_causal = q_length > 1 and attention_mask is None and is_causal

and Qwen2-VL, Qwen3-VL and GLM-4V call it per image, after ``torch.split`` by lengths read
from the image grid, with ``attention_mask=None, is_causal=False``: ``q_length`` is
unbacked, and the answer (False) never depended on it. The chain becomes::

    is_causal = attention_mask is None and is_causal is not False and q_length > 1 and is_causal

The ``None`` tests go first, then (for a chain ending in a plain name ``c``) ``c is not
False`` (``c is True`` for ``or``; a ``None`` test ending the chain is repeated there), then
the size tests, in their order, then ``c``: the last operand never moves (traced, a size test
returned as the chain's value would be a SymBool nobody asked, which SDPA refuses).

Proven first, else the chain is left alone. Every reordered operand is one of:

- a *static test*: ``name is None`` / ``name is not None`` (also against True or False),
  ``name`` a parameter of the enclosing function never deleted there (always bound);
- a *size test*: one comparison (``<``, ``<=``, ``>``, ``>=``, ``==``, ``!=``) of two *size
  integers*: int literals, or local names every binding of which is an assignment (one of
  them in a statement that precedes the chain in its own or an enclosing block, so the
  name is bound whenever the chain runs) of ``t.shape[k]``, ``t.size(k)``, ``t.dim()``,
  ``t.ndim``, ``t.numel()`` of a proven tensor ``t`` (``k`` an int literal), of ``+ - * //
  %`` over size integers, or an unpacking of ``t.shape`` / ``t.size()``;
- only as the last operand, a parameter name (never deleted), of any value.

Operands of any other form may come first and stay there, untouched (``p and <tail>`` is
``p and (<tail>)``: only the tail after the last of them is reordered). At least one size
test must come before a static test or before that last operand (else nothing moves), and a
chain already holding the up-front test of its last operand is not given another.

Why the value is the same, for every input. Each operand is pure and cannot raise (an
``is`` test of a bound name; a comparison of two Python ints), so evaluating it earlier or
not at all changes nothing but the chain's value, which is: the first falsy operand, or the
last. Every operand but the last evaluates to a ``bool`` (``is``, and comparisons of ints,
return True or False), so the value is ``False`` exactly when a ``bool`` operand is False,
whichever comes first (``False`` is one object), and otherwise the last operand: a
permutation of ``bool`` operands followed by the same last operand has the same value.
``c is not False`` before them adds one case: when ``c`` is ``False`` the new chain gives
``False`` at once, and the original gives ``False`` too (either an earlier ``bool`` operand
was False, or it reached ``c``, which is ``False``). Dually for ``or`` with ``True`` and
``c is True``. When every operand is a ``bool`` the last one may move like the others.

Traced, the static tests and ``c is not False`` are Python constants to Dynamo: when they
decide the chain, the size test is never asked, and no guard on an unbacked size is needed.
"""

from __future__ import annotations

import ast

from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal

_SIZE_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_SIZE_METHODS = frozenset({"size", "dim", "numel"})
_SIZE_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)
_STATIC, _SIZE = "static", "size"


class SizeTestsLast(Kind):
    name = "size_tests_last"
    node_types = (ast.BoolOp,)
    node_keys = ((ast.BoolOp, ast.And), (ast.BoolOp, ast.Or))

    def tokens(self) -> frozenset[str]:
        return frozenset({"and", "or"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.BoolOp) or not isinstance(
                context.function, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        *leading, last = node.values
        classes = [_classify(v, context) for v in leading]
        last_class = _classify(last, context)
        # Operands up to the last one of another form stay in front, untouched:
        # `p and q and <tail>` is `p and (q and <tail>)`, and only the tail is reordered.
        kept = max((i + 1 for i, c in enumerate(classes) if c is None), default=0)
        prefix, leading, classes = leading[:kept], leading[kept:], classes[kept:]
        if last_class is None and not (isinstance(last, ast.Name)
                                       and _always_bound(last.id, context)):
            return None
        # The last operand stays last (traced, a size test there would be returned as a
        # SymBool, never asked); a name or static test there is also tested up front.
        prefix_last = last_class != _SIZE and _SIZE in classes
        if prefix_last:  # already tested up front (a chain this kind wrote): not again
            test = ast.unparse(last) if last_class == _STATIC else (
                f"{ast.unparse(last)} is not False" if isinstance(node.op, ast.And)
                else f"{ast.unparse(last)} is True")
            first = classes.index(_SIZE)
            prefix_last = test not in {ast.unparse(v) for v in leading[:first]}
        first_size = classes.index(_SIZE) if _SIZE in classes else len(classes)
        if not (_STATIC in classes[first_size:] or prefix_last):
            return None
        bindings: Bindings = {}
        parts = [_bound(v, bindings) for v in prefix]
        parts += [_bound(v, bindings) for v, c in zip(leading, classes) if c == _STATIC]
        end = _bound(last, bindings)
        if prefix_last:
            parts.append(end if last_class == _STATIC else f"{end} is not False"
                         if isinstance(node.op, ast.And) else f"{end} is True")
        parts += [_bound(v, bindings) for v, c in zip(leading, classes) if c == _SIZE]
        parts.append(end)
        joiner = " and " if isinstance(node.op, ast.And) else " or "
        return Proposal(joiner.join(parts), bindings)

_OPERATORS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
              ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}


def _bound(node: ast.expr, bindings: Bindings) -> str:
    """Template text for one operand: a comparison of names and literals written out (its
    names bound), so that it needs no parentheses; anything else bound whole."""
    if (isinstance(node, ast.Compare) and len(node.ops) == 1
            and type(node.ops[0]) in _OPERATORS):
        sides = []
        for side in (node.left, node.comparators[0]):
            if isinstance(side, ast.Constant) and (
                    side.value is None or type(side.value) in (bool, int)):
                sides.append(repr(side.value))
            elif isinstance(side, ast.Name):
                sides.append(_bind(side, bindings))
            else:
                return _bind(node, bindings)
        return f"{sides[0]} {_OPERATORS[type(node.ops[0])]} {sides[1]}"
    return _bind(node, bindings)


def _bind(node: ast.expr, bindings: Bindings) -> str:
    name = f"v{len(bindings)}"
    bindings[name] = node
    return f"${name}"


def _classify(node: ast.expr, context: KindContext) -> str | None:
    """``_STATIC``, ``_SIZE`` or None (anything else: the chain is left alone)."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return None
    left, right, op = node.left, node.comparators[0], node.ops[0]
    if isinstance(op, ast.Is | ast.IsNot):
        if _is_singleton(left):
            left, right = right, left
        return _STATIC if (isinstance(left, ast.Name) and _always_bound(left.id, context)
                           and _is_singleton(right)) else None
    if isinstance(op, _SIZE_COMPARISONS) and all(
            _operand_size(side, context) for side in (left, right)):
        return _SIZE
    return None


def _is_singleton(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in (None, True, False) and (
        node.value is None or isinstance(node.value, bool))


def _always_bound(name: str, context: KindContext) -> bool:
    """A parameter of the enclosing function that it never deletes."""
    function = context.function
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
             *([arguments.vararg] if arguments.vararg else []),
             *([arguments.kwarg] if arguments.kwarg else [])]
    if name not in {a.arg for a in every}:
        return False
    return not any(isinstance(b, ast.Name) and isinstance(b.ctx, ast.Del)
                   or isinstance(b, ast.Global | ast.Nonlocal) for b in context.binders(name))


def _operand_size(node: ast.expr, context: KindContext) -> bool:
    """An int literal, or a local name bound only to size integers before the chain."""
    if _int_literal(node):
        return True
    return isinstance(node, ast.Name) and _size_name(node.id, context, set(), node)


def _int_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _size_name(name: str, context: KindContext, seen: set[str], use: ast.AST | None) -> bool:
    """Every binding of ``name`` in the function assigns a size integer; with ``use``, one
    of those assignments also precedes ``use``'s statement in an enclosing block."""
    if name in seen:
        return False
    seen.add(name)
    binders = context.binders(name)
    if not binders:
        return False
    parents = context.parents
    statements: list[ast.AST] = []
    for binder in binders:
        if not (isinstance(binder, ast.Name) and isinstance(binder.ctx, ast.Store)):
            return False
        parent = parents.get(binder)
        value = None
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
            if parent.targets[0] is binder:
                value = parent.value
        elif isinstance(parent, ast.Tuple) and isinstance(parent.ctx, ast.Store):
            statement = parents.get(parent)
            if (isinstance(statement, ast.Assign) and statement.targets == [parent]
                    and not any(isinstance(e, ast.Starred) for e in parent.elts)):
                if (isinstance(statement.value, ast.Tuple)
                        and len(statement.value.elts) == len(parent.elts)):
                    value = statement.value.elts[parent.elts.index(binder)]
                elif _shape_tuple(statement.value, context, statement):  # `b, n, _ = x.shape`
                    value = ast.Constant(0)
                parent = statement
        if value is None or parent is None or not _size_expression(
                value, context, seen, parent):
            return False
        statements.append(parent)
    return use is None or any(_precedes(s, use, parents) for s in statements)


def _size_expression(node: ast.expr, context: KindContext, seen: set[str],
                     statement: ast.AST) -> bool:
    """A size integer once evaluated: ``t.shape[k]``, ``t.size(k)``, ``t.dim()``,
    ``t.ndim``, ``t.numel()`` of a proven tensor, int literals, size names, and ``+ - * //
    %`` over those."""
    if _int_literal(node):
        return True
    if isinstance(node, ast.Name):
        return _size_name(node.id, context, seen, None)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _SIZE_OPERATORS):
        return (_size_expression(node.left, context, seen, statement)
                and _size_expression(node.right, context, seen, statement))
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape" and _int_literal_or_negated(node.slice)):
        return _tensor_at(node.value.value, statement, context)
    if isinstance(node, ast.Attribute) and node.attr == "ndim":
        return _tensor_at(node.value, statement, context)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SIZE_METHODS and not node.keywords):
        arguments_fit = (len(node.args) == 1 and _int_literal_or_negated(node.args[0])
                         if node.func.attr == "size" else not node.args)
        return arguments_fit and _tensor_at(node.func.value, statement, context)
    return False


def _tensor_at(node: ast.expr, statement: ast.AST, context: KindContext) -> bool:
    """``node`` is proven a tensor, or is a parameter annotated ``torch.Tensor`` (no None
    default) that ``statement``, one of the function's own top-level statements, reads
    before anything rebinds it (``q_length = query.shape[2]`` before ``query =
    pack_gqa(query, ...)``: the inference, flow-insensitive, joins both)."""
    if context.is_tensor(node):
        return True
    function = context.function
    if not (isinstance(node, ast.Name) and isinstance(function, ast.FunctionDef
                                                      | ast.AsyncFunctionDef)
            and statement in function.body):
        return False
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    pairs = [*zip(positional, [*defaults, *arguments.defaults]),
             *zip(arguments.kwonlyargs, arguments.kw_defaults)]
    for arg, default in pairs:
        if arg.arg == node.id:
            if (arg.annotation is None or context.facts.imports.resolve(arg.annotation)
                    != "torch.Tensor" or (isinstance(default, ast.Constant)
                                          and default.value is None)):
                return False
            end = getattr(statement, "end_lineno", None) or 0
            return all(binder is arg or getattr(binder, "lineno", 0) > end
                       for binder in context.binders(node.id))
    return False


def _shape_tuple(node: ast.expr, context: KindContext, statement: ast.AST) -> bool:
    """``t.shape``, ``t.shape[i:j]`` or ``t.size()`` of a proven tensor: a tuple of ints."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        node = node.value
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return _tensor_at(node.value, statement, context)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "size" and not node.args and not node.keywords
            and _tensor_at(node.func.value, statement, context))


def _int_literal_or_negated(node: ast.expr) -> bool:
    return _int_literal(node) or (isinstance(node, ast.UnaryOp)
                                  and isinstance(node.op, ast.USub)
                                  and _int_literal(node.operand))


def _precedes(statement: ast.AST, use: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """``statement`` comes before the statement holding ``use`` in the same block or in a
    block around it (so it ran whenever ``use`` runs)."""
    node: ast.AST | None = use
    while node is not None:
        parent = parents.get(node)
        if parent is None:
            return False
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and node in block:
                index = block.index(node)
                if statement in block[:index]:
                    return True
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return False
        node = parent
    return False
