"""Find the sites in traced code that match a known graph-break pattern (``catalogue.py``).

One walk over a module's ``ast``, keeping the chain of enclosing functions and classes as
the matcher does, so that scopes mean exactly what they mean for rules (``forward`` of
nn.Modules, compiled functions, or everywhere). Whether an operand holds a tensor comes
from the rewriter's inference at two levels:

- ``certain``: the inference the rules use proves it (annotations, torch calls, layers...);
- ``likely``: it is a tensor if unannotated ``forward`` parameters and parameters
  annotated ``Optional[Tensor]`` are taken as tensors, which is what a reader assumes.
  Rules leave these sites alone; the audit reports them and says which operand is not
  proven (``reasons.py``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..analysis.facts import ModuleFacts
from ..analysis.inference import TENSOR, UNKNOWN, Inference, Names
from ..syntax.enums import ValueKind
from ..syntax.pattern import dotted_name

LOGGER_METHODS = frozenset(
    "debug info warning warn error critical fatal exception log warning_once info_once".split())
_LOGGER_NAMES = frozenset({"logger", "log", "logging", "LOGGER", "_logger", "_LOGGER"})
_LOGGER_FACTORIES = frozenset({"getLogger", "get_logger"})
_SCALAR_BUILTINS = frozenset({"int", "float", "bool"})
_UNSUPPORTED_BUILTINS = frozenset({"open", "input", "breakpoint", "exec", "eval", "exit", "quit"})
_UNSUPPORTED_MODULES = ("time.", "os.", "subprocess.", "pdb.", "socket.", "shutil.")
_UNSUPPORTED_QUALNAMES = frozenset({"copy.deepcopy", "sys.exit", "pickle.dump", "pickle.load",
                                    "torch.save", "torch.load", "random.seed"})
_LOOKED_FOR = _SCALAR_BUILTINS | _UNSUPPORTED_BUILTINS | {"print"}
_NONZERO_FUNCTIONS = frozenset({"nonzero", "argwhere", "masked_select"})
_DYNAMIC_FUNCTIONS = frozenset({"unique", "unique_consecutive", "bincount"})
_SIZED_FACTORIES = frozenset({"arange", "zeros", "ones", "empty", "full", "randn", "rand",
                              "randint", "linspace", "eye"})
_BOOLEAN_METHODS = frozenset({
    "bool", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_not", "logical_and",
    "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge", "isclose", "isin"})
CERTAIN, LIKELY = "certain", "likely"
Chain = tuple[ast.AST, ...]  # enclosing functions and classes, outermost first
Position = tuple[int, int, int, int]  # line, column, end line, end column (ast's offsets)


def position(node: ast.stmt | ast.expr) -> Position:
    """Where ``node`` is; a parsed node always has its end (a built one may not: its start)."""
    end_line = node.end_lineno if node.end_lineno is not None else node.lineno
    end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
    return node.lineno, node.col_offset, end_line, end_col


@dataclass
class Site:
    """One place in traced code that matches a break pattern."""

    pattern: str
    node: ast.stmt | ast.expr       # an if/while statement or an expression
    chain: Chain
    confidence: str                 # certain | likely
    operands: tuple[ast.AST, ...] = field(default=())  # what had to be a tensor
    snippet: str = ""

    @property
    def function(self) -> str:
        """``Class.method`` / ``function`` / ``<module>`` holding the site."""
        names = [getattr(n, "name", "<lambda>") for n in self.chain
                 if not isinstance(n, ast.ListComp | ast.SetComp | ast.DictComp
                                   | ast.GeneratorExp)]
        return ".".join(names) or "<module>"


def _site_order(site: Site) -> tuple[int, int, int, int, str]:
    """Source order; an enclosing site before the sites inside it."""
    line, col, end_line, end_col = position(site.node)
    return line, col, -end_line, -end_col, site.pattern


class OptimisticInference(Inference):
    """The inference with a reader's assumptions: unannotated ``forward`` parameters and
    parameters annotated ``Optional[Tensor]`` / ``Tensor | None`` hold tensors."""

    def __init__(self, facts: ModuleFacts):
        super().__init__(facts, assume_tensor_params=True)

    def _library_call(self, qualname: str, node: ast.Call, chain: Chain,
                      env: Names) -> ValueKind | None:
        # torch functions that return a tensor for the usual arguments (the rules' table
        # leaves them out because some argument lists give tuples).
        if qualname in ("torch.nonzero", "torch.unique", "torch.unique_consecutive"):
            return TENSOR
        return super()._library_call(qualname, node, chain, env)

    def _parameters(self, scope: ast.AST,
                    chain: tuple[ast.AST, ...]) -> list[tuple[str, ValueKind]]:
        found = super()._parameters(scope, chain)
        annotations = _annotations(scope)
        return [(name, TENSOR if value_kind == UNKNOWN and _mentions_tensor(annotations.get(name))
                 else value_kind) for name, value_kind in found]


_PYTHON_PREDICATES = frozenset({"isinstance", "hasattr", "callable", "len", "getattr",
                                "is_torchdynamo_compiling", "is_compiling"})


def _python_test(test: ast.expr) -> bool:
    """Tests taken as Python values without inference: ``x is None``, ``k in d``,
    ``isinstance(...)``, constants, and bare flags (``use_cache``, ``self.training``): a
    tensor's truth is rarely tested bare (it raises for more than one element), and these
    tests are most of a model's."""
    if isinstance(test, ast.Constant | ast.Name | ast.Attribute):
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _python_test(test.operand)
    if isinstance(test, ast.BoolOp):
        return all(_python_test(v) for v in test.values)
    if isinstance(test, ast.Compare):
        sides = [test.left, *test.comparators]
        return (all(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in test.ops)
                or all(_python_value(s) for s in sides)
                or any(isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides))
    if isinstance(test, ast.Call):
        func = test.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name in _PYTHON_PREDICATES
    return False


