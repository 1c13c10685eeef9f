"""Row-wise computations: which expressions and statements of a mixture-of-experts loop map
each routed row on its own.

Shared by the ``moe_dispatch`` and ``moe_grouped_split`` kinds (no kind here): a dense rewrite
runs every expert on every row, which gives the routed rows the same values only when each
row is computed by itself (gathers by the route, elementwise operators, ``@`` by a non-row
operand, last-axis ``chunk``/``split``/slices, smooth activations, linear layers, and calls of
the module's own experts and methods, taken to map each row on their own as MLP experts do).
``Rows`` classifies expressions, ``LoopStatements`` the statements of a dispatch loop.
"""

from __future__ import annotations

import ast

from ..analysis import knowledge as K
from . import KindContext

# Row-wise building blocks (see moe_dispatch.py's docstring). Methods of a row value:
_ROW_METHODS = frozenset({
    "float", "half", "bfloat16", "double", "to", "type_as", "contiguous", "clamp",
    "clamp_min", "clamp_max", "sigmoid", "relu", "tanh", "exp", "neg", "abs", "mul", "add",
    "sub", "square"})
_LAST_AXIS_METHODS = frozenset({"chunk", "split", "unbind", "softmax", "log_softmax"})
_SHAPE_METHODS = frozenset({"view", "reshape"})
# Functions of row values (their other operands must not be rows):
_ROW_FUNCTIONS = frozenset({
    "torch.nn.functional.linear", "torch.nn.functional.silu", "torch.nn.functional.gelu",
    "torch.nn.functional.relu", "torch.nn.functional.sigmoid", "torch.nn.functional.tanh",
    "torch.nn.functional.softplus", "torch.nn.functional.mish", "torch.nn.functional.elu",
    "torch.nn.functional.leaky_relu", "torch.nn.functional.glu", "torch.sigmoid",
    "torch.tanh", "torch.relu", "torch.matmul", "torch.mul", "torch.add", "torch.clamp"})
_METADATA = frozenset({"dtype", "device"})


