"""Why the graph-break rules leave a site alone, derived from what the inference can check.

The structural kinds (``rewriter/kinds/``) answer "no" without a reason. Until a kind
explains itself (``decline_reason``, see ``matcher.Decline``), the audit re-checks the
conditions each kind documents, in the same order, and names the first that fails: an
operand that is not proven to be a tensor, a branch with side effects, branches whose
shapes are likely to differ, a message that is not a literal... Each reason comes with a
remedy the user can act on.
"""

from __future__ import annotations

import ast

from ..analysis.guards import GuardContext, is_pure
from ..analysis.inference import NUMBER, SEQUENCE, TENSOR
from ..kinds.graphbreaks.select import (
    is_elementwise as _elementwise,  # the select kind's own test: the reason agrees with it
)
from .detect import LIKELY, Detector, Site, children

_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "numel"})
ANNOTATE = ("annotate it (`{name}: torch.Tensor`) or pass --assume-tensor-params")


class Reasons:
    """Derives the reason and remedy for the sites of one module."""

    def __init__(self, detector: Detector):
        self.detector = detector
        self._parents: dict[ast.AST, dict[ast.AST, ast.AST]] = {}

    def parent(self, node: ast.AST, chain: tuple[ast.AST, ...]) -> ast.AST | None:
        """The node's parent inside its innermost function (the module at top level)."""
        scope = chain[-1] if chain else self.detector.tree
        if scope not in self._parents:
            parents, todo = {}, [scope]
            while todo:
                holder = todo.pop()
                for child in children(holder):
                    parents[child] = holder
                    todo.append(child)
            self._parents[scope] = parents
        return self._parents[scope].get(node)

    def value_kind(self, node: ast.AST, site: Site) -> str:
        return self.detector.proven.value_kind(node, site.chain)

    def unproven(self, site: Site) -> tuple[str, str] | None:
        """For a ``likely`` site: which operand is not proven a tensor, and how to prove it."""
        if site.confidence != LIKELY:
            return None
        names = []
        for operand in site.operands:
            for node in ast.walk(operand):
                if (isinstance(node, ast.Name) and node.id not in names
                        and self.value_kind(node, site) != TENSOR
                        and self.detector.optimistic.value_kind(node, site.chain) == TENSOR):
                    names.append(node.id)
        name = names[0] if names else ast.unparse(site.operands[0])
        shown = ", ".join(f"`{n}`" for n in names) or f"`{name}`"
        annotation = _annotation_text(site, name)
        described = (f"annotated `{annotation}`, which may hold something else"
                     if annotation else "unannotated")
        return (f"operand {shown} is not proven to be a tensor ({described})",
                ANNOTATE.format(name=name))

    def derive(self, site: Site) -> tuple[str, str]:
        """(reason, remedy) for a site the pattern's rules declined."""
        derive = getattr(self, "_" + site.pattern.replace("-", "_"), None)
        found = derive(site) if derive is not None else None
        return found or ("the rule cannot prove the rewrite equivalent here",
                         "rewrite it by hand (see the advice)")

    # -- per pattern ------------------------------------------------------------------------

    def _data_dependent_branch(self, site: Site) -> tuple[str, str] | None:
        node = site.node
        if isinstance(node, ast.IfExp):
            return self._values([node.body, node.orelse], site)
        if not isinstance(node, ast.If | ast.While):
            return None  # the detector reports only if/while statements and conditionals
        body, orelse = node.body, node.orelse
        if len(body) > 1 or len(orelse) > 1:
            count = max(len(body), len(orelse))
            return (f"a branch has {count} statements; only one assignment, `return` or call "
                    "per branch is rewritten", "split the branch so that each side computes "
                    "one value, then select it with `torch.where`")
        first, other = body[0], orelse[0] if orelse else None
        control = next((s for s in (first, other) if isinstance(
            s, ast.Raise | ast.Continue | ast.Break | ast.Pass)), None)
        if control is not None:
            word = type(control).__name__.lower()
            return (f"a branch uses `{word}`: control flow cannot become a tensor select",
                    "restructure the code so that both branches compute a value")
        if isinstance(first, ast.Return) or isinstance(other, ast.Return):
            return self._returns(first, other, site)
        if isinstance(first, ast.Assign):
            return self._assigns(first, other, site)
        if isinstance(first, ast.Expr) and other is None:
            return (f"the branch only runs `{_short(first.value)}` for its effect: there is no "
                    "value to select", "move the effect out of the traced code, or make it "
                    "unconditional (the rules can then defer a print or log call)")
        return ("the branch is not a single assignment, `return` or call",
                "express both sides as values and select with `torch.where`")

    def _returns(self, first: ast.stmt, other: ast.stmt | None,
                 site: Site) -> tuple[str, str] | None:
        if not (isinstance(first, ast.Return) and isinstance(other, ast.Return)):
            return ("only one branch returns: the other falls through",
                    "add an `else: return ...` so that both sides return a tensor")
        values = [v for v in (first.value, other.value)
                  if v is not None and not (isinstance(v, ast.Constant) and v.value is None)]
        if len(values) < 2:
            return ("a branch returns None", "return a tensor on both sides")
        return self._values(values, site)

    def _assigns(self, first: ast.Assign, other: ast.stmt | None,
                 site: Site) -> tuple[str, str] | None:
        targets = [ast.unparse(t) for t in first.targets]
        if other is None:
            name = targets[0]
            return (f"else-less `if` assigns `{name}`, which is not bound to a tensor before "
                    "it", f"assign `{name}` before the `if` (or add an `else`)") if len(
                targets) == 1 else None
        if not isinstance(other, ast.Assign) or [ast.unparse(t) for t in other.targets] != (
                targets):
            other_text = (ast.unparse(other.targets[0]) if isinstance(other, ast.Assign)
                          else type(other).__name__)
            return (f"the branches assign different targets (`{targets[0]}` / "
                    f"`{other_text}`)", "assign the same name on both sides")
        return self._values([first.value, other.value], site)

    def _values(self, values: list[ast.expr], site: Site) -> tuple[str, str] | None:
        """Both branch values: tensors, free of side effects, of one shape, with operands
        torch.cond can take."""
        for value in values:
            value_kind = self.value_kind(value, site)
            if value_kind != TENSOR:
                return (f"branch value `{_short(value)}` is not proven to be a tensor "
                        f"(inferred {value_kind})", "make both sides tensors (annotate the "
                        "operands, or convert with `torch.as_tensor`)")
        context = GuardContext(self.detector.proven, site.chain)
        pure = all(is_pure(context, v) for v in values)
        if not pure and not all(_calls_layers_only(v, site, self) for v in values):
            return ("a branch has side effects (calls functions not known to be pure)",
                    "compute the branch's value before the `if`, or select with "
                    "`torch.where` by hand if both sides may run")
        if pure and not all(_elementwise(v) for v in values):
            return ("the branches' shapes are likely to differ (indexing, reductions or "
                    "reshapes in a branch)", "make both sides the same shape, or keep the "
                    "branch and accept the break")
        for value in values:
            for name in ast.walk(value):
                if isinstance(name, ast.Name) and self.value_kind(name, site) not in (
                        TENSOR, NUMBER, "object", "tensor_callable"):
                    return (f"a branch reads `{name.id}` (inferred {self.value_kind(name, site)}), "
                            "which torch.cond cannot take as an operand",
                            ANNOTATE.format(name=name.id))
        return None

    def _validation_raise(self, site: Site) -> tuple[str, str] | None:
        node = site.node
        if not isinstance(node, ast.If):
            return None  # the detector reports only `if` statements for this pattern
        if node.orelse or len(node.body) > 1:
            return ("the `if` has an `else` or more than one statement", "keep only the "
                    "`raise` under the `if`")
        raised = node.body[0]
        if not isinstance(raised, ast.Raise):
            return None
        if raised.exc is None:
            return ("a bare `raise` re-raises the exception being handled", "raise an "
                    "exception")
        return None

    def _print(self, site: Site) -> tuple[str, str] | None:
        call = site.node
        if not isinstance(call, ast.Call):
            return None
        if any(isinstance(a, ast.Starred) for a in call.args):
            return ("prints `*args`: the values are not known statically", "print named "
                    "values")
        for keyword in call.keywords:
            if keyword.arg not in ("sep", "end") or not _literal(keyword.value):
                return (f"keyword `{keyword.arg}=` is not rewritten (only literal `sep` and "
                        "`end`)", "drop the keyword or print outside the compiled code")
        return self._printed_values(call.args, site)

    def _printed_values(self, values: list[ast.expr], site: Site) -> tuple[str, str] | None:
        for value in values:
            parts = [v.value for v in value.values if isinstance(v, ast.FormattedValue)] \
                if isinstance(value, ast.JoinedStr) else [value]
            for part in parts:
                if isinstance(part, ast.Constant):
                    continue
                value_kind = self.value_kind(part, site)
                if value_kind not in (TENSOR, NUMBER, SEQUENCE):
                    return (f"printed value `{_short(part)}` is not proven to be a tensor, a "
                            f"number or a string (inferred {value_kind})",
                            "annotate it, or print a tensor or number derived from it")
        return None

    def _logging(self, site: Site) -> tuple[str, str] | None:
        call = site.node
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return None  # the detector reports only method calls on a logger
        owner = call.func.value
        if not isinstance(owner, ast.Name) or not self._module_logger(owner.id):
            return (f"`{_short(owner)}` is not a module-level `getLogger(...)` logger",
                    "log through `logger = logging.getLogger(__name__)` at module level")
        if call.keywords:
            return (f"keyword `{call.keywords[0].arg}=` is not rewritten", "drop it, or log "
                    "outside the compiled code")
        if not call.args or not isinstance(call.args[0], ast.Constant | ast.JoinedStr):
            return ("the message is not a literal or an f-string", "pass the message as a "
                    "literal (values as %-arguments)")
        return self._printed_values(call.args, site)

    def _warnings(self, site: Site) -> tuple[str, str] | None:
        call = site.node
        if not isinstance(call, ast.Call):
            return None
        if not call.args or isinstance(call.args[0], ast.Name | ast.Call | ast.Attribute):
            return ("the warning message is not a literal or an f-string",
                    "pass the message as a literal")
        if len(call.args) > 1 and not isinstance(call.args[1], ast.Name):
            return ("the warning category is computed", "name a builtin category")
        if any(k.arg != "stacklevel" or not _literal(k.value) for k in call.keywords):
            return ("only a literal `stacklevel=` keyword is rewritten", "drop other keywords")
        return None

    def _item(self, site: Site) -> tuple[str, str] | None:
        consumer = self._consumer(site.node, site)
        what = {ast.If: "an `if`", ast.While: "a `while`", ast.IfExp: "a conditional",
                ast.Compare: "a comparison", ast.Return: "the return value",
                ast.Subscript: "an index or slice", ast.Call: "a call"}
        for node_type, text in what.items():
            if isinstance(consumer, node_type):
                return (f"the Python number flows into {text}, not only into tensor "
                        "arithmetic", "keep the value a tensor in that code, or turn on "
                        "capture_scalar_outputs")
        return ("the Python number is used outside tensor arithmetic", "keep the value a "
                "tensor, or turn on capture_scalar_outputs")

    def _consumer(self, node: ast.AST, site: Site) -> ast.AST | None:
        """The first enclosing node that is not arithmetic, following a local name once."""
        parent = self.parent(node, site.chain)
        while isinstance(parent, ast.BinOp | ast.UnaryOp):
            parent = self.parent(parent, site.chain)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(
                parent.targets[0], ast.Name) and site.chain:
            name = parent.targets[0].id
            uses = [n for n in ast.walk(site.chain[-1]) if isinstance(n, ast.Name)
                    and n.id == name and isinstance(n.ctx, ast.Load)]
            return self._consumer(uses[0], site) if uses else parent
        return parent

    def _boolean_mask(self, site: Site) -> tuple[str, str] | None:
        parent = self.parent(site.node, site.chain)
        grand = self.parent(parent, site.chain) if parent is not None else None
        if not (isinstance(parent, ast.Attribute) and parent.attr in _REDUCTIONS
                and isinstance(grand, ast.Call)):
            return ("the selection escapes: it is not reduced right away (`.sum()`, "
                    "`.mean()`, `.max()`...), written back through the mask after "
                    "elementwise or proven row-wise code, or fed to a cross-entropy",
                    "reduce over the full tensor with `torch.where(mask, x, 0)`, or turn on "
                    "capture_dynamic_output_shape_ops")
        if grand.args or grand.keywords:
            return (f"`.{parent.attr}(...)` has arguments; only the whole reduction is "
                    "rewritten", "reduce with `torch.where(mask, x, 0)` by hand")
        return ("the mask does not have the selected tensor's shape, or is not proven "
                "boolean", "index with a comparison of the same tensor")

    def _nonzero(self, site: Site) -> tuple[str, str] | None:
        return ("the indices escape into code other than one reduction of a selection",
                "use a mask and `torch.where` instead of indices, or turn on "
                "capture_dynamic_output_shape_ops")

    def _module_logger(self, name: str) -> bool:
        return name in self.detector.loggers


def _annotation_text(site: Site, name: str) -> str:
    """The annotation of parameter ``name`` in the site's function, as written."""
    functions = [f for f in site.chain if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not functions:
        return ""
    args = functions[-1].args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if arg.arg == name and arg.annotation is not None:
            return ast.unparse(arg.annotation)
    return ""


def _calls_layers_only(value: ast.expr, site: Site, reasons: Reasons) -> bool:
    """Calls to layers (``self.proj(x)``) are fine in a ``torch.cond`` branch."""
    calls = [n for n in ast.walk(value) if isinstance(n, ast.Call)]
    context = GuardContext(reasons.detector.proven, site.chain)
    return all(reasons.value_kind(c.func, site) == "tensor_callable" or is_pure(context, c)
               for c in calls)


def _literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant)


def _short(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 60 else text[:57] + "..."
