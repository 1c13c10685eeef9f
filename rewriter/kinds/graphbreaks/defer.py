"""Side effects in traced code, deferred until after the graph with the same text.

``print``, ``logger.<method>`` (including Hugging Face's ``warning_once``),
``warnings.warn`` and ``sys.stdout/stderr.write`` become calls to small helpers
registered in ``torch._dynamo.config.reorderable_logging_functions``: Dynamo
emits them after the graph, in order, instead of breaking it. Messages are
passed as a format template plus values, never formatted inside the graph, and
tensor values are snapshotted at the call (``_eqrw_snap``), so a later in-place
change does not alter what is printed. Eagerly the helpers print at once.

A call is rewritten when no value it prints is proven to be something Dynamo cannot
reorder (None, a module, a function, a list), and its keyword arguments are the
simple ones (``sep``/``end`` as literals, ``stacklevel`` as a literal). Values of
unknown kind are formatted exactly as the original formats them; when one is not a
tensor, number or string at run time, Dynamo breaks the graph at the call, as it
did before the rewrite.
"""

from __future__ import annotations

import ast

from ...analysis.inference import NUMBER, SEQUENCE, TENSOR, UNKNOWN
from ...syntax.enums import Level
from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal

LOGGER_METHODS = frozenset(
    "debug info warning warn error critical fatal warning_once info_once".split())
LOGGER_FACTORIES = frozenset({"getLogger", "get_logger"})
WARNING_CATEGORIES = frozenset(
    "Warning UserWarning DeprecationWarning PendingDeprecationWarning FutureWarning "
    "RuntimeWarning SyntaxWarning ImportWarning UnicodeWarning BytesWarning "
    "ResourceWarning EncodingWarning".split())
_CONVERSIONS = {-1: "", 115: "!s", 114: "!r", 97: "!a"}


class Defer(Kind):
    name = "defer"
    node_types = (ast.Expr,)
    options_schema = {"call": ("print", "logger", "warnings", "stdio")}

    def tokens(self) -> frozenset[str]:
        return {"print": frozenset({"print"}), "logger": LOGGER_METHODS,
                "warnings": frozenset({"warn"}), "stdio": frozenset({"write"})}[
            self.options["call"]]

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Expr):  # node_types: only expression statements
            return None
        call = node.value
        if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        builder = _Template(context)
        maker = {"print": _print, "logger": _logger, "warnings": _warn,
                 "stdio": _write}[self.options["call"]]
        template = maker(call, context, builder)
        if template is None:
            return None
        helper = template.split("(", 1)[0]
        return Proposal(template, builder.bindings, Level.EXPRESSION,
                        frozenset({helper, "_eqrw_snap"}))