class Rows:
    """Which expressions are rows (one per routed token, computed row by row)."""

    def __init__(self, route_names: set[str], context: KindContext):
        self.route_names = route_names
        self.aliases: dict[str, str] = {}  # token_list = token_idx
        self.names: set[str] = set()  # names holding rows
        self.callables: set[str] = set()  # names bound to the module's own experts
        self.context = context

    def canonical(self, name: str) -> str:
        return self.aliases.get(name, name)

    def kind(self, node: ast.expr) -> bool | None:
        """True: a row value; False: no row in it (and pure); None: neither."""
        if isinstance(node, ast.Name):
            if node.id in self.route_names:
                return None
            return node.id in self.names
        if isinstance(node, ast.Constant):
            return False
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.BinOp):
            left, right = self.kind(node.left), self.kind(node.right)
            if left is None or right is None or (isinstance(node.op, ast.MatMult) and right):
                return None
            return left or right
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand)
        if isinstance(node, ast.Tuple):
            kinds = [self.kind(e) for e in node.elts]
            return None if None in kinds else any(kinds)
        if isinstance(node, ast.Attribute):
            inner = self.kind(node.value)
            if inner is None or (inner and node.attr not in _METADATA):
                return None
            return False
        if isinstance(node, ast.Call):
            return self._call(node)
        return self._plain(node)

    def own_call(self, func: ast.expr) -> bool:
        """Whether a call of the module's own experts or methods (``func``) maps each row
        on its own: taken so here, as MLP experts do (``ProvenRows`` proves it instead)."""
        return True

    def _plain(self, node: ast.expr) -> bool | None:
        """An expression without rows: it must not read the route or any row, and be pure
        (the dense loop evaluates it for every expert, not only those hit)."""
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if names & (self.route_names | self.names) or not all(
                self.context.is_pure(call) or _parameter_method(call)
                for call in ast.walk(node) if isinstance(call, ast.Call)):
            return None
        return False

    def _subscript(self, node: ast.Subscript) -> bool | None:
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        routed = [p for p in parts if isinstance(p, ast.Name) and p.id in self.route_names]
        if routed:  # a gather: hidden[token], hidden[None, token], weights[token, slot, None]
            pairs = {self.canonical(r.id) for r in routed}
            if (self.kind(node.value) is not False or len(pairs) != len(routed)
                    or not all(_is_none(p) or (not isinstance(p, ast.Slice)
                                               and self.kind(p) is False)
                               for p in parts if p not in routed)):
                return None
            return True  # one value per routed (slot, token) pair, in the route's order
        value = self.kind(node.value)
        if value is None:
            return None
        if not value:
            return self._plain(node)
        # A row indexed on its last axes only: x[..., :k], x[:, 1::2]
        first = parts[0]
        whole = isinstance(first, ast.Slice) and first.lower is first.upper is first.step is None
        if len(parts) < 2 or not (whole or (isinstance(first, ast.Constant)
                                            and first.value is Ellipsis)):
            return None
        return True if all(self.kind(p) is False for p in parts
                           if not isinstance(p, ast.Slice)) else None

    def _call(self, node: ast.Call) -> bool | None:
        func = node.func
        arguments = [*node.args, *(k.value for k in node.keywords)]
        kinds = [self.kind(a) for a in arguments]
        if None in kinds:
            return None
        if isinstance(func, ast.Attribute):
            receiver = self.kind(func.value)
            if receiver is None:
                return None
            if receiver:
                return self._method(node, func.attr, kinds)
        if any(kinds[len(node.args):]):  # a row as a keyword argument
            return None
        qualname = self.context.facts.imports.resolve(func)
        if qualname in _ROW_FUNCTIONS:
            if any(kinds[1:]):
                return True if qualname in ("torch.mul", "torch.add") else None
            return bool(kinds and kinds[0])
        if qualname is None and own_callable(func, self.callables) and self.own_call(func):
            return any(kinds)
        if not any(kinds):
            return self._plain(node)
        return None

    def _method(self, node: ast.Call, method: str, kinds: list[bool | None]) -> bool | None:
        if any(kinds) and method not in ("mul", "add", "sub"):
            return None
        if method in _ROW_METHODS:
            return True
        if method in _LAST_AXIS_METHODS:
            dims = [k.value for k in node.keywords if k.arg == "dim"] + node.args[1:2]
            return True if len(dims) == 1 and is_minus_one(dims[0]) else None
        if method in _SHAPE_METHODS:
            return True if len(node.args) >= 2 and is_minus_one(node.args[0]) else None
        if method == "unsqueeze":
            return True if len(node.args) == 1 and is_minus_one(node.args[0]) else None
        return None


