"""A light static inference of what kind of value an expression holds.

One concern: the kind of value an expression holds, inferred. Its parts serve only that:
the rules per node type (``Inference``), the per-scope environments that solve each name's
kind as the join of its bindings (``_Env``), and the walk that lists a scope's bindings
(``_bindings``).

Kinds: ``tensor``, ``number`` (Python int/float/bool/complex), ``sequence``
(str, list, tuple, dict, torch.Size...), ``none``, ``object`` (modules,
functions, dtypes...), ``tensor_callable`` (an nn layer that maps a tensor to a
tensor) and ``unknown``. Each function is analysed flow-insensitively: a local
name has the join of the kinds of everything assigned to it, so a name that is
sometimes a tensor and sometimes a list is ``unknown`` and no guard trusts it.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Literal, Protocol, TypeAlias

from ..syntax.enums import ValueKind
from ..syntax.nodes import names_read
from . import knowledge as K
from .facts import ModuleFacts
from .facts.definitions import Function

TENSOR, NUMBER, SEQUENCE = ValueKind.TENSOR, ValueKind.NUMBER, ValueKind.SEQUENCE
NONE, OBJECT = ValueKind.NONE, ValueKind.OBJECT
TENSOR_CALLABLE, UNKNOWN = ValueKind.TENSOR_CALLABLE, ValueKind.UNKNOWN
NOT_TENSOR = frozenset({NUMBER, SEQUENCE, NONE, OBJECT, TENSOR_CALLABLE})
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult,
               ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_MAX_ROUNDS = 20
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


# Which unannotated parameters (without a default) are taken as tensors: none, those of
# ``forward`` methods (True), or those of every function.
Assumption = bool | Literal["everywhere"]
# What a name may be bound to: an expression, an element of one (unpacking, iteration),
# or a kind fixed by the binding itself (``def``, ``import``, ``global``...).
BoundValue: TypeAlias = "ast.expr | ValueKind | _Element"


class Names(Protocol):
    """The kinds of a scope's names, as far as known (None: not yet known)."""

    def __contains__(self, name: str) -> bool: ...

    def __getitem__(self, name: str) -> ValueKind | None: ...


# ``Inference._value_kind_<NodeType>``: the kind of one type of node (the method named after
# the node's type is the one called, so its node parameter is that type).
_ValueKindOf = Callable[[ast.AST, tuple[ast.AST, ...], Names], "ValueKind | None"]