_SIZE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "training", "is_cuda"})
_SIZE_METHODS = frozenset({"size", "dim", "numel", "ndimension", "nelement"})


def _python_value(node: ast.expr) -> bool:
    """Sizes, dtypes, literals and arithmetic on those: never a tensor."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Attribute):
        return node.attr in _SIZE_ATTRIBUTES
    if isinstance(node, ast.Subscript):
        return _python_value(node.value)
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
            node.func, "id", "")
        return name in _SIZE_METHODS or name in ("len", "int", "float")
    if isinstance(node, ast.BinOp):
        return _python_value(node.left) and _python_value(node.right)
    if isinstance(node, ast.UnaryOp):
        return _python_value(node.operand)
    return False


def _annotations(scope: ast.AST) -> dict[str, ast.expr]:
    args = getattr(scope, "args", None)
    if args is None:
        return {}
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    return {a.arg: a.annotation for a in every if a.annotation is not None}


def _mentions_tensor(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return "Tensor" in annotation.value
    return any((isinstance(n, ast.Name) and n.id == "Tensor")
               or (isinstance(n, ast.Attribute) and n.attr == "Tensor")
               for n in ast.walk(annotation))


# Fields that never hold a node worth visiting (names, operators, load/store contexts).
_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "kind",
                          "type_comment", "level", "module", "conversion", "simple",
                          "is_async", "names"})
_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}
_STATEMENT_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")
_VISITED = (ast.If, ast.IfExp, ast.While, ast.Call, ast.Subscript)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def children(node: ast.AST) -> list[ast.AST]:
    """The child nodes worth visiting, in reverse field order (to be popped in order);
    ``ast.iter_child_nodes`` without its generators, operators and contexts, which the
    audit never looks at. Several times as fast, and the walks are most of its time."""
    fields = _FIELDS.get(type(node))
    if fields is None:
        fields = _FIELDS[type(node)] = tuple(f for f in node._fields if f not in _LEAF_FIELDS)
    found: list[ast.AST] = []
    for name in reversed(fields):
        value = getattr(node, name, None)
        if isinstance(value, list):
            found += [item for item in reversed(value) if isinstance(item, ast.AST)]
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def statements(root: ast.AST) -> list[ast.AST]:
    """Every statement inside ``root`` (nested blocks and functions included), without
    entering expressions: where assignments live."""
    found: list[ast.AST] = []
    todo = [root]
    while todo:
        node = todo.pop()
        for name in _STATEMENT_FIELDS:
            block = getattr(node, name, None)
            if block:
                found += block
                todo += block
    return found


class Detector:
    """Finds the break sites of one parsed module within ``scope``."""

    def __init__(self, tree: ast.Module, text: str, scope: frozenset[str],
                 assume_tensor_params: bool = False,
                 function_scopes: dict[str, frozenset[str]] | None = None):
        self.tree, self.scope = tree, scope
        self.facts = ModuleFacts(tree, text, function_scopes)
        self.proven = Inference(self.facts, assume_tensor_params)
        self.optimistic = OptimisticInference(self.facts)
        self.sites: list[Site] = []
        self.loggers = self._module_loggers()
        self._assigned: dict[ast.AST, dict[str, list[ast.expr]]] = {}

    def run(self) -> list[Site]:
        """Every site, in source order."""
        # Outside traced code only functions matter; they hide in expressions only as a
        # lambda passed to torch.compile.
        self._lambdas = "compiled" in self.scope and any(
            isinstance(f, ast.Lambda) for f in self.facts.compiled.functions)
        work: list[tuple[ast.AST, tuple[ast.AST, ...], bool]] = [(self.tree, (), False)]
        while work:
            self._scan(*work.pop(), work)
        self.sites.sort(key=_site_order)
        return self.sites

    def _scan(self, root: ast.AST, chain: tuple[ast.AST, ...], traced: bool,
              work: list[tuple[ast.AST, tuple[ast.AST, ...], bool]]) -> None:
        """Visit what ``root`` holds up to the functions and classes nested in it, which
        go to ``work`` with their own chain (the enclosing scopes decide whether they are
        traced)."""
        todo = children(root)
        while todo:
            node = todo.pop()
            if traced:
                if isinstance(node, _VISITED):
                    self._visit(node, chain)
            elif isinstance(node, ast.expr) and not self._lambdas:
                continue
            if isinstance(node, _SCOPES):
                inner = chain + (node,)
                work.append((node, inner, not isinstance(node, ast.ClassDef)
                             and self.facts.scopes.in_scope(self.scope, inner)))
            else:
                todo += children(node)

    # -- operands -----------------------------------------------------------------------------

    def confidence(self, node: ast.AST, chain: tuple[ast.AST, ...]) -> str | None:
        """``certain`` / ``likely`` when ``node`` holds a tensor, else None."""
        value_kind = self.proven.value_kind(node, chain)
        if value_kind == TENSOR:
            return CERTAIN
        if value_kind != UNKNOWN:
            return None  # a definite other kind: assumptions about parameters cannot change it
        return LIKELY if self.optimistic.value_kind(node, chain) == TENSOR else None

    def _condition(self, test: ast.expr, chain: tuple[ast.AST, ...]) -> str | None:
        """Whether a truth-tested expression depends on a tensor's value."""
        if _python_test(test):
            return None
        if isinstance(test, ast.BoolOp):
            found = [self._condition(v, chain) for v in test.values]
            return CERTAIN if CERTAIN in found else LIKELY if LIKELY in found else None
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._condition(test.operand, chain)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(
                test.ops[0], ast.Lt | ast.LtE | ast.Gt | ast.GtE | ast.Eq | ast.NotEq):
            # A tensor compared with anything is a tensor, whatever the other side holds.
            sides = [self.confidence(s, chain) for s in (test.left, test.comparators[0])]
            return CERTAIN if CERTAIN in sides else LIKELY if LIKELY in sides else None
        return self.confidence(test, chain)

    def _boolean(self, node: ast.expr, chain: tuple[ast.AST, ...], depth: int = 0) -> bool:
        """A boolean tensor: a comparison, ``~``/``&``/``|`` of those, ``isnan()``..., or a
        local name assigned from one."""
        if isinstance(node, ast.Compare):
            return all(isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE | ast.Eq | ast.NotEq)
                       for op in node.ops)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return self._boolean(node.operand, chain, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr):
            return self._boolean(node.left, chain, depth) or self._boolean(node.right, chain,
                                                                          depth)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return node.func.attr in _BOOLEAN_METHODS
        if isinstance(node, ast.Name) and depth < 4 and chain:
            values = self._assignments(chain[-1]).get(node.id, [])
            return len(values) == 1 and self._boolean(values[0], chain, depth + 1)
        return False

    def _assignments(self, function: ast.AST) -> dict[str, list[ast.expr]]:
        """Values assigned to each plain name in ``function`` (indexed once per function)."""
        if function not in self._assigned:
            found: dict[str, list[ast.expr]] = {}
            for node in statements(function):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            found.setdefault(target.id, []).append(node.value)
            self._assigned[function] = found
        return self._assigned[function]

    # -- patterns -----------------------------------------------------------------------------

    def _add(self, pattern: str, node: ast.stmt | ast.expr, chain: Chain, confidence: str,
             operands: tuple[ast.AST, ...] = ()) -> None:
        self.sites.append(Site(pattern, node, chain, confidence, operands, snippet(node)))

    def _visit(self, node: ast.AST, chain: tuple[ast.AST, ...]) -> None:
        if isinstance(node, ast.If | ast.IfExp | ast.While):
            self._branch(node, chain)
        elif isinstance(node, ast.Call):
            self._call(node, chain)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            self._mask(node, chain)

    def _branch(self, node: ast.If | ast.IfExp | ast.While, chain: Chain) -> None:
        confidence = self._condition(node.test, chain)
        if confidence is None:
            return
        if isinstance(node, ast.While):
            pattern = "data-dependent-loop"
        elif isinstance(node, ast.If) and isinstance(node.body[0], ast.Raise):
            pattern = "validation-raise"
        else:
            pattern = "data-dependent-branch"
        self._add(pattern, node, chain, confidence, (node.test,))

    def _call(self, call: ast.Call, chain: Chain) -> None:
        for check in (self._io, self._scalar, self._shape, self._unsupported):
            if check(call, chain):
                return

    def _io(self, call: ast.Call, chain: Chain) -> bool:
        func, qualname = call.func, self.facts.imports.resolve(call.func) or ""
        if self._builtin(func, chain) == "print" or qualname in ("sys.stdout.write",
                                                                 "sys.stderr.write"):
            self._add("print", call, chain, CERTAIN)
        elif qualname == "warnings.warn":
            self._add("warnings", call, chain, CERTAIN)
        elif self._is_logger_call(call, qualname):
            self._add("logging", call, chain, CERTAIN)
        else:
            return False
        return True

    def _scalar(self, call: ast.Call, chain: Chain) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and not call.args and func.attr in (
                "item", "tolist", "numpy"):
            confidence = self.confidence(func.value, chain)
            if confidence is not None:
                pattern = "item" if func.attr == "item" else func.attr
                self._add(pattern, call, chain, confidence, (func.value,))
                return True
        if self._builtin(func, chain) in _SCALAR_BUILTINS and len(call.args) == 1:
            confidence = self.confidence(call.args[0], chain)
            if confidence is not None:
                self._add("item", call, chain, confidence, (call.args[0],))
                return True
        return False

    def _shape(self, call: ast.Call, chain: Chain) -> bool:
        name, receiver = self._torch_call(call, chain)
        if name is None:
            return False
        operands = (receiver,) if receiver is not None else tuple(call.args[:1])
        if name == "where" and len(call.args) + len(call.keywords) == 1:
            pattern = "nonzero"
        elif name in _NONZERO_FUNCTIONS:
            pattern = "nonzero"
        elif name in _DYNAMIC_FUNCTIONS:
            pattern = "dynamic-shape"
        elif name == "repeat_interleave" and self._tensor_argument(call, chain, 0 if receiver
                                                                   is not None else 1):
            pattern = "dynamic-shape"
        elif name in _SIZED_FACTORIES and receiver is None and any(
                self.proven.value_kind(a, chain) == TENSOR for a in call.args):
            self._add("dynamic-shape", call, chain, CERTAIN, operands)
            return True
        else:
            return False
        # Only now, for the few calls with a matching name: is the operand a tensor? (A
        # torch function's result is, whatever it was given.)
        confidence = CERTAIN if receiver is None else self.confidence(receiver, chain)
        if confidence is None:
            return False
        self._add(pattern, call, chain, confidence, operands)
        return True

    def _unsupported(self, call: ast.Call, chain: Chain) -> bool:
        qualname = self.facts.imports.resolve(call.func) or ""
        if (self._builtin(call.func, chain) in _UNSUPPORTED_BUILTINS
                or qualname in _UNSUPPORTED_QUALNAMES or qualname.startswith(
                    _UNSUPPORTED_MODULES)):
            self._add("unsupported-call", call, chain, CERTAIN)
            return True
        return False

    def _mask(self, node: ast.Subscript, chain: Chain) -> None:
        index = node.slice
        if (isinstance(index, ast.Tuple | ast.Slice) or not self._boolean(index, chain)
                or self.confidence(index, chain) is None):
            return
        confidence = self.confidence(node.value, chain)
        if confidence is not None:
            self._add("boolean-mask", node, chain, confidence, (node.value, index))

    # -- helpers ------------------------------------------------------------------------------

    def _builtin(self, func: ast.expr, chain: Chain) -> str | None:
        """The builtin a call's name refers to, among those the patterns look for (None when
        shadowed, not a plain name, or another name)."""
        if (not isinstance(func, ast.Name) or func.id not in _LOOKED_FOR
                or func.id in self.facts.imports.aliases):
            return None
        return func.id if self.proven.lookup(func.id, chain) is None else None

    def _torch_call(self, call: ast.Call, chain: Chain) -> tuple[str | None, ast.expr | None]:
        """``(name, receiver)`` of ``torch.name(...)`` (receiver None) or ``t.name(...)``."""
        qualname = self.facts.imports.resolve(call.func) or ""
        if qualname.startswith("torch.") and qualname.count(".") == 1:
            return qualname[6:], None
        if isinstance(call.func, ast.Attribute) and not qualname:
            return call.func.attr, call.func.value
        return None, None

    def _tensor_argument(self, call: ast.Call, chain: Chain, index: int) -> bool:
        if len(call.args) > index:
            return self.proven.value_kind(call.args[index], chain) == TENSOR
        return any(k.arg == "repeats" and self.proven.value_kind(k.value, chain) == TENSOR
                   for k in call.keywords)

    def _module_loggers(self) -> frozenset[str]:
        """Module-level names bound to ``getLogger(...)`` / ``get_logger(...)``."""
        found = set()
        for statement in self.tree.body:
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
                func = statement.value.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in _LOGGER_FACTORIES:
                    found |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
        return frozenset(found)

    def _is_logger_call(self, call: ast.Call, qualname: str) -> bool:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in LOGGER_METHODS):
            return False
        if qualname.startswith("logging."):
            return True
        owner = dotted_name(func.value) or ""
        return owner in self.loggers or owner.rpartition(".")[2] in _LOGGER_NAMES


def snippet(node: ast.AST) -> str:
    """The site's code, normalised (``ast.unparse``: formatting and comments dropped), so
    that ids survive reformatting. Compound statements are represented by their header."""
    if isinstance(node, ast.If | ast.While):
        keyword = "if" if isinstance(node, ast.If) else "while"
        text = f"{keyword} {ast.unparse(node.test)}:"
    else:
        text = ast.unparse(node)
    text = " ".join(text.split())
    return text if len(text) <= 240 else text[:237] + "..."