def _parameter_method(call: ast.Call) -> bool:
    """A pure tensor method of the module's own attribute (``self.w1.view(shape)``), which
    the inference cannot prove a tensor."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in K.TENSOR_METHODS - K.RANDOM):
        return False
    receiver = func.value
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    return is_name(receiver, "self") and isinstance(func.value, ast.Attribute)


def own_callable(func: ast.expr, callables: set[str]) -> bool:
    """``self.name``, ``self.experts[e]``, ``self[f"expert_{e}"]`` or a local name bound to
    one of those in the loop."""
    if isinstance(func, ast.Name):
        return func.id in callables
    if isinstance(func, ast.Subscript):
        func = func.value
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id == "self"


class LoopStatements:
    """Checks the statements of a dispatch loop, binding row names as it goes."""

    def __init__(self, loop: ast.For, route: ast.Assign, add: ast.Expr, rows: Rows):
        self.loop, self.route, self.add, self.rows = loop, route, add, rows

    def block(self, body: list[ast.stmt]) -> str | None:
        for statement in body:
            problem = self.statement(statement)
            if problem is not None:
                return problem
        return None

    def statement(self, node: ast.stmt) -> str | None:
        if node is self.route or node is self.add:
            return None
        if isinstance(node, ast.With):
            if len(node.items) != 1 or ast.unparse(node.items[0].context_expr) not in (
                    "torch.no_grad()", "torch.inference_mode()") or node.items[0].optional_vars:
                return "a `with` block other than `torch.no_grad()` in the loop"
            return self.block(node.body)
        if isinstance(node, ast.If):
            return self._if(node)
        if isinstance(node, ast.Assign | ast.AugAssign):
            return self._assign(node)
        return (f"a `{type(node).__name__.lower()}` statement in the loop (only assignments, "
                "tests and the dispatch itself)")

    def _assign(self, node: ast.Assign | ast.AugAssign) -> str | None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names: list[str] = []
        for target in targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            if not all(isinstance(e, ast.Name) for e in elements):
                return "an assignment to an attribute or an item in the loop"
            names += [e.id for e in elements]  # type: ignore[attr-defined]
        if set(names) & self.rows.route_names:
            return "the route's names are reassigned"
        value = node.value
        if (len(names) == 1 and isinstance(node, ast.Assign) and isinstance(value, ast.Name)
                and value.id in self.rows.route_names):
            self.rows.route_names.add(names[0])  # token_list = token_idx
            self.rows.aliases[names[0]] = self.rows.canonical(value.id)
            return None
        if isinstance(node, ast.AugAssign):
            value = ast.BinOp(ast.Name(names[0], ast.Load()), node.op, node.value)
        if isinstance(node, ast.Assign) and unwraps(value, self.loop):
            return None  # e = e[0], d = int(e.item()): an int, or a 0-d tensor eagerly
        if len(names) == 1 and own_callable(value, set()) and not isinstance(value, ast.Call):
            self.rows.callables.add(names[0])  # expert = self.experts[e]
            return None
        kind = self.rows.kind(value)
        if kind is None:
            return f"`{ast.unparse(node).splitlines()[0]}` is not row-wise"
        for name in names:
            (self.rows.names.add if kind else self.rows.names.discard)(name)
        return None

    def _if(self, node: ast.If) -> str | None:
        test = node.test
        empty = _token_count_test(test, self.rows.route_names)
        if empty is not None:
            # `if token.numel() == 0: continue` / `if token.numel() > 0: <block>`: densely
            # every token is selected, and an expert without routed tokens adds zeros.
            skips = len(node.body) == 1 and isinstance(node.body[0], ast.Continue)
            if node.orelse or (empty and not skips):
                return "a test of the token count does more than skip an empty expert"
            return None if empty else self.block(node.body)
        if self.rows.kind(test) is not False:
            return "a test in the loop reads the routed rows"
        for part in (node.body, node.orelse):
            if len(part) == 1 and isinstance(part[0], ast.Continue):
                continue
            problem = self.block(part)
            if problem is not None:
                return problem
        return None


def _token_count_test(test: ast.expr, route_names: set[str]) -> bool | None:
    """True for ``t.numel() == 0`` / ``t.shape[0] == 0`` (no routed token), False for
    ``> 0`` / ``!= 0`` (some), None for anything else."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq | ast.Gt | ast.NotEq)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == 0):
        return None
    left = test.left
    if isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and (
            left.func.attr == "numel" and not left.args):
        left = left.func.value
    elif (isinstance(left, ast.Subscript) and isinstance(left.value, ast.Attribute)
          and left.value.attr == "shape" and isinstance(left.slice, ast.Constant)
          and left.slice.value == 0):
        left = left.value.value
    else:
        return None
    if not (isinstance(left, ast.Name) and left.id in route_names):
        return None
    return isinstance(test.ops[0], ast.Eq)


def is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def unwraps(value: ast.expr, loop: ast.For) -> bool:
    """``e[0]``, ``e.item()``, ``int(e.item())`` or ``int(e)`` of the loop's target."""
    index = loop.target.id  # type: ignore[attr-defined]
    if isinstance(value, ast.Call) and is_name(value.func, "int") and len(value.args) == 1:
        value = value.args[0]
        if is_name(value, index):
            return True
    if isinstance(value, ast.Subscript):
        return is_name(value.value, index) and is_int(value.slice, 0)
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "item" and not value.args
            and is_name(value.func.value, index))


def is_int(node: ast.AST, value: int) -> bool:
    return (isinstance(node, ast.Constant) and type(node.value) is int
            and node.value == value)


def is_minus_one(node: ast.AST) -> bool:
    return (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant) and node.operand.value == 1)