def join(a: ValueKind | None, b: ValueKind | None) -> ValueKind | None:
    """Least upper bound; None is "not yet known" (bottom)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    return UNKNOWN


class Inference:
    """Kinds of expressions in one module, with per-function environments cached."""

    def __init__(self, facts: ModuleFacts, assume_tensor_params: Assumption = False,
                 trust_scalar_annotations: bool = True):
        """``assume_tensor_params``: True treats unannotated ``forward`` parameters without a
        default as tensors; "everywhere" does so in every function (the graph-break kinds
        then check at run time that those parameters really are tensors).
        ``trust_scalar_annotations``: int/float/bool/complex annotations prove a number."""
        self.facts = facts
        self.assume_tensor_params = assume_tensor_params
        self.trust_scalar_annotations = trust_scalar_annotations
        self._envs: dict[ast.AST, _Env] = {}
        self._attributes: dict[ast.ClassDef, dict[str, ValueKind]] = {}
        self._value_kinds: dict[ast.AST, tuple[tuple[ast.AST, ...], ValueKind]] = {}
        # What the kinds derive from these kinds alone, by (question, node): the rules of
        # one kind (select's forms) ask the same question about the same node in turn.
        self.derived: dict[tuple[str, ast.AST], object] = {}

    def value_kind(self, expr: ast.AST, chain: tuple[ast.AST, ...]) -> ValueKind:
        """Kind of ``expr``, evaluated in the innermost function of ``chain``."""
        # Remembered: the rules sharing a pattern (`a + b` has two) ask about the same
        # operands, and each answer, once given, is final.
        known = self._value_kinds.get(expr)
        if known is not None and known[0] is chain:
            return known[1]
        value_kind = self._value_kind(expr, chain) or UNKNOWN
        self._value_kinds[expr] = (chain, value_kind)
        return value_kind

    # -- environments -------------------------------------------------------

    def _env(self, chain: tuple[ast.AST, ...]) -> _Env:
        scope = chain[-1] if chain else self.facts.tree
        env = self._envs.get(scope)
        if env is None:
            values: dict[str, list[BoundValue]] = {}
            walrus = self.facts.text.may_have_walrus if self.facts.text.has_walrus else None
            for name, value in _bindings(scope, walrus):
                values.setdefault(name, []).append(value)
            # Names written through `global`/`nonlocal` elsewhere can hold anything.
            shared = self.facts.scopes.global_names if scope is self.facts.tree else (
                self.facts.scopes.nonlocal_names)
            for name in shared:
                values.setdefault(name, []).append(UNKNOWN)
            initial = dict(self._parameters(scope, chain))
            for name in initial:
                values.setdefault(name, [])
            env = self._envs[scope] = _Env(self, chain, values, initial)
        return env

    def _parameters(self, scope: ast.AST,
                    chain: tuple[ast.AST, ...]) -> list[tuple[str, ValueKind]]:
        if not isinstance(scope, Function):
            return []
        args = scope.args
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
        defaults += args.defaults
        pairs = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
        is_method = self.facts.definitions.enclosing_class(scope) is not None
        assume = self.assume_tensor_params == "everywhere" or (
            self.assume_tensor_params and self.facts.classes.is_forward(scope))
        found: list[tuple[str, ValueKind]] = []
        for index, (arg, default) in enumerate(pairs):
            if index == 0 and is_method and arg.arg in ("self", "cls"):
                found.append((arg.arg, OBJECT))
            elif arg.annotation is not None:
                value_kind = self._annotation_kind(arg.annotation)
                found.append((arg.arg, value_kind if default is None or value_kind != TENSOR
                              or not _is_none(default) else UNKNOWN))
            elif assume and default is None:
                found.append((arg.arg, TENSOR))
            else:
                found.append((arg.arg, UNKNOWN))
        for rest in (args.vararg, args.kwarg):
            if rest is not None:
                found.append((rest.arg, SEQUENCE))
        return found

    def _annotation_kind(self, annotation: ast.expr) -> ValueKind:
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return UNKNOWN
        qualname = self.facts.imports.resolve(annotation)
        if qualname == "torch.Tensor" or (qualname or "").startswith("torch.nn.Parameter"):
            return TENSOR
        name = annotation.id if isinstance(annotation, ast.Name) else None
        if name in ("int", "float", "bool", "complex"):
            # Only a hint: nothing stops a caller from passing a tensor (see docs/writing-rules.md).
            return NUMBER if self.trust_scalar_annotations else UNKNOWN
        if name in ("str", "list", "tuple", "dict"):
            return SEQUENCE
        return UNKNOWN

    def _binding_kind(self, value: BoundValue, chain: tuple[ast.AST, ...],
                      env: Names) -> ValueKind | None:
        if isinstance(value, ValueKind):
            return value
        if isinstance(value, _Element):
            return self._element_kind(value, chain, env)
        return self._value_kind(value, chain, env)

    def _element_kind(self, element: _Element, chain: tuple[ast.AST, ...],
                      env: Names) -> ValueKind | None:
        source = element.source
        if element.iterated:
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Name):
                if source.func.id == "range":
                    return NUMBER
                if source.func.id == "enumerate" and source.args and element.index is not None:
                    if element.index == 0:
                        return NUMBER
                    inner = self._value_kind(source.args[0], chain, env)
                    return TENSOR if inner == TENSOR and element.index == 1 else UNKNOWN
            if element.index is None and self._is_tensor_sequence(source, chain, env):
                return TENSOR
            value_kind = self._value_kind(source, chain, env)
            return TENSOR if value_kind == TENSOR and element.index is None else (
                None if value_kind is None else UNKNOWN)
        if isinstance(source, ast.Tuple | ast.List) and element.index is not None:
            if len(source.elts) > element.index and not any(
                    isinstance(e, ast.Starred) for e in source.elts):
                return self._value_kind(source.elts[element.index], chain, env)
            return UNKNOWN
        if self._is_tensor_sequence(source, chain, env):
            return TENSOR
        value_kind = self._value_kind(source, chain, env)
        if value_kind == TENSOR:
            return TENSOR  # unpacking a tensor yields its rows
        if _is_shape(source):
            return NUMBER
        return None if value_kind is None else UNKNOWN

    def _is_tensor_sequence(self, node: ast.AST, chain: tuple[ast.AST, ...],
                            env: Names) -> bool:
        """``x.chunk(2)``, ``torch.split(x, 3)``...: a tuple whose items are all tensors."""
        if not isinstance(node, ast.Call):
            return False
        qualname = self.facts.imports.resolve(node.func) or ""
        if qualname.rpartition(".")[0] == "torch":
            return qualname.rpartition(".")[2] in K.TENSOR_SEQUENCE_FUNCTIONS
        return (isinstance(node.func, ast.Attribute)
                and node.func.attr in K.TENSOR_SEQUENCE_FUNCTIONS
                and self._value_kind(node.func.value, chain, env) == TENSOR)

    def _returns(self, function: ast.AST) -> ValueKind:
        """The kind a function's return annotation promises."""
        returns: ast.expr | None = getattr(function, "returns", None)
        return UNKNOWN if returns is None else self._annotation_kind(returns)

    # -- expressions --------------------------------------------------------

    def _value_kind(self, node: ast.AST, chain: tuple[ast.AST, ...],
                    env: Names | None = None) -> ValueKind | None:
        if env is None:
            env = self._env(chain)
        # One method per node type, named after it (``_value_kind_Call``); other nodes: unknown.
        method: _ValueKindOf | None = getattr(self, "_value_kind_" + type(node).__name__, None)
        return method(node, chain, env) if method else UNKNOWN

    def _value_kind_Constant(self, node: ast.Constant, chain: tuple[ast.AST, ...],
                             env: Names) -> ValueKind:
        value = node.value
        if isinstance(value, bool | int | float | complex):
            return NUMBER
        if isinstance(value, str | bytes):
            return SEQUENCE
        return NONE if value is None else OBJECT

    def _value_kind_JoinedStr(self, node: ast.expr, chain: tuple[ast.AST, ...],
                              env: Names) -> ValueKind:
        return SEQUENCE

    _value_kind_List = _value_kind_Tuple = _value_kind_JoinedStr
    _value_kind_Dict = _value_kind_Set = _value_kind_JoinedStr
    _value_kind_ListComp = _value_kind_SetComp = _value_kind_DictComp = _value_kind_JoinedStr

    def _value_kind_Lambda(self, node: ast.expr, chain: tuple[ast.AST, ...],
                           env: Names) -> ValueKind:
        return OBJECT

    _value_kind_GeneratorExp = _value_kind_Lambda

    def _value_kind_NamedExpr(self, node: ast.NamedExpr, chain: tuple[ast.AST, ...],
                              env: Names) -> ValueKind | None:
        return self._value_kind(node.value, chain, env)

    def lookup(self, name: str, chain: tuple[ast.AST, ...]) -> ValueKind | None:
        """Kind of the variable ``name`` as seen from ``chain``; None when nothing binds it."""
        for depth in range(len(chain), -1, -1):
            if depth < len(chain) and depth and isinstance(chain[depth - 1], ast.ClassDef):
                continue  # a class body's names are not visible in its methods
            env = self._env(chain[:depth])
            if name in env:
                return env[name] or UNKNOWN
        return None

    def _value_kind_Name(self, node: ast.Name, chain: tuple[ast.AST, ...],
                         env: Names) -> ValueKind | None:
        if node.id in env:
            return env[node.id]
        if chain and (outer := self.lookup(node.id, chain[:-1])) is not None:
            return outer
        if node.id in self.facts.imports.aliases:
            return NUMBER if self.facts.imports.resolve(node) == "math.pi" else OBJECT
        if node.id in self.facts.definitions.classes or (
                node.id in self.facts.definitions.functions):
            return OBJECT
        return OBJECT if node.id in K.PYTHON_BUILTINS else UNKNOWN

    def _value_kind_Attribute(self, node: ast.Attribute, chain: tuple[ast.AST, ...],
                              env: Names) -> ValueKind | None:
        qualname = self.facts.imports.resolve(node)
        if qualname is not None:
            return NUMBER if qualname in ("math.pi", "math.e", "math.inf", "torch.pi") else OBJECT
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            if node.attr == "training":
                return NUMBER
            return self._self_attribute(node.attr, chain)
        base = self._value_kind(node.value, chain, env)
        if base != TENSOR:
            return None if base is None else UNKNOWN
        if node.attr in K.TENSOR_ATTRIBUTES:
            return TENSOR
        if node.attr in K.NUMBER_ATTRIBUTES:
            return NUMBER
        if node.attr == "shape":
            return SEQUENCE
        return OBJECT if node.attr in K.OBJECT_ATTRIBUTES else UNKNOWN

    def _own_class(self, chain: tuple[ast.AST, ...]) -> ast.ClassDef | None:
        definitions = self.facts.definitions
        function = next((f for f in reversed(chain) if definitions.enclosing_class(f)), None)
        return definitions.enclosing_class(function) if function is not None else None

    def _own_method(self, name: str, chain: tuple[ast.AST, ...]) -> ast.AST | None:
        cls = self._own_class(chain)
        return self.facts.definitions.method(cls, name) if cls is not None else None

    def _self_attribute(self, attr: str, chain: tuple[ast.AST, ...]) -> ValueKind:
        cls = self._own_class(chain)
        if cls is None:
            return UNKNOWN
        if cls not in self._attributes:
            self._attributes[cls] = {}  # guards recursion
            value_kinds: dict[str, ValueKind | None] = {}
            for name, value, method in self.facts.classes.self_assignments(cls):
                value_kind = UNKNOWN if isinstance(value, ast.AugAssign) else self._value_kind(
                    value, (method,))
                value_kinds[name] = join(value_kinds.get(name), value_kind)
            self._attributes[cls] = {n: k or UNKNOWN for n, k in value_kinds.items()}
        return self._attributes[cls].get(attr, UNKNOWN)

    def _value_kind_Call(self, node: ast.Call, chain: tuple[ast.AST, ...],
                         env: Names) -> ValueKind | None:
        func = node.func
        qualname = self.facts.imports.resolve(func)
        if qualname is not None:
            return self._library_call(qualname, node, chain, env)
        if isinstance(func, ast.Name) and func.id not in env:
            functions = self.facts.definitions.functions
            if func.id == K.SELECT_HELPER and len(node.args) == 3 and not node.keywords:
                kinds = {self._value_kind(a, chain, env) for a in node.args[1:]}
                return TENSOR if kinds == {TENSOR} else (None if None in kinds else UNKNOWN)
            if func.id in functions and len(functions[func.id]) == 1:
                return self._returns(functions[func.id][0])
            if func.id in K.PYTHON_BUILTINS:
                return self._builtin_call(func.id, node, chain, env)
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id == "self" and (
                    method := self._own_method(func.attr, chain)) is not None:
                return self._returns(method)
            base = self._value_kind(func.value, chain, env)
            if base == TENSOR:
                return self._tensor_method(func.attr, node, chain, env)
            if base is None:
                return None
        callee = self._value_kind(func, chain, env)
        if callee == TENSOR_CALLABLE:
            return TENSOR
        return None if callee is None else UNKNOWN

    def _library_call(self, qualname: str, node: ast.Call, chain: tuple[ast.AST, ...],
                      env: Names) -> ValueKind | None:
        module, _, name = qualname.rpartition(".")
        if module == "torch":
            if name == "where":  # torch.where(condition) alone returns a tuple of indices
                return TENSOR if len(node.args) + len(node.keywords) == 3 else UNKNOWN
            if name in K.TUPLE_WITH_DIM:
                return self._maybe_tuple(node, 1, chain, env)
            if name in K.TORCH_TENSOR_FUNCTIONS:
                return TENSOR
            return NUMBER if name in K.TORCH_NUMBER_FUNCTIONS else UNKNOWN
        if name in K.POOLS_WITH_INDICES and module in ("torch.nn", "torch.nn.functional"):
            if any(k.arg == "return_indices" for k in node.keywords):
                return UNKNOWN
            return TENSOR_CALLABLE if module == "torch.nn" else TENSOR
        if module == "torch.nn.functional" and name in K.FUNCTIONAL_TENSOR_FUNCTIONS:
            return TENSOR
        if module == "torch.nn":
            if name == "Parameter":
                return TENSOR
            if name in K.TENSOR_LAYERS:
                return TENSOR_CALLABLE
            if name == "Sequential" and node.args and all(
                    self._value_kind(a, chain, env) == TENSOR_CALLABLE for a in node.args):
                return TENSOR_CALLABLE
        if module == "math":
            return NUMBER
        return UNKNOWN

    def _maybe_tuple(self, node: ast.Call, skip: int, chain: tuple[ast.AST, ...],
                     env: Names) -> ValueKind | None:
        # max(x) and max(x, other_tensor) are tensors; max(x, dim) is a tuple.
        extra = node.args[skip:] + [k.value for k in node.keywords]
        if not extra:
            return TENSOR
        if len(node.args) == skip + 1 and not node.keywords:
            other = self._value_kind(node.args[skip], chain, env)
            return TENSOR if other == TENSOR else (None if other is None else UNKNOWN)
        return UNKNOWN

    def _builtin_call(self, name: str, node: ast.Call, chain: tuple[ast.AST, ...],
                      env: Names) -> ValueKind | None:
        if name in K.BUILTINS_RETURNING_NUMBER:
            return NUMBER
        if name in K.BUILTINS_RETURNING_SEQUENCE:
            return SEQUENCE
        if name == "abs" and len(node.args) == 1:
            return self._value_kind(node.args[0], chain, env)
        return UNKNOWN

    def _tensor_method(self, name: str, node: ast.Call, chain: tuple[ast.AST, ...],
                       env: Names) -> ValueKind | None:
        if name in K.TUPLE_WITH_DIM:
            return self._maybe_tuple(node, 0, chain, env)
        if name in K.TENSOR_METHODS or (name.endswith("_") and not name.startswith("_")):
            return TENSOR
        if name in K.NUMBER_METHODS:
            return NUMBER
        if name in ("size", "stride"):
            return NUMBER if node.args else SEQUENCE
        return UNKNOWN

    def _value_kind_BinOp(self, node: ast.BinOp, chain: tuple[ast.AST, ...],
                          env: Names) -> ValueKind | None:
        left = self._value_kind(node.left, chain, env)
        right = self._value_kind(node.right, chain, env)
        if left is None or right is None:
            return None
        if isinstance(node.op, _ARITHMETIC):
            if _numeric_pair(left, right):
                return TENSOR
            if left == NUMBER and right == NUMBER:
                return NUMBER
        if left == SEQUENCE and isinstance(node.op, ast.Add | ast.Mult | ast.Mod):
            return SEQUENCE
        return UNKNOWN

    def _value_kind_UnaryOp(self, node: ast.UnaryOp, chain: tuple[ast.AST, ...],
                            env: Names) -> ValueKind | None:
        if isinstance(node.op, ast.Not):
            return NUMBER
        operand = self._value_kind(node.operand, chain, env)
        return operand if operand in (None, TENSOR, NUMBER) else UNKNOWN

    def _value_kind_Compare(self, node: ast.Compare, chain: tuple[ast.AST, ...],
                            env: Names) -> ValueKind | None:
        if not all(isinstance(op, _ORDERING) for op in node.ops):
            return NUMBER  # is, is not, in, not in
        if len(node.ops) > 1:
            return UNKNOWN
        left = self._value_kind(node.left, chain, env)
        right = self._value_kind(node.comparators[0], chain, env)
        if left is None or right is None:
            return None
        if _numeric_pair(left, right):
            return TENSOR  # (x == None is the Python bool False, hence both sides proven)
        return NUMBER if left == NUMBER and right == NUMBER else UNKNOWN

    def _value_kind_BoolOp(self, node: ast.BoolOp, chain: tuple[ast.AST, ...],
                           env: Names) -> ValueKind | None:
        value_kind: ValueKind | None = None
        for value in node.values:
            value_kind = join(value_kind, self._value_kind(value, chain, env))
        return value_kind

    def _value_kind_IfExp(self, node: ast.IfExp, chain: tuple[ast.AST, ...],
                          env: Names) -> ValueKind | None:
        return join(self._value_kind(node.body, chain, env),
                    self._value_kind(node.orelse, chain, env))

    def _value_kind_Subscript(self, node: ast.Subscript, chain: tuple[ast.AST, ...],
                              env: Names) -> ValueKind | None:
        if _is_shape(node.value):
            return SEQUENCE if isinstance(node.slice, ast.Slice) else NUMBER
        base = self._value_kind(node.value, chain, env)
        return TENSOR if base == TENSOR else (None if base is None else UNKNOWN)