class _Template:
    """Builds a ``str.format`` template and the values it formats, as metavariables."""

    def __init__(self, context: KindContext):
        self.context = context
        self.bindings: Bindings = {}
        self.values: list[str] = []

    def value(self, node: ast.expr, message: bool = False) -> str | None:
        """Add one value; return its metavariable text, or None if it cannot be deferred.
        A ``message`` (warnings.warn's) is a string by contract: a sequence is taken as one
        (were it a list, Dynamo would break the graph at the call, as before)."""
        value_kind = self.context.value_kind(node)
        if value_kind not in (TENSOR, NUMBER, SEQUENCE, UNKNOWN):
            return None  # None, modules, functions: Dynamo could not reorder the call
        if value_kind == SEQUENCE and not message and not _is_text_or_shape(node):
            return None  # lists and dicts are not values Dynamo can reorder
        name = f"v{len(self.values)}"
        self.bindings[name] = node
        # A value of unknown kind is formatted exactly as the original would format it;
        # if it is a tensor, it is snapshotted like one (_eqrw_snap checks at run time),
        # and if Dynamo cannot reorder it, the call breaks the graph as the original did.
        text = f"_eqrw_snap(${name})" if value_kind in (TENSOR, UNKNOWN) else f"${name}"
        self.values.append(text)
        return text

    def formatted(self, part: ast.FormattedValue, spec: str) -> bool:
        """A list, tuple or dict inside an f-string, formatted where it stands
        (``format(value, spec)``, what the f-string does): the text is then a string
        Dynamo can pass on, provided the items are constants."""
        if self.context.value_kind(part.value) != SEQUENCE:
            return False
        name = f"v{len(self.values)}"
        self.bindings[name] = part.value
        value = {-1: f"${name}", 115: f"str(${name})", 114: f"repr(${name})",
                 97: f"ascii(${name})"}[part.conversion]
        self.values.append(f"format({value}, {spec[1:]!r})")
        return True

    def piece(self, node: ast.expr, str_conversion: bool) -> str | None:
        """Template text for one printed piece: a literal, an f-string or a value."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return _escape(node.value)
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            for part in node.values:
                if isinstance(part, ast.Constant):
                    parts.append(_escape(str(part.value)))  # an f-string's text: a str
                    continue
                if not isinstance(part, ast.FormattedValue):  # (no other part exists)
                    return None
                spec = _format_spec(part.format_spec)
                if spec is None:
                    return None
                if self.value(part.value) is not None:
                    parts.append("{" + _CONVERSIONS[part.conversion] + spec + "}")
                elif self.formatted(part, spec):
                    parts.append("{}")
                else:
                    return None
            return "".join(parts)
        if self.value(node) is None:
            return None
        return "{!s}" if str_conversion else "{}"

    def arguments(self) -> str:
        return "".join(", " + v for v in self.values)


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _format_spec(spec: ast.AST | None) -> str | None:
    if spec is None:
        return ""
    if isinstance(spec, ast.JoinedStr):
        texts = [v.value for v in spec.values
                 if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        if len(texts) == len(spec.values):
            return ":" + _escape("".join(texts))
    return None  # nested replacement fields: leave the call alone


def _is_text_or_shape(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant | ast.JoinedStr):
        return True
    return (isinstance(node, ast.Attribute) and node.attr == "shape") or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr == "size" and not node.args)


def _literal_keywords(call: ast.Call, allowed: set[str]) -> dict[str, object] | None:
    found: dict[str, object] = {}
    for keyword in call.keywords:
        if (keyword.arg is None or keyword.arg not in allowed
                or not isinstance(keyword.value, ast.Constant)):
            return None
        found[keyword.arg] = keyword.value.value
    return found


def _print(call: ast.Call, context: KindContext, builder: _Template) -> str | None:
    if not (isinstance(call.func, ast.Name) and call.func.id == "print"):
        return None
    keywords = _literal_keywords(call, {"sep", "end"})
    if keywords is None:
        return None
    sep, end = keywords.get("sep", " "), keywords.get("end", "\n")
    if not (isinstance(sep, str) and isinstance(end, str)):
        return None
    converted = [builder.piece(arg, str_conversion=True) for arg in call.args]
    pieces = [p for p in converted if p is not None]
    if len(pieces) != len(converted):
        return None
    template = _escape(sep).join(pieces)
    return f"_eqrw_print({template!r}, {end!r}{builder.arguments()})"


def _logger_name(context: KindContext, logger: ast.expr) -> str | None:
    """``__name__`` or a literal, when ``logger`` is a module-level getLogger(...) result."""
    if not isinstance(logger, ast.Name):
        return None
    for statement in context.facts.tree.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id == logger.id):
            continue
        value = statement.value
        if not (isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords):
            return None
        factory = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(
            value.func, "id", "")
        argument = value.args[0]
        if factory not in LOGGER_FACTORIES:
            return None
        if isinstance(argument, ast.Name) and argument.id == "__name__":
            return "__name__"
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            return repr(argument.value)
        return None
    return None


def _logger(call: ast.Call, context: KindContext, builder: _Template) -> str | None:
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in LOGGER_METHODS and call.args
            and not call.keywords):
        return None
    name = _logger_name(context, func.value)
    if name is None:
        return None
    message = builder.piece(call.args[0], str_conversion=False)
    if message is None or isinstance(call.args[0], ast.Name | ast.Attribute | ast.Call):
        return None  # the message must be a literal or an f-string
    count = len(builder.values)
    if any(builder.value(arg) is None for arg in call.args[1:]):
        return None
    return (f"_eqrw_log({name}, {func.attr!r}, {message!r}, {count}"
            f"{builder.arguments()})")


def _warn(call: ast.Call, context: KindContext, builder: _Template) -> str | None:
    if context.facts.imports.resolve(call.func) != "warnings.warn" or not call.args:
        return None
    if len(call.args) > 3 or any(k.arg != "stacklevel" for k in call.keywords):
        return None
    category = "UserWarning"
    if len(call.args) > 1:
        given = call.args[1]
        if not (isinstance(given, ast.Name) and given.id in WARNING_CATEGORIES):
            return None
        category = given.id
    given_level = call.args[2] if len(call.args) > 2 else next(
        (k.value for k in call.keywords), None)
    stacklevel = _stacklevel(given_level, context)
    if stacklevel is None:
        return None
    message_node = call.args[0]
    if isinstance(message_node, ast.Constant | ast.JoinedStr):
        message = builder.piece(message_node, str_conversion=False)
        if message is None:
            return None
        return f"_eqrw_warn({message!r}, {category!r}, {stacklevel}{builder.arguments()})"
    # A message computed at run time (``warning + message``, a name, a call): handed over
    # as it is, so that a Warning instance keeps its own category as in the original.
    if builder.value(message_node, message=True) is None:
        return None
    return f"_eqrw_warn(None, {category!r}, {stacklevel}{builder.arguments()})"


def _stacklevel(node: ast.expr | None, context: KindContext) -> str | None:
    """The template text of ``warnings.warn``'s stacklevel: an int literal (1 when not
    given), or a name the enclosing function binds (a parameter: reading it has no effect,
    and the message's evaluation cannot rebind it); else None."""
    if node is None:
        return "1"
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return str(node.value)
    function = context.function
    if (isinstance(node, ast.Name) and context.binders(node.id)
            and isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            and not _declared_outside(function, node.id)):
        return node.id
    return None


def _declared_outside(function: ast.AST, name: str) -> bool:
    """Whether ``function`` declares ``name`` global or nonlocal (a callee could rebind it)."""
    return any(isinstance(n, ast.Global | ast.Nonlocal) and name in n.names
               for n in ast.walk(function))


def _write(call: ast.Call, context: KindContext, builder: _Template) -> str | None:
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "write" and len(call.args) == 1
            and not call.keywords):
        return None
    stream = context.facts.imports.resolve(func.value)
    if stream not in ("sys.stdout", "sys.stderr"):
        return None
    if not isinstance(call.args[0], ast.Constant | ast.JoinedStr):
        return None
    text = builder.piece(call.args[0], str_conversion=False)
    if text is None:
        return None
    return f"_eqrw_write({stream.split('.')[1]!r}, {text!r}{builder.arguments()})"