class _Env:
    """The names one scope binds; each name's kind is solved the first time it is asked.

    A name's kind is the join of the kinds of everything assigned to it, which may
    depend on other names of the scope: a name is solved together with the names it
    depends on (and not yet solved) by iterating to a fixed point over their bindings
    only, which gives exactly what iterating over the whole scope would, at a fraction
    of the cost (most guards ask about one or two names of a long function).
    """

    def __init__(self, inference: Inference, chain: tuple[ast.AST, ...],
                 values: dict[str, list[BoundValue]], initial: dict[str, ValueKind]):
        # A weak reference: the inference holds its environments, and a cycle would keep
        # the whole module's tree alive until the garbage collector runs (it is paused
        # while a file is rewritten).
        self.inference, self.chain = weakref.ref(inference), chain
        self.values, self.initial = values, initial
        self.solved: dict[str, ValueKind] = {}
        self.busy = False

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def __getitem__(self, name: str) -> ValueKind:
        value_kind = self.solved.get(name)
        if value_kind is None:
            # Asked again while solving (through self attributes assigned in this very
            # function): nothing proven yet.
            value_kind = UNKNOWN if self.busy else self._solve(name)
        return value_kind

    def _solve(self, name: str) -> ValueKind:
        group, env = [name], {name: self.initial.get(name)}
        for member in group:
            for value in self.values[member]:
                for used in _names_in(value):
                    if used in env or used not in self.values:
                        continue
                    if used in self.solved:
                        env[used] = self.solved[used]
                    else:
                        env[used] = self.initial.get(used)
                        group.append(used)
        pairs = [(member, value) for member in group for value in self.values[member]]
        inference = self.inference()
        if inference is None:  # the inference owns this environment: it outlives it
            raise ReferenceError("an environment outlived its inference")
        kind_of = inference._binding_kind
        self.busy = True
        try:
            for _ in range(_MAX_ROUNDS):
                changed = False
                for member, value in pairs:
                    new = join(env[member], kind_of(value, self.chain, env))
                    if new != env[member]:
                        env[member], changed = new, True
                if not changed:
                    break
            else:
                env = dict.fromkeys(group, UNKNOWN)
        finally:
            self.busy = False
        for member in group:
            self.solved[member] = env[member] or UNKNOWN
        return self.solved[name]


def _names_in(value: BoundValue) -> Iterable[str]:
    """Names an assigned value reads (bindings of the same scope it may depend on)."""
    if isinstance(value, _Element):
        return names_read(value.source)
    return () if isinstance(value, ValueKind) else names_read(value)


class _Element:
    """One name bound by unpacking or iteration: ``a, b = source`` or ``for a in source``."""

    def __init__(self, source: ast.expr, index: int | None, iterated: bool):
        self.source, self.index, self.iterated = source, index, iterated


def _is_shape(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "shape") or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr == "size" and not node.args)


def _numeric_pair(left: ValueKind, right: ValueKind) -> bool:
    """A tensor with a tensor or a Python number: the operator is the tensor's."""
    return TENSOR in (left, right) and left in (TENSOR, NUMBER) and right in (TENSOR, NUMBER)


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _bindings(scope: ast.AST, walrus: Callable[[ast.stmt], bool] | None = lambda statement: True
              ) -> Iterator[tuple[str, BoundValue]]:
    """Yield ``(name, value)`` for every binding in ``scope``'s own body.

    ``value`` is an expression, an ``_Element`` or a fixed kind; nested functions,
    classes, lambdas and comprehensions are separate scopes and are not entered.
    Only statements are visited, and the expressions of those for which
    ``walrus(statement)`` says they may hold a ``:=`` (None: none may), which is what
    makes this cheap.
    """
    if isinstance(scope, _COMPREHENSIONS):
        for generator in scope.generators:
            yield from _targets(generator.target, generator.iter, iterated=True)
        return
    if isinstance(scope, ast.Lambda):
        yield from _walrus(scope.body)
        return
    stack = list(getattr(scope, "body", []))
    while stack:
        node = stack.pop()
        node_type = type(node)
        if walrus is None and node_type in _NO_BINDINGS:
            continue  # the commonest statements: they bind nothing and hold no block
        expressions = walrus is not None and walrus(node)
        if node_type in _DEFINITIONS:
            yield node.name, OBJECT
            if expressions:
                for decorator in node.decorator_list:
                    yield from _walrus(decorator)
            continue
        if node_type is ast.Assign:
            for target in node.targets:
                yield from _targets(target, node.value, iterated=False)
        elif node_type is ast.AnnAssign and type(node.target) is ast.Name:
            yield node.target.id, node.value if node.value is not None else UNKNOWN
        elif node_type is ast.AugAssign and type(node.target) is ast.Name:
            yield node.target.id, ast.BinOp(left=node.target, op=node.op, right=node.value)
        elif node_type is ast.For or node_type is ast.AsyncFor:
            yield from _targets(node.target, node.iter, iterated=True)
        elif node_type is ast.With or node_type is ast.AsyncWith:
            for item in node.items:
                if item.optional_vars is not None:
                    yield from _targets(item.optional_vars, None, iterated=False)
        elif node_type is ast.Import or node_type is ast.ImportFrom:
            for alias in node.names:
                yield (alias.asname or alias.name).split(".")[0], OBJECT
        elif node_type is ast.Global or node_type is ast.Nonlocal:
            for name in node.names:
                yield name, UNKNOWN
        elif node_type is ast.Match:
            for case in node.cases:
                yield from _pattern_names(case.pattern)
                stack += case.body
        for field in _STATEMENT_LISTS:
            stack += getattr(node, field, ())
        for handler in getattr(node, "handlers", ()):
            if handler.name:
                yield handler.name, OBJECT
            stack += handler.body
        if expressions:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    yield from _walrus(child)
                elif isinstance(child, ast.withitem | ast.match_case | ast.excepthandler):
                    for part in ast.iter_child_nodes(child):
                        if isinstance(part, ast.expr):
                            yield from _walrus(part)


_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_NO_BINDINGS = frozenset({ast.Expr, ast.Return, ast.Raise, ast.Assert, ast.Delete, ast.Pass,
                          ast.Break, ast.Continue})
_STATEMENT_LISTS = ("body", "orelse", "finalbody")


def _walrus(expression: ast.expr) -> Iterator[tuple[str, BoundValue]]:
    """``:=`` bindings in an expression (lambdas are their own scope; in comprehensions
    the name is bound in the enclosing function, to a value we do not follow)."""
    stack: list[ast.AST] = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, _COMPREHENSIONS):
            for inner in ast.walk(node):
                if isinstance(inner, ast.NamedExpr):
                    yield inner.target.id, UNKNOWN
            continue
        if isinstance(node, ast.NamedExpr):
            yield node.target.id, node.value
        stack.extend(ast.iter_child_nodes(node))


def _pattern_names(pattern: ast.pattern) -> Iterator[tuple[str, BoundValue]]:
    for node in ast.walk(pattern):
        if isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            yield node.name, UNKNOWN
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest, UNKNOWN


def _targets(target: ast.expr, value: ast.expr | None, iterated: bool,
             index: int | None = None) -> Iterator[tuple[str, BoundValue]]:
    if isinstance(target, ast.Name):
        if value is None:
            yield target.id, UNKNOWN
        elif index is None and not iterated:
            yield target.id, value
        else:
            yield target.id, _Element(value, index, iterated)
    elif isinstance(target, ast.Tuple | ast.List):
        for position, element in enumerate(target.elts):
            if index is not None or isinstance(element, ast.Starred):
                yield from _targets(element, None, iterated)  # nested unpacking: unknown
            else:
                yield from _targets(element, value, iterated, position)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value, None, iterated)
